//! The request log's writes still running (SPEC R14.9, R14.7): each record is written in a
//! task of its own, off the answer's path, and a gateway that stops waits for them (up to its
//! drain deadline) so that a request answered before SIGTERM is recorded — its spend logged
//! and its budget hold settled — rather than lost with the process.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Counts the record writes in flight; clones share the count.
#[derive(Clone, Default)]
pub(crate) struct Writes {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    running: AtomicUsize,
    idle: Notify,
}

impl Writes {
    /// Runs `write` in a task of its own on the current runtime, counted until it ends.
    pub(crate) fn spawn(
        &self,
        runtime: &tokio::runtime::Handle,
        write: impl Future<Output = ()> + Send + 'static,
    ) {
        self.inner.running.fetch_add(1, Ordering::AcqRel);
        let inner = Arc::clone(&self.inner);
        runtime.spawn(async move {
            write.await;
            if inner.running.fetch_sub(1, Ordering::AcqRel) == 1 {
                inner.idle.notify_waiters();
            }
        });
    }

    /// Waits until no write runs, at most `wait`; `false` when some still ran then.
    pub(crate) async fn settled(&self, wait: Duration) -> bool {
        let idle = async {
            loop {
                let notified = self.inner.idle.notified();
                if self.inner.running.load(Ordering::Acquire) == 0 {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(wait, idle).await.is_ok()
    }

    /// How many writes run now.
    pub(crate) fn running(&self) -> usize {
        self.inner.running.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_stop_waits_for_the_writes_running_and_no_longer_than_asked() {
        let writes = Writes::default();
        let runtime = tokio::runtime::Handle::current();
        writes.spawn(&runtime, tokio::time::sleep(Duration::from_secs(2)));
        writes.spawn(&runtime, tokio::time::sleep(Duration::from_secs(5)));
        assert_eq!(writes.running(), 2);
        assert!(
            !writes.settled(Duration::from_secs(3)).await,
            "one write still runs"
        );
        assert_eq!(writes.running(), 1);
        assert!(writes.settled(Duration::from_secs(3)).await);
        assert_eq!(writes.running(), 0);
        assert!(writes.settled(Duration::ZERO).await, "nothing to wait for");
    }
}
