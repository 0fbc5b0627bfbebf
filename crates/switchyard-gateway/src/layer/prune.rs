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
