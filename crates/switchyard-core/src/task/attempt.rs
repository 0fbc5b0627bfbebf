//! `attempt_api_request`: one prepared, probed and recovered request (SPEC R6).
//!
//! The step: wait (bounded) for MCP servers, build the system prompt, truncate the context when
//! the previous request came near the window (persisting the deleted range before sending),
//! create the stream and probe it up to the first *content* chunk. A failure before that point
//! is clean — nothing reached the user — and is recovered here: a context-window overflow
//! truncates once and retries at once, unless truncation removed nothing (then the identical
//! request is not sent again, R6.5); other retryable errors wait 2 s, 4 s, 8 s (or the
//! server's longer retry-after); auth, spend-limit, quota, entitlement, invalid-request and
//! content-blocked errors, and failures that waiting cannot fix (R7.4), are never retried, nor
//! is a rate limit whose reset is further away than the cap (it is named instead); when
//! retries run out the user decides (retry resets the counter and, after a long reset, waits
//! for it; or cancel). After the probe, every chunk and error passes straight to the caller.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures_util::StreamExt;
use std::sync::Arc;

use switchyard_api::handler::RetryStatus;
use switchyard_api::retry::task_retry_delay;
use switchyard_api::{
    ApiError, ApiHandler, ApiStream, ApiStreamChunk, CancellationToken, Deadlines, ErrorKind,
    Message, RequestOptions, ToolSpec,
};
use tokio::time::Instant;

use super::TaskEvent;
use super::observer::TurnObserver;
use super::turn::CancelReason;
use crate::context::{
    DeletedRange, Tokenizer, TruncationKeep, apply_deleted_range, context_budget,
    dedupe_saves_enough, estimate_message_tokens, estimate_message_tokens_with,
    get_next_truncation_range, messages_for_request, should_truncate,
};
use crate::limits::guard::{Choice, RequestLimits, fails_over};
use crate::limits::state::SlotGrant;
use crate::store::{StoreError, TaskStore};

/// How long to wait for MCP servers still connecting before a request (SPEC R6.1), in seconds.
pub const MCP_WAIT: Duration = Duration::from_secs(10);
/// Automatic retries before the user is asked (SPEC R6.7).
pub const MAX_AUTO_RETRIES: u32 = 3;
/// The longest server-requested wait honoured between automatic retries (SPEC R5.2).
pub const DEFAULT_RETRY_AFTER_CAP: Duration = switchyard_api::retry::DEFAULT_RETRY_AFTER_CAP;

/// A boxed future, for the small async traits below.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the request step needs to know of the MCP hub (SPEC R6.1, R11.2).
pub(crate) trait McpHub: Send + Sync {
    /// True while at least one server is still connecting.
    fn is_connecting(&self) -> bool;

    /// Enabled servers that are not connected (still connecting, or failed) and were not yet
    /// reported with this same reason; each is reported once until its state changes. The
    /// request step emits them as [`TaskEvent::McpServerUnavailable`] after its wait.
    fn newly_unavailable(&self) -> Vec<McpServerProblem> {
        Vec::new()
    }
}

/// An MCP server the request goes out without, and why, in plain words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct McpServerProblem {
    pub server: String,
    pub reason: String,
}

/// A hub with no servers.
#[cfg(test)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NoMcpServers;

#[cfg(test)]
impl McpHub for NoMcpServers {
    fn is_connecting(&self) -> bool {
        false
    }
}

/// The user's answer when automatic recovery is exhausted (SPEC R6.9, `api_req_failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureDecision {
    /// Try again: the automatic retry counter starts over.
    Retry,
    /// Give up on this request.
    Cancel,
}

/// Asks the user what to do about a failed request; non-interactive runs answer by policy.
pub trait FailureDecider: Send + Sync {
    /// Called with the error that ended automatic recovery.
    fn api_req_failed<'a>(&'a self, error: &'a ApiError) -> BoxFuture<'a, FailureDecision>;
}

/// Answers every failure the same way (`--on-failure fail|retry`).
#[derive(Debug, Clone, Copy)]
pub struct FixedDecision(pub FailureDecision);

impl FailureDecider for FixedDecision {
    fn api_req_failed<'a>(&'a self, _error: &'a ApiError) -> BoxFuture<'a, FailureDecision> {
        Box::pin(std::future::ready(self.0))
    }
}

