//! The request log's retention: records older than `[serve] request_log_days` are deleted
//! when the gateway starts and every hour. Only the log: the holds and spend rows the budgets
//! count stay, so no retention can loosen a budget. Beside it, every second, requests whose
//! process died are recorded as lost, charged at their reservations.
//! Spec: R14.8, R14.18.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::ApiConfiguration;
use switchyard_core::limits::Clock;
use switchyard_core::store::{OpenStore, RequestLog, TaskStore};
use tokio_util::sync::CancellationToken;

/// How often a serving gateway prunes the request log.
const PRUNE_EVERY: Duration = Duration::from_secs(60 * 60);

/// The most records one delete removes, so the store is never held long.
const PRUNE_CHUNK: u64 = 10_000;

/// One day in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// How often a serving gateway looks for requests lost with their process.
const LOST_EVERY: Duration = Duration::from_secs(1);

/// The most lost requests one sweep records.
const LOST_CHUNK: u64 = 256;

/// The request log's retention.
#[derive(Clone)]
pub(crate) struct Retention {
    log: Arc<dyn RequestLog>,
    open: Arc<dyn OpenStore>,
    days: u64,
    clock: Clock,
}

impl Retention {
    /// The retention `config` sets for the request log in `store`.
    pub(crate) fn new(store: Arc<dyn TaskStore>, config: &ApiConfiguration) -> Self {
        let days = config.serve.request_log_days;
        Self {
            log: store.clone(),
            open: store,
            days: days.unwrap_or(switchyard_api::config::DEFAULT_REQUEST_LOG_DAYS),
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

    /// Deletes the records older than the retention now, chunk by chunk, and says how many.
    /// A store error is logged and ends this round; the next round tries again.
    pub(crate) async fn prune(&self) -> u64 {
        let days = i64::try_from(self.days).unwrap_or(i64::MAX);
        let before = (self.clock.now_ms()).saturating_sub(days.saturating_mul(DAY_MS));
        let mut pruned = 0;
        loop {
            match self.log.prune_requests(before, PRUNE_CHUNK).await {
                Ok(n) => {
                    pruned += n;
                    if n < PRUNE_CHUNK {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!("old request records could not be deleted: {e}");
                    break;
                }
            }
        }
        if pruned > 0 {
            tracing::info!(
                "deleted {pruned} request records older than {} days ([serve] request_log_days)",
                self.days
            );
        }
        pruned
    }

    /// Prunes the request log now and every [`PRUNE_EVERY`], and charges lost requests now
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Arc;

    use switchyard_api::ApiConfiguration;
    use switchyard_core::store::{RequestOutcome, RequestRecord, SqliteStore, TaskStore};

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
        assert_eq!(retention.prune().await, 1);
        let kept: Vec<String> = (store.recent_requests(0).await.unwrap())
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(kept, ["new"]);
        let spent = store.spend_between(0, i64::MAX).await.unwrap();
        assert!((spent - 1.0).abs() < 1e-9, "the spend rows stay: {spent}");
        assert_eq!(retention.prune().await, 0);
    }
}
