//! The logs' retention: request records older than `[serve] request_log_days` and audit rows
//! older than `[serve] audit_log_days` are deleted when the gateway starts and every hour. Only
//! the logs: the holds and spend rows the budgets count stay, so no retention can loosen a
//! budget. Beside it, every second, requests whose process died are recorded as lost, charged
//! at their reservations.
//! Spec: R14.6a, R14.8, R14.18.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::{ApiConfiguration, config};
use switchyard_core::limits::Clock;
use switchyard_core::store::{AuditStore, OpenStore, RequestLog, StoreFuture, TaskStore};
use tokio_util::sync::CancellationToken;

/// How often a serving gateway prunes the logs.
const PRUNE_EVERY: Duration = Duration::from_secs(60 * 60);

/// The most records one delete removes, so the store is never held long.
const PRUNE_CHUNK: u64 = 10_000;

/// One day in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// How often a serving gateway looks for requests lost with their process.
const LOST_EVERY: Duration = Duration::from_secs(1);

/// The most lost requests one sweep records.
const LOST_CHUNK: u64 = 256;

/// The logs' retention.
#[derive(Clone)]
pub(crate) struct Retention {
    log: Arc<dyn RequestLog>,
    audit: Arc<dyn AuditStore>,
    open: Arc<dyn OpenStore>,
    days: u64,
    audit_days: u64,
    clock: Clock,
}

impl Retention {
    /// The retention `config` sets for the logs in `store`.
    pub(crate) fn new(store: Arc<dyn TaskStore>, config: &ApiConfiguration) -> Self {
        let serve = &config.serve;
        Self {
            log: store.clone(),
            audit: store.clone(),
            open: store,
            days: (serve.request_log_days).unwrap_or(config::DEFAULT_REQUEST_LOG_DAYS),
            audit_days: (serve.audit_log_days).unwrap_or(config::DEFAULT_AUDIT_LOG_DAYS),
            clock: Clock::system(),
        }
    }

