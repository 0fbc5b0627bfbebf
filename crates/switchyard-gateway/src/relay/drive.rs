//! One answer over as many upstream attempts as it takes, streamed in the client's dialect
//! or collected whole.
//! Spec: R14.4, R14.2, R14.5, R9.3, R12.1, R10.5.

use std::collections::VecDeque;

use bytes::Bytes;
use futures_util::StreamExt;
use hyper::Response;
use switchyard_api::{ApiError, ApiStreamChunk};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::attempt::Attempt;
use super::continuation;
use super::cursor::Cursor;
use super::observer::Observer;
use super::splice::Splice;
use super::writer::Writer;
use crate::ingress::{StopReason, StreamEncoder};
use crate::reply::{Body, ChannelBody, dialect_error, json, set_header, with_body};

/// How many encoded pieces may wait between the relay and hyper's write of them.
const CHANNEL_CAPACITY: usize = 16;

pub(super) enum Step {
    Chunk(ApiStreamChunk),
    /// A chunk the client has in a forwarded event, which a stream's encoder mirrors.
    Mirror(ApiStreamChunk),
    /// A forwarded provider event, as it came.
    Wire(Bytes),
    End(StopReason),
    /// The answer cannot be completed: the dialect's error, in-band in a stream.
    Fail(ApiError),
}

/// The error of an upstream answer that went silent for `gap` after its content started.
fn stalled(gap: std::time::Duration, entry: &switchyard_api::ChainEntry) -> ApiError {
    let message = format!(
        "nothing came for {} s once its answer had started (serve.chunk_timeout)",
        gap.as_secs()
    );
    let mut error = ApiError::new(switchyard_api::ErrorKind::Timeout, message);
    error.provider_id = Some(entry.provider_id.clone());
    error.model_id = Some(entry.model_id.clone());
    error
}

/// One answer in flight. [`Drive::next`] is the one place it ends.
pub(super) struct Drive {
    cursor: Cursor,
    current: Attempt,
    pending: VecDeque<Step>,
    /// The last step, given after `pending`.
    last: Option<Step>,
    splice: Option<Splice>,
    continued: usize,
    observer: Observer,
}

impl Drive {
    pub(super) fn new(cursor: Cursor, mut attempt: Attempt, mut observer: Observer) -> Self {
        let trace = std::mem::take(&mut attempt.trace);
        observer.started(cursor.entry(attempt.at), attempt.input_tokens, trace);
        let read = std::mem::take(&mut attempt.read);
        let mut drive = Self {
            cursor,
            current: attempt,
            pending: VecDeque::new(),
            last: None,
            splice: None,
            continued: 0,
            observer,
        };
        read.into_iter().for_each(|chunk| drive.take(chunk));
        drive
    }

    pub(super) async fn respond(self) -> Response<Body> {
        if self.cursor.request().stream {
            self.stream()
        } else {
            self.collect().await
        }
    }

    /// The next step. Chunks come first, then exactly one [`Step::End`] or [`Step::Fail`].
    async fn next(&mut self) -> Step {
        loop {
            if let Some(step) = self.pending.pop_front() {
                return step;
            }
            if let Some(last) = self.last.take() {
                return last;
            }
            // Content has started: a silence longer than the gap is a failure like any other.
            let gap = self.cursor.chunk_gap();
            let next = tokio::time::timeout(gap, self.current.stream.next()).await;
            let entry = self.cursor.entry(self.current.at);
            match next.unwrap_or_else(|_| Some(Err(stalled(gap, entry)))) {
                Some(Ok(chunk)) => self.take(chunk),
                Some(Err(error)) => {
                    if let Err(error) = self.resume(error).await {
                        let usage = self.observer.failed(&error);
                        self.pending
                            .push_back(Step::Chunk(ApiStreamChunk::Usage(usage)));
                        self.last = Some(Step::Fail(error));
                    }
                }
                None => self.end(),
            }
        }
    }

    /// The answer ended: its last usage, reported or estimated, and its stop reason.
    fn end(&mut self) {
        self.release_splice();
        let (stop, usage) = self.observer.completed();
        self.pending
            .push_back(self.for_client(ApiStreamChunk::Usage(usage)));
        self.last = Some(Step::End(stop));
    }

    /// One chunk of the current attempt: observed, then sent unless it is usage or a finish,
    /// kept for the end, a continuation's thinking, or text the splice holds back.
    fn take(&mut self, chunk: ApiStreamChunk) {
        if let ApiStreamChunk::Wire(event) = chunk {
            if event.ends {
                // The provider's events stop because a secret spanned two: the encoder writes the rest.
                self.current.forwarded = false;
                return;
            }
            let rules = self.observer.context().dialect.rules();
            if self.mirrors() && rules.keeps_event(self.cursor.request(), &event.bytes) {
                self.pending.push_back(Step::Wire(event.bytes));
            }
            return;
        }
        self.observer.generated(&chunk);
        match (&chunk, self.splice.as_mut()) {
            (ApiStreamChunk::Usage(_) | ApiStreamChunk::Finish { .. }, _) => return,
            (ApiStreamChunk::Reasoning { .. }, Some(_)) => return,
            (ApiStreamChunk::Text { text, .. }, Some(splice)) => {
                if let Some(text) = splice.push(text) {
                    self.send(ApiStreamChunk::text(text));
                }
                return;
            }
            _ => {}
        }
        self.release_splice();
        self.send(chunk);
    }

