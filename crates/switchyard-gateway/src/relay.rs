//! One request run through Switchyard's layer and relayed (SPEC R14.4, R14.2, R14.10): the
//! route's chain tried in order until one entry yields content within the request deadline,
//! then the answer relayed chunk by chunk in the client's dialect (or collected whole).
//!
//! The limits and the record are the layer's (`layer/`): the calls marked `layer:` choose the
//! entry (cooldowns, the daily cap, rate limits in the store: R12.1–R12.3), cool a failed one
//! down, and record the request when its answer ends.
//!
//! Not yet here (issue 23 item 5, later): continuing an answer cut after content started (it
//! ends with the dialect's in-band error).

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use hyper::Response;
use switchyard_api::{
    ApiError, ApiStream, ApiStreamChunk, CancellationToken, ChainEntry, ErrorKind, RequestOptions,
    fails_over,
};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::ingress::{
    Dialect, GatewayRequest, StopReason, StreamEncoder, response_collector, stream_encoder,
};
use crate::layer::Layer;
use crate::reply::{Body, ChannelBody, dialect_error, json, set_header, with_body};

/// How many encoded pieces may wait between the relay and hyper's write of them.
const CHANNEL_CAPACITY: usize = 16;

/// One request to relay: what the client asked, in which dialect, under which request id.
pub(crate) struct Relay<'a> {
    /// The parsed request.
    pub(crate) request: GatewayRequest,
    /// The client's dialect.
    pub(crate) dialect: Dialect,
    /// The gateway's request id (`x-request-id`, and the dialect's response id).
    pub(crate) id: String,
    /// The longest wait for first content, over every entry (`serve.request_deadline`).
    pub(crate) deadline: Duration,
    /// The route's failover chain, own entry first.
    pub(crate) chain: &'a [ChainEntry],
    /// Switchyard's layer: the store's limits and request log (SPEC R14.4).
    pub(crate) layer: &'a Layer,
}

/// An entry that started answering: its stream, the chunks read before (and including) the
/// first content, and the token that cancels its upstream request.
struct Started<'a> {
    entry: &'a ChainEntry,
    stream: ApiStream,
    read: Vec<ApiStreamChunk>,
    cancel: CancellationToken,
}

impl Relay<'_> {
    /// Runs the request and gives the response: streamed or whole, or the error of the last
    /// entry tried in the client's dialect and status (SPEC R14.5).
    pub(crate) async fn run(self) -> Response<Body> {
        // layer: the request's record, written when its answer ends.
        let trip = self.layer.trip(&self.id, self.dialect, &self.request);
        let mut started = match self.first_content().await {
            Ok(started) => started,
            Err(error) => {
                trip.failed(&error); // layer
                let mut response = dialect_error(self.dialect, &error, None);
                self.dropped_header(&mut response, None);
                return response;
            }
        };
        let entry = started.entry;
        started.stream = trip.answered(entry, &started.read, started.stream); // layer
        let mut response = if self.request.stream {
            self.stream(started)
        } else {
            self.collect(started).await
        };
        self.dropped_header(&mut response, Some(entry));
        response
    }

    /// Tries each entry until one yields content (a text, reasoning or tool-call chunk) or
    /// ends: a failure before content goes on to the next entry when the task layer's rule
    /// says so ([`fails_over`], SPEC R12.1); the deadline bounds the whole search. The layer
    /// picks each entry (the first not cooling down, admitted by the caps and rate limits).
    async fn first_content(&self) -> Result<Started<'_>, ApiError> {
        let until = Instant::now() + self.deadline;
        let mut last = ApiError::new(ErrorKind::Server, "The route has no provider to send to.");
        let mut search = self.layer.search(self.chain, &self.request, until); // layer
        while let Some(at) = search.next().await? {
            let entry = &self.chain[at];
            let cancel = CancellationToken::new();
            let options = RequestOptions {
                cancel: cancel.clone(),
                overrides: self.request.overrides.clone(),
                // Another entry is free: do not spend the deadline on this one's retries.
                fail_fast: search.alternative(), // layer
                on_response: search.hear(),      // layer
                ..RequestOptions::default()
            };
            let stream = entry.handler.create_message(
                &self.request.system_prompt,
                &self.request.messages,
                &self.request.tools,
                options,
            );
            let mut started = Started {
                entry,
                stream,
                read: Vec::new(),
                cancel,
            };
            match started.until_content(until).await {
                Ok(()) => return Ok(started),
                Err(None) => {
                    started.cancel.cancel();
                    return Err(self.timed_out());
                }
                Err(Some(error)) if !fails_over(error.kind) => return Err(error),
                Err(Some(error)) => {
                    search.failed(&error).await; // layer
                    last = error;
                }
            }
        }
        Err(last)
    }

    fn timed_out(&self) -> ApiError {
        let seconds = self.deadline.as_secs_f64();
        ApiError::new(
            ErrorKind::Timeout,
            format!("No provider answered within the gateway's request deadline of {seconds} s."),
        )
    }

    /// The streamed response: the chunks read so far, then each chunk as it arrives.
    fn stream(&self, started: Started<'_>) -> Response<Body> {
        let (tx, body) = ChannelBody::channel(CHANNEL_CAPACITY);
        let encoder = stream_encoder(self.dialect, &self.request, &self.id);
        tokio::spawn(pump(
            started.stream,
            started.read,
            encoder,
            tx,
            started.cancel,
        ));
        let mut response = with_body(200, "text/event-stream", body);
        set_header(&mut response, "cache-control", "no-cache");
        response
    }

    /// The whole response; a failure before the end is the dialect's error (nothing was sent).
    async fn collect(&self, mut started: Started<'_>) -> Response<Body> {
        let mut collector = response_collector(self.dialect, &self.request.model, &self.id);
        let mut tools = false;
        for chunk in std::mem::take(&mut started.read) {
            tools |= matches!(chunk, ApiStreamChunk::ToolCalls { .. });
            collector.chunk(&chunk);
        }
        while let Some(next) = started.stream.next().await {
            match next {
                Ok(chunk) => {
                    tools |= matches!(chunk, ApiStreamChunk::ToolCalls { .. });
                    collector.chunk(&chunk);
                }
                Err(error) => return dialect_error(self.dialect, &error, None),
            }
        }
        json(200, &collector.finish(stop_reason(tools)))
    }

    /// `x-switchyard-dropped` (SPEC R14.2): what the request could not carry, and what
    /// `entry`'s provider could not, when anything.
    fn dropped_header(&self, response: &mut Response<Body>, entry: Option<&ChainEntry>) {
        let mut dropped: Vec<&str> = self.request.dropped.iter().map(String::as_str).collect();
        if let Some(entry) = entry {
            dropped.extend(entry.handler.dropped_overrides(&self.request.overrides));
        }
        if !dropped.is_empty() {
            set_header(response, "x-switchyard-dropped", &dropped.join(","));
        }
    }
}

