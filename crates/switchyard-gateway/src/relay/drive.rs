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
use super::writer::Writer;
use crate::ingress::{Dialect, StopReason, StreamEncoder, response_collector, stream_encoder};
use crate::layer::{Keeper, Trip, settle};
use crate::reply::{Body, ChannelBody, dialect_error, json, set_header, with_body};

/// How many encoded pieces may wait between the relay and hyper's write of them.
const CHANNEL_CAPACITY: usize = 16;

/// What the answer does next.
pub(super) enum Step {
    /// A chunk for the client (text, reasoning, a tool-call fragment, the final usage).
    Chunk(ApiStreamChunk),
    /// A chunk of a forwarded answer (SPEC R14.2): the client has it in the provider's own
    /// event ([`Step::Wire`]); a stream's encoder hears it so that, should the answer be
    /// continued, it goes on from where the provider's events left off.
    Mirror(ApiStreamChunk),
    /// A forwarded provider event, for the client's stream as it came.
    Wire(Bytes),
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
    /// Steps ready for the client, in order: chunks, mirrored chunks and forwarded events.
    pending: VecDeque<Step>,
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
        let entry = &relay.chain[started.at];
        relay.live.answered(&entry.provider_id, &entry.model_id);
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
            if let Some(step) = self.pending.pop_front() {
                return step;
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
                        let usage = ApiStreamChunk::Usage(self.answer.end().1);
                        self.pending.push_back(Step::Chunk(usage));
                        self.trip.ended(Some(&error));
                        self.relay.live.failed(&error);
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
        self.pending
            .push_back(self.for_client(ApiStreamChunk::Usage(usage)));
        self.last = Some(Step::End(stop));
        self.trip.ended(None);
        self.kept = self.keeper.take().and_then(Keeper::keep);
    }

    /// One chunk of the current attempt: counted, then sent unless it is usage or a finish
    /// (kept for the end), a continuation's thinking (the client has its thinking), or text
    /// the splice holds back or finds repeated.
    fn take(&mut self, chunk: ApiStreamChunk) {
        if let ApiStreamChunk::Wire(event) = chunk {
            if event.ends {
                // The provider's events stop (a secret spanned two, SPEC R10.5): the rest of
                // the answer is the encoder's, which mirrored everything up to here.
                self.current.forwarded = false;
                return;
            }
            if self.mirrors() && self.wanted(&event.bytes) {
                self.pending.push_back(Step::Wire(event.bytes));
            }
            return;
        }
        self.trip.saw(&chunk);
        self.relay.live.saw(&chunk);
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
        let step = self.for_client(chunk);
        self.pending.push_back(step);
    }

    /// Whether the current attempt's answer reaches the client as the provider's own events
    /// (a forwarded body, streamed: SPEC R14.2), its chunks only mirrored.
    fn mirrors(&self) -> bool {
        self.current.forwarded && self.relay.request.stream
    }

    /// `chunk` as the client gets it: itself, or mirrored when the provider's events carry it.
    fn for_client(&self, chunk: ApiStreamChunk) -> Step {
        if self.mirrors() {
            Step::Mirror(chunk)
        } else {
            Step::Chunk(chunk)
        }
    }

    /// Whether a forwarded event goes to the client: all do but, for a Chat client that did
    /// not ask for usage, the usage-only chunk the gateway asked for to bill the answer.
    fn wanted(&self, event: &[u8]) -> bool {
        let r = &self.relay.request;
        self.relay.dialect != Dialect::ChatCompletions || r.include_usage || !usage_only(event)
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
        self.relay
            .live
            .answered(&entry.provider_id, &entry.model_id);
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
                    settle(self.kept.take()).await;
                    // A forwarded answer ended with the provider's own last events.
                    writer.finish(stop, self.mirrors());
                }
                // The answer was cut and nothing could continue it: the dialect's in-band
                // error, never a clean end.
                Step::Fail(error) => writer.error(&error),
            }
            let _ = tx.send(Bytes::from(writer.take())).await;
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
                Step::Chunk(chunk) | Step::Mirror(chunk) => collector.chunk(&chunk),
                Step::Wire(_) => {}
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

/// Whether a forwarded Chat Completions event is a chunk of usage alone (`choices` empty):
/// the one the gateway's `stream_options.include_usage` adds (SPEC R14.2).
fn usage_only(event: &[u8]) -> bool {
    let Some(data) = std::str::from_utf8(event)
        .ok()
        .and_then(|e| e.trim_end().strip_prefix("data: "))
    else {
        return false;
    };
    if !data.contains("\"usage\"") {
        return false;
    }
    // Only the two fields, the rest skipped unread: every OpenAI chunk says `"usage": null`,
    // so this runs for each forwarded Chat event of a client that did not ask for usage.
    #[derive(serde::Deserialize)]
    struct Shape {
        usage: Option<serde::de::IgnoredAny>,
        choices: Option<Vec<serde::de::IgnoredAny>>,
    }
    serde_json::from_str::<Shape>(data)
        .is_ok_and(|c| c.usage.is_some() && c.choices.is_none_or(|c| c.is_empty()))
}
