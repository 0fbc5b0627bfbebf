//! One answer over as many upstream attempts as it takes (SPEC R14.4, R9.3, R12.1): the
//! chunks of the entry that started answering, then — when it is cut after content started —
//! those of the attempt that continues it, spliced in; streamed to the client in its dialect
//! or collected whole. Each answer ends in exactly one place ([`Drive::next`]'s last step): a
//! complete answer with its stop reason and usage, or the failure that nothing could mend.

use std::collections::VecDeque;

use bytes::Bytes;
use futures_util::StreamExt;
use hyper::Response;
use switchyard_api::{ApiError, ApiStreamChunk};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::answer::Answer;
use super::entry::{Prompt, Relay, Started};
use super::resume::{self, Splice};
use crate::ingress::{StopReason, StreamEncoder, response_collector, stream_encoder};
use crate::layer::{Keeper, Trip, settle};
use crate::reply::{Body, ChannelBody, dialect_error, json, set_header, with_body};

/// How many encoded pieces may wait between the relay and hyper's write of them.
const CHANNEL_CAPACITY: usize = 16;

/// What the answer does next.
pub(super) enum Step {
    /// A chunk for the client (text, reasoning, a tool-call fragment, the final usage).
    Chunk(ApiStreamChunk),
    /// The answer is complete and ended so.
    End(StopReason),
    /// The answer cannot be completed: the client gets the dialect's error (in-band in a
    /// stream), never a clean end (SPEC R14.4, R14.5).
    Fail(ApiError),
}

/// One answer in flight.
pub(super) struct Drive {
    relay: Relay,
    /// The request's deadline (its start plus `serve.request_deadline`).
    until: Instant,
    /// The attempt being read.
    current: Started,
    /// Chunks ready for the client, in order.
    pending: VecDeque<ApiStreamChunk>,
    /// The last step, once known; given after `pending`.
    last: Option<Step>,
    answer: Answer,
    /// Joins a continuation to the answer (none before the first continuation).
    splice: Option<Splice>,
    /// How many continuations were started.
    continued: usize,
    /// The request's record (SPEC R14.4): told of each attempt and of the answer's end;
    /// dropped before that (the client went away), it records the request as cancelled.
    trip: Trip,
    /// A Responses answer to store (SPEC R14.1): hears each chunk the client is sent, and is
    /// written when the answer ends complete.
    keeper: Option<Keeper>,
    /// That write, once started: the answer's terminal event waits for it (`layer/keep.rs`).
    kept: Option<tokio::task::JoinHandle<()>>,
}

impl Drive {
    /// The answer of `relay` that `started` began, within `until`.
    pub(super) fn new(relay: Relay, mut started: Started, until: Instant, mut trip: Trip) -> Self {
        trip.answered(&relay.chain[started.at]);
        let keeper = (relay.layer).keeper(&relay.id, relay.dialect, &relay.request);
        let read = std::mem::take(&mut started.read);
        let mut drive = Self {
            relay,
            until,
            current: started,
            pending: VecDeque::new(),
            last: None,
            answer: Answer::default(),
            splice: None,
            continued: 0,
            trip,
            keeper,
            kept: None,
        };
        drive.answer.begin_attempt(drive.current.input_tokens);
        read.into_iter().for_each(|chunk| drive.take(chunk));
        drive
    }

    /// The response: streamed, or the whole answer as one JSON body.
    pub(super) async fn respond(self) -> Response<Body> {
        if self.relay.request.stream {
            self.stream()
        } else {
            self.collect().await
        }
    }

    /// The next step. Chunks come first, then exactly one [`Step::End`] or [`Step::Fail`].
    pub(super) async fn next(&mut self) -> Step {
        loop {
            if let Some(chunk) = self.pending.pop_front() {
                return Step::Chunk(chunk);
            }
            if let Some(last) = self.last.take() {
                return last;
            }
            match self.current.stream.next().await {
                Some(Ok(chunk)) => self.take(chunk),
                Some(Err(error)) => {
                    if let Err(error) = self.resume(error).await {
                        // What the attempts used, for a dialect whose error carries usage
                        // (Responses `response.failed`).
                        self.pending
                            .push_back(ApiStreamChunk::Usage(self.answer.end().1));
                        self.trip.ended(Some(&error));
                        self.last = Some(Step::Fail(error));
                    }
                }
                None => self.end(),
            }
        }
    }

    /// The answer ended: the last usage (reported, summed over the attempts, or estimated)
    /// and the stop reason.
    fn end(&mut self) {
        self.release_splice();
        self.answer.end_attempt();
        let (stop, usage) = self.answer.end();
        self.pending.push_back(ApiStreamChunk::Usage(usage));
        self.last = Some(Step::End(stop));
        self.trip.ended(None);
        self.kept = self.keeper.take().and_then(Keeper::keep);
    }

