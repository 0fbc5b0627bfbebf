//! The request a relay runs and the one place an entry of its chain is chosen (SPEC R14.4,
//! R12.1, R14.2): each entry tried in order until one yields content within the deadline, for
//! the client's request and for each continuation of a cut answer.

use std::time::Duration;

use futures_util::StreamExt;
use hyper::Response;
use switchyard_api::{
    ApiError, ApiStream, ApiStreamChunk, CancellationToken, ChainEntry, ErrorKind, ForwardDialect,
    Message, RequestOptions, RequestOverrides, fails_over,
};
use tokio::time::Instant;

use super::{answer, resume};
use crate::ingress::{Dialect, GatewayRequest};
use crate::layer::Layer;
use crate::metrics::InFlight;
use crate::reply::{Body, set_header};
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
    /// Switchyard's layer: the limits and the request log in the store (SPEC R14.4).
    pub(crate) layer: Layer,
    /// The route's metric label (SPEC R14.9).
    pub(crate) label: String,
    /// When the request's headers were read: the gateway's overhead and the metrics'
    /// durations start there (SPEC R14.9).
    pub(crate) received: Instant,
    /// Counts the request in flight while the relay (and its answer) lives.
    pub(crate) _flight: InFlight,
    /// Lists it on the dashboard's live page while it lives (SPEC R14.11).
    pub(crate) live: crate::ui::Flight,
    /// The client's body as it came, for an entry that takes it as it is (SPEC R14.2).
    pub(crate) body: bytes::Bytes,
    /// The client's headers sent on with a forwarded body (Anthropic `anthropic-beta`, which
    /// switches on what the body's fields ask for).
    pub(crate) forward_headers: Vec<(String, String)>,
}

/// What an attempt sends: the client's conversation, or one that continues a partial answer
/// (SPEC R14.4; see `resume.rs`).
pub(super) enum Prompt<'a> {
    /// The client's request as it came.
    Client,
    /// The client's request, then this partial answer to continue.
    Continue(&'a str),
}

/// An entry that started answering: its index in the chain, its stream, the chunks read
/// before (and including) the first content, the token that cancels its upstream request, and
/// its request's estimated input in tokens.
pub(super) struct Started {
    pub(super) at: usize,
    pub(super) stream: ApiStream,
    pub(super) read: Vec<ApiStreamChunk>,
    pub(super) cancel: CancellationToken,
    pub(super) input_tokens: u64,
    /// Whether it was sent the client's own body and streams the provider's events as they
    /// came (SPEC R14.2).
    pub(super) forwarded: bool,
}

