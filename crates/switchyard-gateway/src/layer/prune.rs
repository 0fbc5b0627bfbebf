//! The request log's retention (SPEC R14.8): a serving gateway deletes the request records
//! older than `[serve] request_log_days` (default 90) when it starts and every hour, at most
//! [`PRUNE_CHUNK`] rows per statement so the store is never held long. Only the log: the
//! budget holds and `spend` rows that budgets and the daily cap count stay, so no retention
//! can loosen a budget, whatever its window.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::state::Layer;

/// How often a serving gateway prunes the request log.
pub(crate) const PRUNE_EVERY: Duration = Duration::from_secs(60 * 60);

/// The most records one delete removes.
const PRUNE_CHUNK: u64 = 10_000;

/// One day in milliseconds.
const DAY_MS: i64 = 86_400_000;

impl Layer {
    /// Deletes the records older than the retention now, chunk by chunk: how many (a store
    /// error is logged and ends this round; the next round tries again).
    pub(crate) async fn prune_request_log(&self) -> u64 {
        let days = i64::try_from(self.request_log_days).unwrap_or(i64::MAX);
        let before = (self.clock.now_ms()).saturating_sub(days.saturating_mul(DAY_MS));
        let mut pruned = 0;
        loop {
            match self.store.prune_requests(before, PRUNE_CHUNK).await {
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
                self.request_log_days
            );
        }
        pruned
    }

    /// Prunes the request log now and every [`PRUNE_EVERY`] until `stop` is cancelled.
    pub(crate) async fn keep_request_log(self, stop: CancellationToken) {
        loop {
            self.prune_request_log().await;
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
        let layer = Layer::new(Arc::clone(&store), &config, 1024);
        let now = layer.clock.now_ms();
        store
            .record_request(&record("old", now - 3 * DAY_MS))
            .await
            .unwrap();
        store
            .record_request(&record("new", now - DAY_MS))
            .await
            .unwrap();
        assert_eq!(layer.prune_request_log().await, 1);
        let kept: Vec<String> = (store.recent_requests(0).await.unwrap())
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(kept, ["new"]);
        let spent = store.spend_between(0, i64::MAX).await.unwrap();
        assert!((spent - 1.0).abs() < 1e-9, "the spend rows stay: {spent}");
        assert_eq!(layer.prune_request_log().await, 0);
    }
}
