//! The request log's retention: records older than `[serve] request_log_days` are deleted
//! when the gateway starts and every hour. Only the log: the holds and spend rows the budgets
//! count stay, so no retention can loosen a budget.
//! Spec: R14.8.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::ApiConfiguration;
use switchyard_core::limits::Clock;
use switchyard_core::store::RequestLog;
use tokio_util::sync::CancellationToken;

/// How often a serving gateway prunes the request log.
const PRUNE_EVERY: Duration = Duration::from_secs(60 * 60);

/// The most records one delete removes, so the store is never held long.
const PRUNE_CHUNK: u64 = 10_000;

/// One day in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// The request log's retention.
#[derive(Clone)]
pub(crate) struct Retention {
    log: Arc<dyn RequestLog>,
    days: u64,
    clock: Clock,
}

impl Retention {
    /// The retention `config` sets for the request log in `log`.
    pub(crate) fn new(log: Arc<dyn RequestLog>, config: &ApiConfiguration) -> Self {
        let days = config.serve.request_log_days;
        Self {
            log,
            days: days.unwrap_or(switchyard_api::config::DEFAULT_REQUEST_LOG_DAYS),
            clock: Clock::system(),
        }
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

    /// Prunes the request log now and every [`PRUNE_EVERY`] until `stop` is cancelled.
    pub(crate) async fn keep(self, stop: CancellationToken) {
        loop {
            self.prune().await;
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(PRUNE_EVERY) => {}
            }
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