impl Relay {
    /// Chooses the entry that answers: tries each from `from` on until one yields content (a
    /// text, reasoning or tool-call chunk) or ends. A failure before content goes on to the
    /// next entry when the task layer's rule says so ([`fails_over`], SPEC R12.1); `until`
    /// bounds the whole search. Every attempt of a request, continuations too, starts here.
    pub(super) async fn choose(
        &self,
        from: usize,
        prompt: &Prompt<'_>,
        until: Instant,
    ) -> Result<Started, ApiError> {
        let mut last = ApiError::new(ErrorKind::Server, "The route has no provider to send to.");
        // The layer picks each entry from `from` on: the first not cooling down, admitted by
        // the daily cap and its rate-limit window (SPEC R12.1–R12.3).
        let mut search = self.layer.search(&self.chain[from..], until);
        let mut first = from == 0 && matches!(prompt, Prompt::Client);
        while let Some(offset) = search.next().await? {
            let at = from + offset;
            let entry = &self.chain[at];
            let (messages, overrides) = self.prompt_for(prompt, entry);
            let cancel = CancellationToken::new();
            let mut options = RequestOptions {
                cancel: cancel.clone(),
                overrides,
                // Another entry is free: do not spend the deadline on this one's retries.
                fail_fast: search.alternative(),
                on_response: search.hear(),
                bounds: self.layer.bounds,
                ..RequestOptions::default()
            };
            let r = &self.request;
            let forward = self.forward_body(prompt, entry);
            let forwarded = forward.is_some();
            let stream = match forward {
                Some((dialect, body)) => {
                    // Anthropic's flags mean nothing (or a 400) to other servers of its
                    // dialect (mnfst/llm-gateway#2910).
                    if entry.provider_id == "anthropic" {
                        options.headers = self.forward_headers.clone();
                    }
                    entry.handler.forward(dialect, body, options)
                }
                None => {
                    entry
                        .handler
                        .create_message(&r.system_prompt, &messages, &r.tools, options)
                }
            };
            let input_tokens = answer::estimate_input(&r.system_prompt, &messages, &r.tools);
            let mut started = Started {
                at,
                stream,
                read: Vec::new(),
                cancel,
                input_tokens,
                forwarded,
            };
            if std::mem::take(&mut first) {
                // The gateway's own cost (SPEC R14.9): the handler sends the request's first
                // upstream request at this first poll of its stream.
                let spent = self.received.elapsed();
                self.layer.metrics.overhead(spent);
            }
            match started.until_content(until).await {
                Ok(()) => return Ok(started),
                Err(None) => {
                    started.cancel.cancel();
                    return Err(self.timed_out());
                }
                Err(Some(error)) if !fails_over(error.kind) => return Err(error),
                Err(Some(error)) => {
                    // Cooled down in the store while another entry is free (SPEC R12.1).
                    search.failed(&error).await;
                    last = error;
                }
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
        let (messages, overrides) = match prompt {
            Prompt::Client => (r.messages.clone(), r.overrides.clone()),
            Prompt::Continue(partial) => (
                resume::messages(&r.messages, partial, entry),
                resume::overrides(&r.overrides, partial, entry),
            ),
        };
        (messages, fit_output(overrides, entry))
    }

    /// The client's own body when `prompt` is the client's and `entry` takes it as it is:
    /// its provider sends the client's dialect (SPEC R14.2). A continuation is always
    /// translated: it sends a conversation the client did not.
    fn forward_body(
        &self,
        prompt: &Prompt<'_>,
        entry: &ChainEntry,
    ) -> Option<(ForwardDialect, serde_json::Map<String, serde_json::Value>)> {
        let dialect = forward_dialect(self.dialect)?;
        if !matches!(prompt, Prompt::Client) || entry.handler.forwards() != Some(dialect) {
            return None;
        }
        // The ingress read this body already: it is a JSON object.
        let body = serde_json::from_slice(&self.body).ok()?;
        Some((dialect, body))
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
    pub(super) fn dropped(&self, entry: Option<&ChainEntry>) -> Vec<String> {
        let mut dropped = self.request.dropped.clone();
        if let Some(entry) = entry {
            let provider = entry.handler.dropped_overrides(&self.request.overrides);
            dropped.extend(provider.into_iter().map(str::to_owned));
        }
        dropped
    }

    pub(super) fn dropped_header(&self, response: &mut Response<Body>, entry: Option<&ChainEntry>) {
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

/// The dialect a client of `dialect` is forwarded in when its route's provider sends it
/// (SPEC R14.2). Responses is translated: the gateway keeps its answers for
/// `previous_response_id` in its own store.
fn forward_dialect(dialect: Dialect) -> Option<ForwardDialect> {
    match dialect {
        Dialect::AnthropicMessages => Some(ForwardDialect::AnthropicMessages),
        Dialect::ChatCompletions => Some(ForwardDialect::ChatCompletions),
        Dialect::Responses => None,
    }
}

/// The client's output limit fitted to `entry`'s model (SPEC R14.2): at most the catalogue's
/// most output tokens where it knows them (Claude Code asks for 64,000, which a model that
/// writes at most 16,384 answers with a 400), and a thinking budget below the limit (SPEC R3.3:
/// at most `max_tokens - 1`).
fn fit_output(mut overrides: RequestOverrides, entry: &ChainEntry) -> RequestOverrides {
    let most = entry.handler.get_model().info.max_tokens;
    if let Some(max) = overrides.max_tokens.as_mut()
        && most > 0
    {
        *max = (*max).min(most);
    }
    if let (Some(max), Some(budget)) = (
        overrides.max_tokens,
        overrides.thinking_budget_tokens.as_mut(),
    ) && *budget >= max
    {
        *budget = max.saturating_sub(1);
    }
    overrides
}