/// The conversation as the request step sees it: the stored history (never cut) and the range
/// hidden from the model (SPEC R8.4).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Conversation {
    pub api_conversation_history: Vec<Message>,
    pub conversation_history_deleted_range: Option<DeletedRange>,
}

/// Deadlines and limits of the step.
#[derive(Debug, Clone, Copy)]
pub struct AttemptSettings {
    /// Automatic retries before the user is asked (default 3, SPEC R6.7).
    pub max_auto_retries: u32,
    /// First-content and idle deadlines of each request (SPEC R6.4), enforced by the provider
    /// layer; unset values take the provider's configured ones (120 s and 300 s by default).
    pub deadlines: Deadlines,
    /// The longest server-requested wait honoured between automatic retries (default 60 s,
    /// SPEC R5.2).
    pub retry_after_cap: Duration,
    /// How long to wait for MCP servers still connecting (default [`MCP_WAIT`], 10 s, SPEC R6.1).
    pub mcp_wait: Duration,
}

impl Default for AttemptSettings {
    fn default() -> Self {
        Self {
            max_auto_retries: MAX_AUTO_RETRIES,
            deadlines: Deadlines::default(),
            retry_after_cap: DEFAULT_RETRY_AFTER_CAP,
            mcp_wait: MCP_WAIT,
        }
    }
}

/// Everything one request step uses.
pub(crate) struct ApiRequestContext<'a> {
    pub handler: &'a dyn ApiHandler,
    pub mcp_hub: &'a dyn McpHub,
    pub decider: &'a dyn FailureDecider,
    /// Builds `(system_prompt, tools)`; called again for every run of the step (SPEC R6.10).
    pub system_prompt: &'a (dyn Fn() -> (String, Vec<ToolSpec>) + Send + Sync),
    /// Total tokens of the previous request (in + out + cache writes + cache reads), for R8.2.
    pub previous_request_total_tokens: u64,
    /// The index of this request's `api_req_started` event (SPEC R9.1); the request loop sets it.
    pub request_index: u32,
    pub settings: AttemptSettings,
    /// Cancels the step's requests (SPEC R9.5): a cancelled request ends with
    /// `ErrorKind::Cancelled`, which is never retried.
    pub cancel: CancellationToken,
    /// Failover, spend caps and rate limits (SPEC R12); `None`: requests go to `handler`
    /// with none of them.
    pub limits: Option<LimitsContext<'a>>,
}

/// The R12 state a request step consults: the task's limits, its store and its id.
#[derive(Clone, Copy)]
pub(crate) struct LimitsContext<'a> {
    pub limits: &'a RequestLimits,
    pub store: &'a dyn TaskStore,
    pub task_id: &'a str,
}

/// Prepares, sends and probes one request, recovering failures before the first content chunk
/// as SPEC R6 says. Returns the stream positioned at its first content (held usage chunks are
/// yielded first), wrapped with the idle deadline; or the error the user chose not to retry.
///
/// `conversation` is updated in place when truncation changes the deleted range, and
/// `observer.range_changed` is awaited with the new range before the request is sent (R6.3),
/// so the caller can persist it.
#[cfg(test)]
pub(crate) async fn attempt_api_request(
    ctx: &ApiRequestContext<'_>,
    conversation: &mut Conversation,
    observer: &mut dyn TurnObserver,
) -> Result<ApiStream, ApiError> {
    attempt_api_request_on(ctx, conversation, observer)
        .await
        .map(|(stream, _)| stream)
}