    fn send(&mut self, chunk: ApiStreamChunk) {
        self.observer.sent(&chunk);
        let step = self.for_client(chunk);
        self.pending.push_back(step);
    }

    /// Whether the client gets the current attempt as the provider's own events.
    fn mirrors(&self) -> bool {
        self.current.forwarded && self.cursor.request().stream
    }

    fn for_client(&self, chunk: ApiStreamChunk) -> Step {
        if self.mirrors() {
            Step::Mirror(chunk)
        } else {
            Step::Chunk(chunk)
        }
    }

    fn release_splice(&mut self) {
        if let Some(text) = self.splice.as_mut().and_then(Splice::release) {
            self.send(ApiStreamChunk::text(text));
        }
    }

    /// The current attempt failed after content started: the answer is continued on the next
    /// entry at once, or on the same one after a wait. `Err` when nothing can continue it.
    async fn resume(&mut self, error: ApiError) -> Result<(), ApiError> {
        self.current.cancel.cancel();
        self.release_splice();
        self.observer.cut(&error);
        let id = self.observer.context().id.clone();
        let answer = self.observer.answer();
        let why = continuation::refusal(&error, answer.tool_call, &answer.text, self.continued);
        if let Some(why) = why {
            tracing::warn!(id = %id, "a cut answer is not continued: {why}: {error}");
            return Err(error);
        }
        let until = self.cursor.until();
        if !self.cursor.another_entry() {
            let wait = continuation::backoff(self.continued);
            tokio::time::sleep_until((Instant::now() + wait).min(until)).await;
        }
        if Instant::now() >= until {
            tracing::warn!(id = %id, "a cut answer is not continued: the request deadline passed: {error}");
            return Err(error);
        }
        self.continued += 1;
        let partial = self.observer.answer().text.clone();
        let mut attempt = match self.cursor.continuation(&partial).await {
            Ok(attempt) => attempt,
            Err(failed) => {
                tracing::warn!(id = %id, "the continuation of a cut answer failed: {failed}");
                return Err(error);
            }
        };
        let entry = self.cursor.entry(attempt.at);
        tracing::info!(id = %id, provider = %entry.provider_id, model = %entry.model_id,
            continuation = self.continued, "continuing a cut answer: {error}");
        let trace = std::mem::take(&mut attempt.trace);
        self.observer.started(entry, attempt.input_tokens, trace);
        self.splice = Some(Splice::after(&partial));
        self.current = attempt;
        let read = std::mem::take(&mut self.current.read);
        read.into_iter().for_each(|chunk| self.take(chunk));
        Ok(())
    }

    fn stream(self) -> Response<Body> {
        let (tx, body) = ChannelBody::channel(CHANNEL_CAPACITY);
        let context = self.observer.context();
        let rules = context.dialect.rules();
        let encoder = rules.stream_encoder(self.cursor.request(), &context.id);
        let content_type = rules.stream_content_type(self.cursor.request());
        tokio::spawn(self.pump(encoder, tx));
        let mut response = with_body(200, content_type, body);
        set_header(&mut response, "cache-control", "no-cache");
        response
    }

    /// Feeds the client's stream, each step encoded as it comes. A client that goes away
    /// closes the channel, which cancels the upstream request at once.
    /// Spec: R14.4, R1.4.
    async fn pump(mut self, encoder: Box<dyn StreamEncoder>, tx: mpsc::Sender<Bytes>) {
        let mut writer = Writer::new(encoder, self.mirrors());
        loop {
            let out = writer.take();
            if !out.is_empty() && tx.send(Bytes::from(out)).await.is_err() {
                break;
            }
            let step = tokio::select! {
                biased;
                () = tx.closed() => break,
                step = self.next() => step,
            };
            match step {
                Step::Chunk(chunk) => {
                    writer.chunk(&chunk);
                    continue;
                }
                Step::Mirror(chunk) => {
                    writer.mirror(chunk);
                    continue;
                }
                Step::Wire(bytes) => {
                    writer.wire(&bytes);
                    continue;
                }
                Step::End(stop) => {
                    self.observer.settle().await;
                    // A forwarded answer ended with the provider's own last events.
                    writer.finish(stop, self.mirrors());
                }
                Step::Fail(error) => writer.error(&error),
            }
            let _ = tx.send(Bytes::from(writer.take())).await;
            return;
        }
        self.current.cancel.cancel();
    }

    /// The whole response, or the dialect's error, since nothing was sent yet. Usage the
    /// upstream did not report is estimated, and the response says so.
    async fn collect(mut self) -> Response<Body> {
        let context = self.observer.context();
        let (dialect, id) = (context.dialect, context.id.clone());
        let mut collector = dialect.rules().collector(self.cursor.request(), &id);
        loop {
            match self.next().await {
                Step::Chunk(chunk) | Step::Mirror(chunk) => collector.chunk(&chunk),
                Step::Wire(_) => {}
                Step::End(stop) => {
                    self.observer.settle().await;
                    let mut response = json(200, &collector.finish(stop));
                    if self.observer.answer().estimated {
                        set_header(&mut response, "x-switchyard-usage", "estimated");
                    }
                    return response;
                }
                Step::Fail(error) => return dialect_error(dialect, &error, None),
            }
        }
    }
}