    /// One chunk of the current attempt: counted, then sent unless it is usage or a finish
    /// (kept for the end), a continuation's thinking (the client has its thinking), or text
    /// the splice holds back or finds repeated.
    fn take(&mut self, chunk: ApiStreamChunk) {
        self.trip.saw(&chunk);
        self.answer.generated(&chunk);
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
        self.answer.sent(&chunk);
        if let Some(keeper) = self.keeper.as_mut() {
            keeper.sent(&chunk);
        }
        self.pending.push_back(chunk);
    }

    fn release_splice(&mut self) {
        if let Some(text) = self.splice.as_mut().and_then(Splice::release) {
            self.send(ApiStreamChunk::text(text));
        }
    }

    /// The current attempt failed after content started: continues the answer on the next
    /// entry (at once) or, with none left, on the same one (after R9.3's wait), within the
    /// deadline; `Err` with the failure when nothing can (SPEC R14.4).
    async fn resume(&mut self, error: ApiError) -> Result<(), ApiError> {
        self.current.cancel.cancel();
        self.release_splice();
        self.answer.end_attempt();
        let answer = &self.answer;
        if let Some(why) = resume::refusal(&error, answer.tool_call, &answer.text, self.continued) {
            tracing::warn!(id = %self.relay.id, "a cut answer is not continued: {why}: {error}");
            return Err(error);
        }
        let at = self.current.at;
        let next = if at + 1 < self.relay.chain.len() {
            at + 1
        } else {
            at
        };
        if next == at {
            let wait = resume::backoff(self.continued);
            tokio::time::sleep_until((Instant::now() + wait).min(self.until)).await;
        }
        if Instant::now() >= self.until {
            tracing::warn!(id = %self.relay.id, "a cut answer is not continued: the request deadline passed: {error}");
            return Err(error);
        }
        self.continued += 1;
        let partial = self.answer.text.clone();
        let started = match self
            .relay
            .choose(next, &Prompt::Continue(&partial), self.until)
            .await
        {
            Ok(started) => started,
            Err(failed) => {
                tracing::warn!(id = %self.relay.id, "the continuation of a cut answer failed: {failed}");
                return Err(error);
            }
        };
        let entry = &self.relay.chain[started.at];
        self.trip.answered(entry);
        tracing::info!(id = %self.relay.id, provider = %entry.provider_id, model = %entry.model_id,
            continuation = self.continued, "continuing a cut answer: {error}");
        self.answer.begin_attempt(started.input_tokens);
        self.splice = Some(Splice::after(&partial));
        self.current = started;
        let read = std::mem::take(&mut self.current.read);
        read.into_iter().for_each(|chunk| self.take(chunk));
        Ok(())
    }

    /// The streamed response: a task feeds the client's stream step by step.
    fn stream(self) -> Response<Body> {
        let (tx, body) = ChannelBody::channel(CHANNEL_CAPACITY);
        let encoder = stream_encoder(self.relay.dialect, &self.relay.request, &self.relay.id);
        tokio::spawn(self.pump(encoder, tx));
        let mut response = with_body(200, "text/event-stream", body);
        set_header(&mut response, "cache-control", "no-cache");
        response
    }

    /// Feeds the client's stream, each step encoded as it comes; ends cleanly only when the
    /// answer did. A client that goes away (the body's channel closed) cancels the upstream
    /// request at once (SPEC R14.4, R1.4).
    async fn pump(mut self, mut encoder: Box<dyn StreamEncoder>, tx: mpsc::Sender<Bytes>) {
        let mut out = Vec::new();
        encoder.start(&mut out);
        loop {
            if !out.is_empty()
                && tx
                    .send(Bytes::from(std::mem::take(&mut out)))
                    .await
                    .is_err()
            {
                break;
            }
            let step = tokio::select! {
                biased;
                () = tx.closed() => break,
                step = self.next() => step,
            };
            match step {
                Step::Chunk(chunk) => {
                    encoder.chunk(&chunk, &mut out);
                    continue;
                }
                Step::End(stop) => {
                    settle(self.kept.take()).await;
                    encoder.finish(stop, &mut out);
                }
                // The answer was cut and nothing could continue it: the dialect's in-band
                // error, never a clean end.
                Step::Fail(error) => encoder.error(&error, &mut out),
            }
            let _ = tx.send(Bytes::from(out)).await;
            return;
        }
        self.current.cancel.cancel();
    }

    /// The whole response; an answer that cannot be completed is the dialect's error (nothing
    /// was sent yet). Usage the upstream did not report is an estimate, and says so:
    /// `x-switchyard-usage: estimated`.
    async fn collect(mut self) -> Response<Body> {
        let (dialect, id) = (self.relay.dialect, self.relay.id.clone());
        let mut collector = response_collector(dialect, &self.relay.request, &id);
        loop {
            match self.next().await {
                Step::Chunk(chunk) => collector.chunk(&chunk),
                Step::End(stop) => {
                    settle(self.kept.take()).await;
                    let mut response = json(200, &collector.finish(stop));
                    if self.answer.estimated {
                        set_header(&mut response, "x-switchyard-usage", "estimated");
                    }
                    return response;
                }
                Step::Fail(error) => return dialect_error(dialect, &error, None),
            }
        }
    }
}