/// [`attempt_api_request`], also returning the handler that answered: `ctx.handler`, or with
/// [`ApiRequestContext::limits`] the failover entry the request went to (SPEC R12.1), so its
/// usage is priced at that model's prices.
pub(crate) async fn attempt_api_request_on<'a>(
    ctx: &ApiRequestContext<'a>,
    conversation: &mut Conversation,
    observer: &mut dyn TurnObserver,
) -> Result<(ApiStream, &'a dyn ApiHandler), ApiError> {
    let mut auto_retries: u32 = 0;
    // Set when this request already truncated for an overflow (R6.5); cleared after a retry.
    let mut did_automatically_retry = false;
    let mut previous_total = ctx.previous_request_total_tokens;
    loop {
        wait_for_mcp(ctx.mcp_hub, ctx.settings.mcp_wait).await;
        for problem in ctx.mcp_hub.newly_unavailable() {
            observer
                .event(TaskEvent::McpServerUnavailable {
                    server: problem.server,
                    reason: problem.reason,
                })
                .await;
        }
        let (system_prompt, tools) = (ctx.system_prompt)();

        // R12.1: the first entry of the chain that is not cooling down.
        let (entry, handler, alternative) = match ctx.limits {
            None => (0, ctx.handler, false),
            Some(l) => match choose_entry(ctx, l, observer).await? {
                Some(chosen) => chosen,
                None => continue,
            },
        };

        // R8.2 / R6.3: truncate before the request when the last one came near the window,
        // or (**Improve**) when what is about to be sent is estimated to (4 bytes per token),
        // so a first request or a pasted file cannot overflow unseen.
        // R8.6: when replacing earlier copies of re-read files saves 30 % of the request, the
        // previous request's size no longer calls for truncation.
        let model = handler.get_model();
        let budget = context_budget(&model.info);
        let tokenizer = Tokenizer::for_model(&model.id);
        let estimate = |conversation: &Conversation| {
            let visible = messages_for_request(
                &conversation.api_conversation_history,
                conversation.conversation_history_deleted_range,
            );
            // bytes/4 first; the model's tokenizer, where one is known, decides once the
            // rough figure reaches half the budget (bytes/4 is off by well under 2× for text).
            let rough = estimate_message_tokens(&system_prompt, &visible);
            if rough >= budget.max_allowed_size / 2 {
                estimate_message_tokens_with(tokenizer, &system_prompt, &visible)
            } else {
                rough
            }
        };
        let keep = should_truncate(previous_total, budget)
            .filter(|_| {
                !dedupe_saves_enough(
                    &conversation.api_conversation_history,
                    conversation.conversation_history_deleted_range,
                )
            })
            .or_else(|| should_truncate(estimate(conversation), budget));
        if let Some(keep) = keep {
            truncate(conversation, keep, observer).await;
            // Improve: keep cutting while the estimate is still over the budget and a cut
            // still hides something, so one pasted file cannot overflow the first request.
            while estimate(conversation) >= budget.max_allowed_size
                && truncate(conversation, TruncationKeep::Quarter, observer).await
            {}
        }
        previous_total = 0;

        let messages = messages_for_request(
            &conversation.api_conversation_history,
            conversation.conversation_history_deleted_range,
        );
        if let Some(l) = ctx.limits {
            // R12.2, R12.3: the spend caps, then a slot in the rate-limit window, both for
            // the estimated input of what is about to be sent.
            let input_tokens = estimate(conversation);
            l.limits
                .check_spend(l.store, l.task_id, entry, input_tokens)
                .await
                .map_err(store_error)??;
            wait_for_rate_slot(ctx, l, entry, input_tokens, observer).await?;
        }
        // Provider-level retries (SPEC R5.3) are reported through a channel while probing;
        // response headers too, for the rate limits the provider states (R12.3).
        let (retry_tx, mut retry_rx) = tokio::sync::mpsc::unbounded_channel();
        let (heard_tx, mut heard_rx) = tokio::sync::mpsc::unbounded_channel();
        let on_response: Option<switchyard_api::ResponseObserver> = ctx.limits.map(|_| {
            Arc::new(move |_status: u16, headers: &reqwest::header::HeaderMap| {
                if let Some(found) =
                    switchyard_api::rate_limit_headers(headers, std::time::SystemTime::now())
                {
                    let _ = heard_tx.send(found);
                }
            }) as switchyard_api::ResponseObserver
        });
        let options = RequestOptions {
            cancel: ctx.cancel.clone(),
            on_retry: Some(Arc::new(move |status: RetryStatus| {
                let _ = retry_tx.send(status);
            })),
            deadlines: ctx.settings.deadlines,
            fail_fast: alternative,
            on_response,
            ..RequestOptions::default()
        };
        let stream = handler.create_message(&system_prompt, &messages, &tools, options);
        let probed = probe(stream, &mut retry_rx, observer).await;
        if let Some(l) = ctx.limits {
            while let Ok(heard) = heard_rx.try_recv() {
                l.limits
                    .learn(l.store, entry, &heard)
                    .await
                    .map_err(store_error)?;
            }
        }
        let error = match probed {
            Ok(stream) => return Ok((stream, handler)),
            Err(e) => e.with_origin(handler.provider_id(), &handler.get_model().id),
        };
        // A cancellation is the user's choice: no retry, no question (SPEC R9.5).
        if error.kind == ErrorKind::Cancelled {
            return Err(error);
        }
        // R12.1: with another entry free, a failure of this one cools it down and the request
        // moves on at once (no wait, no retry counted). The last free entry is not cooled: the
        // waits and retries of R5/R6 apply to it as before.
        if let Some(l) = ctx.limits.filter(|_| alternative && fails_over(error.kind)) {
            let cooldown = l
                .limits
                .cool_down(l.store, entry, &error)
                .await
                .map_err(store_error)?;
            observer
                .event(streaming_failed(ctx.request_index, &error))
                .await;
            if let Ok(Choice::Entry { index, .. }) = l.limits.choose(l.store).await {
                observer
                    .event(TaskEvent::Fallback {
                        from: l.limits.entries[entry].key.label(),
                        to: l.limits.entries[index].key.label(),
                        reason: error.kind.as_str().to_owned(),
                        message: error.to_string(),
                        until: rfc3339(cooldown.until_ms),
                    })
                    .await;
            }
            continue;
        }

        // R6.5: the first overflow of this request truncates to a quarter and retries at once.
        let mut error = error;
        if error.kind == ErrorKind::ContextWindowExceeded && !did_automatically_retry {
            if truncate(conversation, TruncationKeep::Quarter, observer).await {
                did_automatically_retry = true;
                observer.event(TaskEvent::ApiReqRetried).await;
                continue;
            }
            // R6.5 Improve: nothing was removed, so the identical request is not sent again.
            error = nothing_left_to_truncate(error);
        } else if error.kind == ErrorKind::ContextWindowExceeded {
            // R6.6: a second overflow. With more than 3 visible messages a manual retry can
            // truncate further; with 3 or fewer nothing is left to cut: show the original error.
            let visible = apply_deleted_range(
                &conversation.api_conversation_history,
                conversation.conversation_history_deleted_range,
            )
            .len();
            if visible > 3 {
                error.message =
                    "context window exceeded; retry to truncate the conversation further".into();
            }
        }
        // R7.4, R5.2: a wait the provider asks for beyond the cap is not waited out in
        // cap-long slices that each spend a request; it is named, and the user (or policy)
        // decides (tests/cases H14b).
        let waits_too_long = error
            .retry_after
            .is_some_and(|d| d > ctx.settings.retry_after_cap);
        if error.kind != ErrorKind::ContextWindowExceeded
            && error.is_retryable()
            && !waits_too_long
            && auto_retries < ctx.settings.max_auto_retries
        {
            // R6.7 / R6.8: automatic retry after 2 s, 4 s, 8 s (or a longer retry-after).
            auto_retries += 1;
            // R6.8: the failed request is marked streaming_failed with the serialized error
            // (R6.11: message, status, request id, code, provider, model; never a key).
            observer
                .event(streaming_failed(ctx.request_index, &error))
                .await;
            wait_and_retry(&ctx.settings, auto_retries, &error, observer).await;
            did_automatically_retry = false;
            continue;
        }

        // R6.9: retries used up, or never retryable (R6.7, R7.4, R7.5).
        if error.is_retryable()
            && !waits_too_long
            && error.kind != ErrorKind::ContextWindowExceeded
            && ctx.settings.max_auto_retries > 0
        {
            observer
                .event(TaskEvent::ErrorRetry {
                    attempt: auto_retries,
                    max_attempts: ctx.settings.max_auto_retries,
                    delay_seconds: 0.0,
                    error_message: error.to_string(),
                    failed: true,
                })
                .await;
        }
        observer
            .event(TaskEvent::ApiReqFailed {
                kind: error.kind.as_str().to_owned(),
                message: error.to_string(),
            })
            .await;
        match ctx.decider.api_req_failed(&error).await {
            FailureDecision::Cancel => return Err(error),
            FailureDecision::Retry => {
                auto_retries = 0;
                if error.kind == ErrorKind::ContextWindowExceeded {
                    let _ = truncate(conversation, TruncationKeep::Quarter, observer).await;
                }
                if let Some(wait) = error.retry_after.filter(|_| waits_too_long) {
                    // The user chose to retry: wait as long as the provider asked.
                    announce_and_wait(&ctx.settings, 1, wait, &error, observer).await;
                }
                // R6.10: record the retry, clear the flag, and run the whole step again.
                observer.event(TaskEvent::ApiReqRetried).await;
                did_automatically_retry = false;
            }
        }
    }
}

