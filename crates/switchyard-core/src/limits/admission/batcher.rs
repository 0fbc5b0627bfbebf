//! The background task writing settled requests to the store in batches.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::shared::{Settled, Shared};
use crate::store::{LeasedRecord, OpenRequest};

/// An admitted request's trace, a settled request, or a wish to hear when all before it
/// are written.
#[derive(Debug)]
pub(crate) enum Item {
    Open(Box<OpenRequest>),
    Record(Box<Settled>),
    Flush(oneshot::Sender<()>),
}

/// Writes what arrives, as many records a call as have queued meanwhile, until every sender
/// is gone and the queue is empty.
pub(crate) async fn run(shared: Arc<Shared>, mut queue: mpsc::Receiver<Item>) {
    let mut items = Vec::with_capacity(shared.config.batch_max);
    let max = shared.config.batch_max;
    while queue.recv_many(&mut items, max).await > 0 {
        // A short wait fills the batch: one transaction carries more records.
        if items.len() < max && shared.config.batch_wait_ms > 0 {
            tokio::time::sleep(Duration::from_millis(shared.config.batch_wait_ms)).await;
            while items.len() < max
                && let Ok(item) = queue.try_recv()
            {
                items.push(item);
            }
        }
        let (mut open, mut batch, mut flushes) = (Vec::new(), Vec::new(), Vec::new());
        for item in items.drain(..) {
            match item {
                Item::Open(o) => open.push(*o),
                Item::Record(s) => batch.push(*s),
                Item::Flush(done) => flushes.push(done),
            }
        }
        // A request settled within the batch that traced it needs no trace.
        let settled: HashSet<&str> = (batch.iter())
            .map(|s| s.record.record.id.as_str())
            .collect();
        open.retain(|o| !settled.contains(o.id.as_str()));
        if !open.is_empty() {
            trace(&shared, &open).await;
        }
        if !batch.is_empty() {
            write(&shared, batch).await;
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// Writes the traces in `open`, retried a few times; traces that still fail are logged, and
/// those requests are charged nothing if this process dies before their records.
async fn trace(shared: &Shared, open: &[OpenRequest]) {
    let mut delay = Duration::from_millis(50);
    for attempt in 1..=3 {
        let expires = shared.now_ms().saturating_add(shared.config.lease_ms);
        match shared.store.open_requests(open, expires).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(
                    traces = open.len(),
                    attempt,
                    "writing request traces failed: {e}"
                );
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
    }
}

/// Writes `batch`, retried a few times, then record by record; a record that still fails is
/// logged and its cost stays counted in its slices, as if never written.
async fn write(shared: &Shared, batch: Vec<Settled>) {
    let (records, costs): (Vec<LeasedRecord>, Vec<_>) =
        batch.into_iter().map(|s| (s.record, s.costs)).unzip();
    if attempts(shared, &records, 3).await {
        written(shared, costs.iter().flatten());
        return;
    }
    for (record, costs) in records.iter().zip(&costs) {
        if attempts(shared, std::slice::from_ref(record), 3).await {
            written(shared, costs.iter());
        } else {
            tracing::warn!(
                request = %record.record.id,
                "a settled request could not be written to the store; its cost stays counted"
            );
        }
    }
}

async fn attempts(shared: &Shared, records: &[LeasedRecord], tries: u32) -> bool {
    let mut delay = Duration::from_millis(50);
    for attempt in 1..=tries {
        match shared.store.record_leased(records).await {
            Ok(()) => return true,
            Err(e) => {
                tracing::warn!(
                    records = records.len(),
                    attempt,
                    "writing settled requests failed: {e}"
                );
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
    }
    false
}

/// Moves written costs from pending to committed in their slices.
fn written<'a>(
    shared: &Shared,
    costs: impl Iterator<Item = &'a (super::slice::SliceKey, i64, f64)>,
) {
    let mut state = shared.state();
    for (key, bucket, cost) in costs {
        if let Some(slice) = state.slices.get_mut(key) {
            slice.written(*bucket, *cost);
        }
    }
}
