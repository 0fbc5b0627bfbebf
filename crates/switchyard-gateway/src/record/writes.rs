//! The request log's one writer per gateway: records written in batches off the answer's
//! path, one transaction per batch, each batch's holds settled in it.
//! Spec: R14.8, R14.7, R14.9.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use switchyard_core::store::{RequestLog, RequestRecord};
use tokio::sync::{Notify, mpsc};

pub(crate) const BATCH_MAX: usize = 256;

/// The most records waiting for the writer; one that finds the queue full is written alone.
const QUEUE_MAX: usize = 8192;

/// The request log's writer and the count of records not yet written. A stopping gateway
/// waits for that count, so a request answered before SIGTERM keeps its record and spend.
#[derive(Clone)]
pub(crate) struct Writes {
    store: Arc<dyn RequestLog>,
    count: Arc<Count>,
    /// The writer's queue, started on the first record's runtime.
    queue: Arc<OnceLock<mpsc::Sender<RequestRecord>>>,
}

/// Records queued or being written, and a wake-up for whoever waits for none.
#[derive(Default)]
struct Count {
    running: AtomicUsize,
    idle: Notify,
    batches: AtomicUsize,
}

impl Count {
    fn add(&self, n: usize) {
        self.running.fetch_add(n, Ordering::AcqRel);
    }

    fn done(&self, n: usize) {
        if self.running.fetch_sub(n, Ordering::AcqRel) == n {
            self.idle.notify_waiters();
        }
    }
}

impl Writes {
    pub(crate) fn new(store: Arc<dyn RequestLog>) -> Self {
        Self {
            store,
            count: Arc::default(),
            queue: Arc::new(OnceLock::new()),
        }
    }

    /// Queues `record`, counted until it is written; a full or closed queue writes it alone.
    pub(crate) fn record(&self, runtime: &tokio::runtime::Handle, record: RequestRecord) {
        self.count.add(1);
        let queue = self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE_MAX);
            runtime.spawn(writer(Arc::clone(&self.store), Arc::clone(&self.count), rx));
            tx
        });
        let Err(refused) = queue.try_send(record) else {
            return;
        };
        let record = match refused {
            mpsc::error::TrySendError::Full(r) | mpsc::error::TrySendError::Closed(r) => r,
        };
        let (store, count) = (Arc::clone(&self.store), Arc::clone(&self.count));
        runtime.spawn(async move {
            write_batch(store.as_ref(), std::slice::from_ref(&record)).await;
            count.done(1);
        });
    }

    /// Runs a test's slow `write` in a task of its own, counted with the records.
    #[cfg(test)]
    fn spawn(
        &self,
        runtime: &tokio::runtime::Handle,
        write: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        self.count.add(1);
        let count = Arc::clone(&self.count);
        runtime.spawn(async move {
            write.await;
            count.done(1);
        });
    }

    /// Waits until no record is queued or being written, at most `wait`; `false` when some
    /// still were then.
    pub(crate) async fn settled(&self, wait: Duration) -> bool {
        let idle = async {
            loop {
                let notified = self.count.idle.notified();
                if self.count.running.load(Ordering::Acquire) == 0 {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(wait, idle).await.is_ok()
    }

    #[cfg(test)]
    fn batches(&self) -> usize {
        self.count.batches.load(Ordering::Relaxed)
    }

    pub(crate) fn running(&self) -> usize {
        self.count.running.load(Ordering::Acquire)
    }
}

/// The writer: takes every record waiting, at most [`BATCH_MAX`], and writes them as one
/// batch, so an idle gateway writes a record at once and a busy one a batch per store round.
async fn writer(
    store: Arc<dyn RequestLog>,
    count: Arc<Count>,
    mut queue: mpsc::Receiver<RequestRecord>,
) {
    let mut batch = Vec::with_capacity(BATCH_MAX);
    while queue.recv_many(&mut batch, BATCH_MAX).await > 0 {
        write_batch(store.as_ref(), &batch).await;
        count.batches.fetch_add(1, Ordering::Relaxed);
        count.done(batch.len());
        batch.clear();
    }
}

/// Writes `batch` in one transaction, and when that fails each record alone, so one bad
/// record loses only itself: a batch with one taken key lost the rest in BerriAI/litellm#6633.
async fn write_batch(store: &dyn RequestLog, batch: &[RequestRecord]) {
    let Err(e) = store.record_requests(batch).await else {
        return;
    };
    if batch.len() == 1 {
        tracing::warn!(id = %batch[0].id, "the request could not be recorded: {e}");
        return;
    }
    tracing::debug!(
        "a batch of {} request records failed ({e}); writing each alone",
        batch.len()
    );
    for record in batch {
        if let Err(e) = store.record_request(record).await {
            tracing::warn!(id = %record.id, "the request could not be recorded: {e}");
        }
    }
}

#[cfg(test)]
mod tests;