/// What is appended to a context-window error when truncation can remove nothing more (SPEC
/// R6.5 **Improve**).
const NOTHING_TO_TRUNCATE: &str = "nothing is left to truncate: the prompt, the system prompt \
    and the tools alone exceed the model's context window; shorten the prompt or use a model \
    with a larger context window (on a local server, load the model with a larger context \
    length)";

/// `error`, an overflow that truncation cannot fix, with a plain explanation; it is not
/// retried automatically.
pub(super) fn nothing_left_to_truncate(mut error: ApiError) -> ApiError {
    error.message = format!(
        "{}; {NOTHING_TO_TRUNCATE}",
        error.message.trim_end().trim_end_matches('.')
    );
    error.permanent = true;
    error
}

/// Automatic retry `attempt` (from 1) after `error` (SPEC R6.8, R9.3): says so with
/// `error_retry`, waits 2 s, 4 s, 8 s … (or the error's longer retry-after, capped), then says
/// `api_req_retried`.
pub(super) async fn wait_and_retry(
    settings: &AttemptSettings,
    attempt: u32,
    error: &ApiError,
    observer: &mut dyn TurnObserver,
) {
    let delay = task_retry_delay(attempt, error.retry_after, settings.retry_after_cap);
    announce_and_wait(settings, attempt, delay, error, observer).await;
    observer.event(TaskEvent::ApiReqRetried).await;
}