    /// Records the requests lost with their process by now, chunk by chunk; says how many.
    pub(crate) async fn charge_lost(&self) -> u64 {
        let mut charged = 0;
        loop {
            match self.open.charge_lost(self.clock.now_ms(), LOST_CHUNK).await {
                Ok(n) => {
                    charged += n;
                    if n < LOST_CHUNK {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!("requests lost with their process could not be charged: {e}");
                    break;
                }
            }
        }
        match charged {
            0 => {}
            1 => tracing::warn!(
                "1 request whose gateway process stopped was recorded as lost, charged at its reservation"
            ),
            n => tracing::warn!(
                "{n} requests whose gateway process stopped were recorded as lost, charged at their reservations"
            ),
        }
        charged
    }

    /// Deletes the request records and audit rows older than their retentions now, and says
    /// how many of each.
    pub(crate) async fn prune(&self) -> (u64, u64) {
        let requests = self.before(self.days);
        let requests = prune_chunks(|n| self.log.prune_requests(requests, n)).await;
        let audit = self.before(self.audit_days);
        let audit = prune_chunks(|n| self.audit.prune_audit(audit, n)).await;
        if requests > 0 {
            tracing::info!(
                "deleted {requests} request records older than {} days ([serve] request_log_days)",
                self.days
            );
        }
        if audit > 0 {
            tracing::info!(
                "deleted {audit} audit rows older than {} days ([serve] audit_log_days)",
                self.audit_days
            );
        }
        (requests, audit)
    }

    /// Unix ms `days` days ago.
    fn before(&self, days: u64) -> i64 {
        let days = i64::try_from(days).unwrap_or(i64::MAX);
        (self.clock.now_ms()).saturating_sub(days.saturating_mul(DAY_MS))
    }

    /// Prunes the logs now and every [`PRUNE_EVERY`], and charges lost requests now
    /// and every [`LOST_EVERY`], until `stop` is cancelled.
    pub(crate) async fn keep(self, stop: CancellationToken) {
        let prune = async {
            loop {
                self.prune().await;
                tokio::time::sleep(PRUNE_EVERY).await;
            }
        };
        let lost = async {
            loop {
                self.charge_lost().await;
                tokio::time::sleep(LOST_EVERY).await;
            }
        };
        tokio::select! {
            () = stop.cancelled() => {}
            () = prune => {}
            () = lost => {}
        }
    }
}

/// Runs `prune` with [`PRUNE_CHUNK`] until a round deletes less, and says how many rows went.
/// A store error is logged and ends this round; the next round tries again.
async fn prune_chunks<'a>(prune: impl Fn(u64) -> StoreFuture<'a, u64>) -> u64 {
    let mut pruned = 0;
    loop {
        match prune(PRUNE_CHUNK).await {
            Ok(n) => {
                pruned += n;
                if n < PRUNE_CHUNK {
                    return pruned;
                }
            }
            Err(e) => {
                tracing::warn!("old log rows could not be deleted: {e}");
                return pruned;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Arc;

    use switchyard_api::ApiConfiguration;
    use switchyard_core::store::{
        Actor, AuditEntry, RequestOutcome, RequestRecord, SqliteStore, TaskStore,
    };

    use super::*;

    fn record(id: &str, started_ms: i64) -> RequestRecord {
        RequestRecord {
            id: id.into(),
            started_ms,
            route: "gpt-4.1".into(),
            dialect: "chat_completions".into(),
            stream: false,
            provider: None,
            model: None,
            input_tokens: 0,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cost_usd: Some(0.5),
            first_token_ms: None,
            duration_ms: 1,
            outcome: RequestOutcome::Ok,
            key_id: None,
            team: None,
        }
    }

    #[tokio::test]
    async fn records_past_the_retention_are_deleted_and_their_spend_stays() {
        let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::in_memory().unwrap());
        let config =
            ApiConfiguration::from_toml("[serve]\nrequest_log_days = 2\n", "c.toml", |_| None)
                .unwrap();
        let retention = Retention::new(store.clone(), &config);
        let now = retention.clock.now_ms();
        store
            .record_request(&record("old", now - 3 * DAY_MS))
            .await
            .unwrap();
        store
            .record_request(&record("new", now - DAY_MS))
            .await
            .unwrap();
        assert_eq!(retention.prune().await, (1, 0));
        let kept: Vec<String> = (store.recent_requests(0).await.unwrap())
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(kept, ["new"]);
        let spent = store.spend_between(0, i64::MAX).await.unwrap();
        assert!((spent - 1.0).abs() < 1e-9, "the spend rows stay: {spent}");
        assert_eq!(retention.prune().await, (0, 0));
    }

    #[tokio::test]
    async fn audit_rows_past_their_retention_are_deleted_and_the_rest_stay() {
        let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::in_memory().unwrap());
        let config =
            ApiConfiguration::from_toml("[serve]\naudit_log_days = 30\n", "c.toml", |_| None)
                .unwrap();
        let retention = Retention::new(store.clone(), &config);
        let now = retention.clock.now_ms();
        let by = Actor {
            who: "alice".into(),
            origin: "cli@host".into(),
        };
        for (days, target) in [(31, "old"), (29, "new")] {
            let entry =
                AuditEntry::new(&by, now - days * DAY_MS, "signin", target.into(), "".into());
            store.append_audit(&entry).await.unwrap();
        }
        assert_eq!(retention.prune().await, (0, 1));
        let kept: Vec<String> = (store.audit_log(0, 10).await.unwrap())
            .into_iter()
            .map(|e| e.target)
            .collect();
        assert_eq!(kept, ["new"]);
    }

    #[test]
    fn the_audit_log_is_kept_longer_than_the_request_log_by_default() {
        let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::in_memory().unwrap());
        let retention = Retention::new(store, &ApiConfiguration::default());
        assert_eq!((retention.days, retention.audit_days), (90, 400));
    }
}
