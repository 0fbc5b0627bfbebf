//! The cursor over a route's entries: it gives the attempt that answers a request and the
//! one that continues a cut answer.
//! Spec: R14.4, R14.2, R14.9, R12.1.

use std::sync::Arc;

use switchyard_api::{
    ApiError, ApiStream, ChainEntry, ErrorKind, ForwardDialect, Message, RequestOptions,
    RequestOverrides, fails_over,
};
use tokio::time::Instant;

use super::answer::estimate_input;
use super::attempt::{Attempt, Prompt};
use super::continuation;
use super::search::Search;
use crate::body::Sent;
use crate::ingress::{Dialect, GatewayRequest};
use crate::request::Chain;
use crate::shared::Shared;
use crate::telemetry::{AttemptTrace, SpanParent, Why};

/// A request's place in its route's chain.
pub(super) struct Cursor {
    shared: Arc<Shared>,
    chain: Chain,
    request: GatewayRequest,
    sent: Sent,
    forwards_as: Option<ForwardDialect>,
    /// The request's input estimate, for its limits.
    input_tokens: u64,
    /// When the request's headers were read: the gateway's overhead runs from there.
    received: Instant,
    until: Instant,
    /// The entry answering, once one started.
    at: usize,
    /// What each attempt's span is made under.
    spans: SpanParent,
}

impl Cursor {
    pub(super) fn new(
        shared: Arc<Shared>,
        (chain, request, sent): (Chain, GatewayRequest, Sent),
        dialect: Dialect,
        (input_tokens, received, until): (u64, Instant, Instant),
    ) -> Self {
        Self {
            shared,
            chain,
            request,
            sent,
            forwards_as: dialect.rules().forwards_as(),
            input_tokens,
            received,
            until,
            at: 0,
            spans: SpanParent::default(),
        }
    }

    /// Traces each attempt under `spans`.
    pub(super) fn traced(&mut self, spans: SpanParent) {
        self.spans = spans;
    }

    pub(super) fn request(&self) -> &GatewayRequest {
        &self.request
    }

    pub(super) fn entry(&self, at: usize) -> &ChainEntry {
        &self.chain[at]
    }

    pub(super) fn until(&self) -> Instant {
        self.until
    }

    /// How long an answer may go without a chunk once its content started.
    pub(super) fn chunk_gap(&self) -> std::time::Duration {
        self.shared.chunk_gap
    }

    pub(super) async fn first(&mut self) -> Result<Attempt, ApiError> {
        self.choose(0, &Prompt::Client).await
    }

    /// Whether an entry follows the one answering. A cut answer is continued there at once,
    /// else on the same entry after a wait.
    pub(super) fn another_entry(&self) -> bool {
        self.at + 1 < self.chain.len()
    }

    /// The attempt that continues the cut answer `partial`.
    pub(super) async fn continuation(&mut self, partial: &str) -> Result<Attempt, ApiError> {
        let from = if self.another_entry() {
            self.at + 1
        } else {
            self.at
        };
        self.choose(from, &Prompt::Continue(partial)).await
    }

    /// What the request could not carry, and what entry `at`'s provider could not.
    pub(super) fn dropped(&self, at: Option<usize>) -> Vec<String> {
        let mut dropped = self.request.dropped.clone();
        if let Some(entry) = at.map(|at| &self.chain[at]) {
            let provider = entry.handler.dropped_overrides(&self.request.overrides);
            dropped.extend(provider.into_iter().map(str::to_owned));
        }
        dropped
    }