/// Says `error_retry` for retry `attempt` after `delay`, then waits that long.
async fn announce_and_wait(
    settings: &AttemptSettings,
    attempt: u32,
    delay: Duration,
    error: &ApiError,
    observer: &mut dyn TurnObserver,
) {
    observer
        .event(TaskEvent::ErrorRetry {
            attempt,
            max_attempts: settings.max_auto_retries,
            delay_seconds: delay.as_secs_f64(),
            error_message: error.to_string(),
            failed: false,
        })
        .await;
    tokio::time::sleep(delay).await;
}

/// Applies the next truncation range for `keep` and reports it when it changed; returns
/// whether it changed.
pub(super) async fn truncate(
    conversation: &mut Conversation,
    keep: TruncationKeep,
    observer: &mut dyn TurnObserver,
) -> bool {
    let next = get_next_truncation_range(
        &conversation.api_conversation_history,
        conversation.conversation_history_deleted_range,
        keep,
    );
    let next = (next.1 >= next.0)
        .then_some(next)
        .or(conversation.conversation_history_deleted_range);
    if next != conversation.conversation_history_deleted_range {
        conversation.conversation_history_deleted_range = next;
        observer.range_changed(next).await;
        true
    } else {
        false
    }
}

/// Waits while MCP servers are connecting, at most `wait` ([`MCP_WAIT`] by default); never
/// fails (SPEC R6.1). Polls every 50 ms.
async fn wait_for_mcp(hub: &dyn McpHub, wait: Duration) {
    let deadline = Instant::now() + wait;
    while hub.is_connecting() {
        if Instant::now() >= deadline {
            tracing::debug!(
                "MCP servers are still connecting after {} s; sending the request without them",
                wait.as_secs_f64()
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(50).min(wait)).await;
    }
}

/// Reads `stream` up to its first content chunk (SPEC R6.4 **Improve**): usage chunks before it
/// are held and released with it. A stream that ends first is an empty response (R9.4). The
/// first-content and idle deadlines are the provider layer's (`RequestOptions::deadlines`): a
/// stream that sends no content in time ends with a `Timeout` error.
async fn probe(
    mut stream: ApiStream,
    retries: &mut tokio::sync::mpsc::UnboundedReceiver<RetryStatus>,
    observer: &mut dyn TurnObserver,
) -> Result<ApiStream, ApiError> {
    let mut held: Vec<ApiStreamChunk> = Vec::new();
    loop {
        let next = tokio::select! {
            biased;
            Some(status) = retries.recv() => {
                observer.event(TaskEvent::RetryStatus {
                    attempt: status.attempt,
                    max_attempts: status.max_attempts,
                    delay_seconds: status.delay.as_secs_f64(),
                    error_snippet: status.error.to_string().chars().take(200).collect(),
                }).await;
                continue;
            }
            next = stream.next() => next,
        };
        match next {
            None => {
                return Err(ApiError::new(
                    ErrorKind::Server,
                    "the provider returned an empty response",
                ));
            }
            Some(Err(e)) => return Err(e),
            Some(Ok(chunk)) => {
                let content = chunk.is_content();
                held.push(chunk);
                if content {
                    return Ok(with_held(held, stream));
                }
            }
        }
    }
}

/// `held` chunks first, then the rest of `stream`.
fn with_held(held: Vec<ApiStreamChunk>, stream: ApiStream) -> ApiStream {
    Box::pin(futures_util::stream::iter(held.into_iter().map(Ok)).chain(stream))
}

/// The attempt `request_index` ended before content with `error`, which goes on to a retry or
/// a failover (R6.8: `streaming_failed` with the error serialized as JSON; R6.11: never a key).
fn streaming_failed(request_index: u32, error: &ApiError) -> TaskEvent {
    TaskEvent::ApiReqFinished {
        request_index,
        cancel_reason: Some(CancelReason::StreamingFailed),
        streaming_failed_message: serde_json::to_string(error).ok(),
    }
}

/// A store failure in the request step, as the error that ends the turn.
fn store_error(e: StoreError) -> ApiError {
    ApiError::new(ErrorKind::InvalidRequest, e.to_string())
}

/// `ms` (Unix milliseconds) as an RFC 3339 UTC time, to the second.
pub(crate) fn rfc3339(ms: i64) -> String {
    let t = switchyard_api::time::utc(ms.div_euclid(1000));
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// The entry the step sends to (SPEC R12.1): `(index, handler, another entry is free)`. When
/// every entry is cooling down the decider is asked (with the earliest reset named): retry
/// waits for it with the countdown and returns `None` (run the step again), cancel fails.
async fn choose_entry<'a>(
    ctx: &ApiRequestContext<'a>,
    l: LimitsContext<'a>,
    observer: &mut dyn TurnObserver,
) -> Result<Option<(usize, &'a dyn ApiHandler, bool)>, ApiError> {
    match l.limits.choose(l.store).await.map_err(store_error)? {
        Choice::Entry { index, alternative } => Ok(Some((
            index,
            l.limits.entries[index].handler.as_ref(),
            alternative,
        ))),
        Choice::AllCooling { until_ms, first } => {
            let wait =
                Duration::from_millis(u64::try_from(until_ms - l.limits.now_ms()).unwrap_or(0));
            let mut error = ApiError::new(
                ErrorKind::RateLimited,
                format!(
                    "every provider of the failover chain is cooling down; the first back is {} at {} (it failed with {})",
                    first.entry.label(),
                    rfc3339(until_ms),
                    first.reason
                ),
            );
            error.retry_after = Some(wait);
            observer
                .event(TaskEvent::ApiReqFailed {
                    kind: error.kind.as_str().to_owned(),
                    message: error.to_string(),
                })
                .await;
            match ctx.decider.api_req_failed(&error).await {
                FailureDecision::Cancel => Err(error),
                FailureDecision::Retry => {
                    announce_and_wait(&ctx.settings, 1, wait, &error, observer).await;
                    observer.event(TaskEvent::ApiReqRetried).await;
                    Ok(None)
                }
            }
        }
    }
}

/// Waits until the rate-limit window of entry `entry` has room for `input_tokens` (SPEC
/// R12.3), saying each wait with `rate_limit_wait` (the countdown), then takes the slot.
async fn wait_for_rate_slot(
    ctx: &ApiRequestContext<'_>,
    l: LimitsContext<'_>,
    entry: usize,
    input_tokens: u64,
    observer: &mut dyn TurnObserver,
) -> Result<(), ApiError> {
    loop {
        match l
            .limits
            .try_slot(l.store, entry, input_tokens)
            .await
            .map_err(store_error)?
        {
            SlotGrant::Granted => return Ok(()),
            SlotGrant::Wait { until_ms, reason } => {
                let wait = Duration::from_millis(
                    u64::try_from(until_ms - l.limits.now_ms())
                        .unwrap_or(0)
                        .max(1),
                );
                let e = &l.limits.entries[entry];
                observer
                    .event(TaskEvent::RateLimitWait {
                        provider: e.key.provider.clone(),
                        model: e.key.model.clone(),
                        limit: reason.as_str().to_owned(),
                        delay_seconds: wait.as_secs_f64(),
                    })
                    .await;
                tokio::select! {
                    biased;
                    _ = ctx.cancel.cancelled() => {
                        return Err(ApiError::new(ErrorKind::Cancelled, "the request was cancelled while waiting for the rate limit"));
                    }
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}
