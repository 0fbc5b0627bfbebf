//! The span queue: an ended span waits here, bounded, for the task that exports spans in
//! batches; a span that finds the queue full is dropped and counted, never waited for.
//! Spec: R14.13.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The most spans sent in one export.
const MAX_BATCH: usize = 512;
/// How long the first span of a batch waits for others before the batch is sent.
const BATCH_DELAY: Duration = Duration::from_millis(500);

/// The tracer provider's one span processor.
#[derive(Debug)]
pub(super) struct Queue {
    tx: mpsc::Sender<SpanData>,
    dropped: Arc<AtomicU64>,
}

/// The export task's handle: stopping it sends what is queued, then ends it.
pub(super) struct Exporting {
    pub(super) stop: CancellationToken,
    pub(super) task: JoinHandle<()>,
}

impl Queue {
    /// The queue of `size` spans and its export task on the current runtime.
    pub(super) fn start<E: SpanExporter + 'static>(
        exporter: E,
        size: usize,
        (dropped, timeout): (Arc<AtomicU64>, Duration),
    ) -> (Self, Exporting) {
        let (tx, rx) = mpsc::channel(size);
        let stop = CancellationToken::new();
        let run = Run {
            exporter,
            rx,
            dropped: Arc::clone(&dropped),
            timeout,
            failing: false,
        };
        let task = tokio::spawn(run.run(stop.clone()));
        (Self { tx, dropped }, Exporting { stop, task })
    }
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if self.tx.try_send(span).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    // Flushing is the export task's stop, which is async: nothing waits here.
    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

struct Run<E> {
    exporter: E,
    rx: mpsc::Receiver<SpanData>,
    dropped: Arc<AtomicU64>,
    timeout: Duration,
    /// Whether the last export failed: a dead collector is said once, not per batch.
    failing: bool,
}

impl<E: SpanExporter> Run<E> {
    async fn run(mut self, stop: CancellationToken) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        loop {
            let got = tokio::select! {
                () = stop.cancelled() => break,
                n = self.rx.recv_many(&mut batch, MAX_BATCH) => n,
            };
            if got == 0 {
                break;
            }
            let until = Instant::now() + BATCH_DELAY;
            while batch.len() < MAX_BATCH {
                let room = MAX_BATCH - batch.len();
                tokio::select! {
                    () = tokio::time::sleep_until(until) => break,
                    () = stop.cancelled() => break,
                    n = self.rx.recv_many(&mut batch, room) => if n == 0 { break },
                }
            }
            self.export(std::mem::take(&mut batch)).await;
        }
        // Stopping: what is queued goes out, in batches, then the task ends.
        self.rx.close();
        while let Ok(span) = self.rx.try_recv() {
            batch.push(span);
            if batch.len() == MAX_BATCH {
                self.export(std::mem::take(&mut batch)).await;
            }
        }
        if !batch.is_empty() {
            self.export(batch).await;
        }
    }

    async fn export(&mut self, batch: Vec<SpanData>) {
        let n = batch.len() as u64;
        let sent = tokio::time::timeout(self.timeout, self.exporter.export(batch)).await;
        let error = match sent {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(switchyard_api::secrets::scrub(&e.to_string()).into_owned()),
            Err(_) => Some(format!("no answer within {} s", self.timeout.as_secs())),
        };
        match error {
            Some(e) => {
                self.dropped.fetch_add(n, Ordering::Relaxed);
                if !std::mem::replace(&mut self.failing, true) {
                    tracing::warn!("spans could not be exported, dropped and counted: {e}");
                }
            }
            None if std::mem::replace(&mut self.failing, false) => {
                tracing::info!("spans are exported again");
            }
            None => {}
        }
    }
}