    /// Tries each entry from `from` on until one yields content or ends; a failure before
    /// content goes on to the next entry when the task layer's rule says so.
    async fn choose(&mut self, from: usize, prompt: &Prompt<'_>) -> Result<Attempt, ApiError> {
        let mut last = ApiError::new(ErrorKind::Server, "The route has no provider to send to.");
        let times = (self.input_tokens, self.until);
        let store = Arc::clone(&self.shared.store);
        let cache = Arc::clone(&self.shared.limits_cache);
        let mut search = Search::new((store, cache), self.shared.caps, &self.chain[from..], times);
        let mut first = from == 0 && matches!(prompt, Prompt::Client);
        let mut why = match prompt {
            Prompt::Client => Why::First,
            Prompt::Continue(_) => Why::Continuation,
        };
        while let Some(offset) = search.next().await? {
            let at = from + offset;
            let entry = &self.chain[at];
            let options = RequestOptions {
                // Another entry is free: the deadline is not spent on this one's retries.
                fail_fast: search.alternative(),
                on_response: search.hear(),
                bounds: self.shared.bounds,
                ..RequestOptions::default()
            };
            let cancel = options.cancel.clone();
            let budget = self.request.overrides.thinking_budget_tokens;
            let mut trace = (self.spans).attempt(entry, why, budget);
            why = Why::Failover;
            let (stream, input_tokens, forwarded) = self.send(entry, prompt, options, &trace);
            trace.forwarded(forwarded);
            let mut attempt = Attempt {
                at,
                stream,
                read: Vec::new(),
                cancel,
                input_tokens,
                forwarded,
                trace,
            };
            if std::mem::take(&mut first) {
                // The handler sends the first upstream request at this first poll.
                self.shared.metrics.overhead(self.received.elapsed());
            }
            match attempt.until_content(self.until).await {
                Ok(()) => {
                    self.at = at;
                    return Ok(attempt);
                }
                Err(None) => {
                    attempt.cancel.cancel();
                    let error = self.timed_out();
                    std::mem::take(&mut attempt.trace).failed(&error, None);
                    return Err(error);
                }
                Err(Some(error)) if !fails_over(error.kind) => {
                    std::mem::take(&mut attempt.trace).failed(&error, None);
                    return Err(error);
                }
                Err(Some(error)) => {
                    std::mem::take(&mut attempt.trace).failed(&error, None);
                    // Cooled down in the store while another entry is free.
                    search.failed(&error).await;
                    last = error;
                }
            }
        }
        Err(last)
    }

    /// Sends `prompt` to `entry`, traced as `trace`: its stream, its estimated input, and
    /// whether it was forwarded.
    fn send(
        &self,
        entry: &ChainEntry,
        prompt: &Prompt<'_>,
        mut options: RequestOptions,
        trace: &AttemptTrace,
    ) -> (ApiStream, u64, bool) {
        let r = &self.request;
        let (messages, overrides) = self.prompt_for(prompt, entry);
        options.overrides = overrides;
        let input_tokens = estimate_input(&r.system_prompt, &messages, &r.tools);
        let Some((dialect, body)) = self.forward_body(prompt, entry) else {
            options.headers.extend_from_slice(trace.headers());
            let stream =
                (entry.handler).create_message(&r.system_prompt, &messages, &r.tools, options);
            return (stream, input_tokens, false);
        };
        // Anthropic's flags mean nothing, or a 400, to other servers of its dialect
        // (mnfst/llm-gateway#2910).
        if entry.provider_id == "anthropic" {
            options.headers = self.sent.forward_headers.clone();
        }
        options.headers.extend_from_slice(trace.headers());
        (
            entry.handler.forward(dialect, body, options),
            input_tokens,
            true,
        )
    }

    fn prompt_for(
        &self,
        prompt: &Prompt<'_>,
        entry: &ChainEntry,
    ) -> (Vec<Message>, RequestOverrides) {
        let r = &self.request;
        let (messages, overrides) = match prompt {
            Prompt::Client => (r.messages.clone(), r.overrides.clone()),
            Prompt::Continue(partial) => (
                continuation::messages(&r.messages, partial, entry),
                continuation::overrides(&r.overrides, partial, entry),
            ),
        };
        (messages, fit_output(overrides, entry))
    }

    /// The client's own body, when `prompt` is the client's and `entry`'s provider speaks its
    /// dialect. A continuation is always translated: it sends a conversation the client did not.
    fn forward_body(
        &self,
        prompt: &Prompt<'_>,
        entry: &ChainEntry,
    ) -> Option<(ForwardDialect, serde_json::Map<String, serde_json::Value>)> {
        let dialect = self.forwards_as?;
        if !matches!(prompt, Prompt::Client) || entry.handler.forwards() != Some(dialect) {
            return None;
        }
        // The ingress read this body already: it is a JSON object.
        let body = serde_json::from_slice(&self.sent.bytes).ok()?;
        Some((dialect, body))
    }

    fn timed_out(&self) -> ApiError {
        let seconds = self.shared.deadline.as_secs_f64();
        ApiError::new(
            ErrorKind::Timeout,
            format!("No provider answered within the gateway's request deadline of {seconds} s."),
        )
    }
}

/// The client's output limit fitted to `entry`'s model, and a thinking budget below it: Claude
/// Code asks for 64,000 tokens, which a model that writes at most 16,384 answers with a 400.
/// Spec: R14.2, R3.3.
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