impl Started<'_> {
    /// Reads until the first content chunk (kept in `read` with what came before), or the
    /// stream's end; a failure is the error, `until` passing is `Err(None)`.
    async fn until_content(&mut self, until: Instant) -> Result<(), Option<ApiError>> {
        loop {
            let next = tokio::time::timeout_at(until, self.stream.next()).await;
            match next {
                Err(_) => return Err(None),
                Ok(None) => return Ok(()),
                Ok(Some(Err(error))) => return Err(Some(error)),
                Ok(Some(Ok(chunk))) => {
                    let content = chunk.is_content();
                    self.read.push(chunk);
                    if content {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// Feeds the client's stream: `read`, then each chunk of `stream` as it arrives, encoded by
/// `encoder`; ends cleanly only when the answer did. A client that goes away (the body's
/// channel closed) cancels the upstream request at once (SPEC R14.4, R1.4).
async fn pump(
    mut stream: ApiStream,
    read: Vec<ApiStreamChunk>,
    mut encoder: Box<dyn StreamEncoder>,
    tx: mpsc::Sender<Bytes>,
    cancel: CancellationToken,
) {
    let mut out = Vec::new();
    let mut tools = false;
    encoder.start(&mut out);
    for chunk in &read {
        tools |= matches!(chunk, ApiStreamChunk::ToolCalls { .. });
        encoder.chunk(chunk, &mut out);
    }
    loop {
        if !out.is_empty()
            && tx
                .send(Bytes::from(std::mem::take(&mut out)))
                .await
                .is_err()
        {
            break;
        }
        let next = tokio::select! {
            biased;
            () = tx.closed() => break,
            next = stream.next() => next,
        };
        match next {
            Some(Ok(chunk)) => {
                tools |= matches!(chunk, ApiStreamChunk::ToolCalls { .. });
                encoder.chunk(&chunk, &mut out);
                continue;
            }
            // The answer was cut: the dialect's in-band error, never a clean end.
            Some(Err(error)) => encoder.error(&error, &mut out),
            None => encoder.finish(stop_reason(tools), &mut out),
        }
        let _ = tx.send(Bytes::from(out)).await;
        return;
    }
    cancel.cancel();
}

/// The stop reason of an answer: a tool call, else the end of the turn. The stream does not
/// yet say that the output limit cut it (`max_tokens`): such an answer reads as complete.
fn stop_reason(had_tool_call: bool) -> StopReason {
    if had_tool_call {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    }
}
