//! One request run through Switchyard's layer and relayed (SPEC R14.4, R14.2, R14.10): the
//! route's chain tried in order until one entry yields content within the request deadline,
//! then the answer relayed chunk by chunk in the client's dialect (or collected whole), an
//! answer cut after content started continued from its partial text on the same entry or the
//! next and spliced in, with no repeated text.
//!
//! - `mod.rs`: [`Relay`], the one place an entry is chosen ([`Relay::choose`]).
//! - `drive.rs`: one answer over its attempts: the one place it ends ([`drive::Step`]).
//! - `answer.rs`: what the answer has been so far, its stop reason and usage (estimated where
//!   the upstream reported none).
//! - `resume.rs`: whether and how a cut answer is continued, and the splice.
//!
//! Not yet here: cooldowns, rate limits and spend caps in the store.

mod answer;
mod drive;
mod resume;

use std::time::Duration;

use futures_util::StreamExt;
use hyper::Response;
use switchyard_api::{
    ApiError, ApiStream, ApiStreamChunk, CancellationToken, ChainEntry, ErrorKind, Message,
    RequestOptions, RequestOverrides, fails_over,
};
use tokio::time::Instant;

use crate::ingress::{Dialect, GatewayRequest};
use crate::reply::{Body, dialect_error, set_header};
use crate::route::Chain;

/// One request to relay: what the client asked, in which dialect, under which request id.
pub(crate) struct Relay {
    /// The parsed request.
    pub(crate) request: GatewayRequest,
    /// The client's dialect.
    pub(crate) dialect: Dialect,
    /// The gateway's request id (`x-request-id`, and the dialect's response id).
    pub(crate) id: String,
    /// How long the request may take to get content (`serve.request_deadline`), from its
    /// start: over every entry, and over every continuation of a cut answer.
    pub(crate) deadline: Duration,
    /// The route's failover chain, own entry first.
    pub(crate) chain: Chain,
}

/// What an attempt sends: the client's conversation, or one that continues a partial answer
/// (SPEC R14.4; see `resume.rs`).
enum Prompt<'a> {
    /// The client's request as it came.
    Client,
    /// The client's request, then this partial answer to continue.
    Continue(&'a str),
}

/// An entry that started answering: its index in the chain, its stream, the chunks read
/// before (and including) the first content, the token that cancels its upstream request, and
/// its request's estimated input in tokens.
struct Started {
    at: usize,
    stream: ApiStream,
    read: Vec<ApiStreamChunk>,
    cancel: CancellationToken,
    input_tokens: u64,
}

impl Relay {
    /// Runs the request and gives the response: streamed or whole, or the error of the last
    /// entry tried in the client's dialect and status (SPEC R14.5).
    pub(crate) async fn run(self) -> Response<Body> {
        let until = Instant::now() + self.deadline;
        let started = match self.choose(0, &Prompt::Client, until).await {
            Ok(started) => started,
            Err(error) => {
                let mut response = dialect_error(self.dialect, &error, None);
                self.dropped_header(&mut response, None);
                return response;
            }
        };
        let dropped = self.dropped(Some(&self.chain[started.at]));
        let mut response = drive::Drive::new(self, started, until).respond().await;
        if !dropped.is_empty() {
            set_header(&mut response, "x-switchyard-dropped", &dropped.join(","));
        }
        response
    }

    /// Chooses the entry that answers: tries each from `from` on until one yields content (a
    /// text, reasoning or tool-call chunk) or ends. A failure before content goes on to the
    /// next entry when the task layer's rule says so ([`fails_over`], SPEC R12.1); `until`
    /// bounds the whole search. Every attempt of a request, continuations too, starts here.
    async fn choose(
        &self,
        from: usize,
        prompt: &Prompt<'_>,
        until: Instant,
    ) -> Result<Started, ApiError> {
        let mut last = ApiError::new(ErrorKind::Server, "The route has no provider to send to.");
        for at in from..self.chain.len() {
            let entry = &self.chain[at];
            let (messages, overrides) = self.prompt_for(prompt, entry);
            let cancel = CancellationToken::new();
            let options = RequestOptions {
                cancel: cancel.clone(),
                overrides,
                // A later entry is waiting: do not spend the deadline on this one's retries.
                fail_fast: at + 1 < self.chain.len(),
                ..RequestOptions::default()
            };
            let r = &self.request;
            let stream =
                entry
                    .handler
                    .create_message(&r.system_prompt, &messages, &r.tools, options);
            let input_tokens = answer::estimate_input(&r.system_prompt, &messages, &r.tools);
            let mut started = Started {
                at,
                stream,
                read: Vec::new(),
                cancel,
                input_tokens,
            };
            match started.until_content(until).await {
                Ok(()) => return Ok(started),
                Err(None) => {
                    started.cancel.cancel();
                    return Err(self.timed_out());
                }
                Err(Some(error)) if !fails_over(error.kind) => return Err(error),
                Err(Some(error)) => last = error,
            }
        }
        Err(last)
    }

    /// The messages and overrides `prompt` sends to `entry`.
    fn prompt_for(
        &self,
        prompt: &Prompt<'_>,
        entry: &ChainEntry,
    ) -> (Vec<Message>, RequestOverrides) {
        let r = &self.request;
        match prompt {
            Prompt::Client => (r.messages.clone(), r.overrides.clone()),
            Prompt::Continue(partial) => (
                resume::messages(&r.messages, partial, entry),
                resume::overrides(&r.overrides, partial, entry),
            ),
        }
    }

    fn timed_out(&self) -> ApiError {
        let seconds = self.deadline.as_secs_f64();
        ApiError::new(
            ErrorKind::Timeout,
            format!("No provider answered within the gateway's request deadline of {seconds} s."),
        )
    }

    /// `x-switchyard-dropped` (SPEC R14.2): what the request could not carry, and what
    /// `entry`'s provider could not, when anything.
    fn dropped(&self, entry: Option<&ChainEntry>) -> Vec<String> {
        let mut dropped = self.request.dropped.clone();
        if let Some(entry) = entry {
            let provider = entry.handler.dropped_overrides(&self.request.overrides);
            dropped.extend(provider.into_iter().map(str::to_owned));
        }
        dropped
    }

    fn dropped_header(&self, response: &mut Response<Body>, entry: Option<&ChainEntry>) {
        let dropped = self.dropped(entry);
        if !dropped.is_empty() {
            set_header(response, "x-switchyard-dropped", &dropped.join(","));
        }
    }
}

impl Started {
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
