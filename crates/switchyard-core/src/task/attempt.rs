//! One request step: wait for MCP servers, build the prompt, fit the context window, send,
//! probe to the first content chunk, and recover a failure before that chunk.
//! Spec: R5.2, R6.1, R6.2, R6.3, R6.4, R6.5, R6.6, R6.7, R6.8, R6.9, R6.10, R6.11, R7.4, R7.5,
//! R8.2, R8.6, R9.5, R12.1, R12.2, R12.3.

use switchyard_api::{
    ApiError, ApiHandler, ApiStream, CancellationToken, ContentBlock, ErrorKind, Message, NOT_SENT,
    ToolSpec,
};

use super::conversation::Conversation;
use super::events::{TaskEvent, streaming_failed};
use super::failover::{LimitsContext, Route, admit, choose_entry, fail_over, learn_limits};
use super::mcp_wait::{McpHub, wait_and_report};
use super::observer::TurnObserver;
use super::probe::{probe, request_options};
use super::recovery::{
    FailureDecider, FailureDecision, announce_and_wait, ask, nothing_left_to_truncate, truncate,
    wait_and_retry,
};
use super::settings::AttemptSettings;
use crate::context::{
    ContextBudget, Tokenizer, TruncationKeep, apply_deleted_range, context_budget,
    dedupe_saves_enough, estimate_message_tokens, estimate_message_tokens_with, should_truncate,
};

pub(crate) struct ApiRequestContext<'a> {
    pub handler: &'a dyn ApiHandler,
    pub mcp_hub: &'a dyn McpHub,
    pub decider: &'a dyn FailureDecider,
    /// Builds the system prompt and tools again for every run of the step.
    pub system_prompt: &'a (dyn Fn() -> (String, Vec<ToolSpec>) + Send + Sync),
    /// Total tokens of the previous request, in, out and cache, to decide truncation.
    pub previous_request_total_tokens: u64,
    /// The index of this request's `api_req_started` event.
    pub request_index: u32,
    pub settings: AttemptSettings,
    /// A cancelled request ends with `ErrorKind::Cancelled`, which is never retried.
    pub cancel: CancellationToken,
    /// Failover, spend caps and rate limits; without it requests go to `handler` alone.
    pub limits: Option<LimitsContext<'a>>,
}

#[derive(Debug, Default)]
struct RetryState {
    auto_retries: u32,
    /// This request already truncated for an overflow; cleared after a retry.
    did_automatically_retry: bool,
}

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

/// `attempt_api_request`, also returning the handler that answered, whose prices apply.
pub(crate) async fn attempt_api_request_on<'a>(
    ctx: &ApiRequestContext<'a>,
    conversation: &mut Conversation,
    observer: &mut dyn TurnObserver,
) -> Result<(ApiStream, &'a dyn ApiHandler), ApiError> {
    let mut state = RetryState::default();
    let mut previous_total = ctx.previous_request_total_tokens;
    loop {
        wait_and_report(ctx.mcp_hub, ctx.settings.mcp_wait, observer).await;
        let (system_prompt, tools) = (ctx.system_prompt)();
        let Some(route) = route(ctx, observer).await? else {
            continue;
        };
        let sizer = Sizer::new(route.handler, &system_prompt);
        fit_context_window(conversation, previous_total, &sizer, observer).await;
        previous_total = 0;
        // Made once per run: a prompt of megabytes is not copied again for each estimate.
        let visible = conversation.visible();
        let input_tokens = sizer
            .refuse_overflow(route.handler, &visible)
            .map_err(|e| *e)?;
        if let Some(l) = ctx.limits {
            admit(l, route.entry, input_tokens, &ctx.cancel, observer).await?;
        }
        match send_and_probe(ctx, &route, &system_prompt, &tools, &visible, observer).await? {
            Ok(stream) => return Ok((stream, route.handler)),
            Err(error) => recover(ctx, &route, error, conversation, &mut state, observer).await?,
        }
    }
}

async fn route<'a>(
    ctx: &ApiRequestContext<'a>,
    observer: &mut dyn TurnObserver,
) -> Result<Option<Route<'a>>, ApiError> {
    match ctx.limits {
        None => Ok(Some(Route {
            entry: 0,
            handler: ctx.handler,
            alternative: false,
        })),
        Some(l) => choose_entry(l, ctx.decider, &ctx.settings, observer).await,
    }
}

struct Sizer<'p> {
    system_prompt: &'p str,
    budget: ContextBudget,
    tokenizer: Tokenizer,
}

impl<'p> Sizer<'p> {
    fn new(handler: &dyn ApiHandler, system_prompt: &'p str) -> Self {
        let model = handler.get_model();
        Self {
            system_prompt,
            budget: context_budget(&model.info),
            tokenizer: Tokenizer::for_model(&model.id),
        }
    }

    /// Tokens at 4 bytes each, counted with the model's tokenizer from half the budget on.
    fn estimate(&self, conversation: &Conversation) -> u64 {
        self.estimate_visible(&conversation.visible())
    }

    fn estimate_visible(&self, visible: &[Message]) -> u64 {
        let rough = estimate_message_tokens(self.system_prompt, visible);
        if rough >= self.budget.max_allowed_size / 2 {
            estimate_message_tokens_with(self.tokenizer, self.system_prompt, visible)
        } else {
            rough
        }
    }
}

impl Sizer<'_> {
    /// Refuses what exceeds the whole window even truncated, naming the sizes; never retried.
    fn refuse_overflow(
        &self,
        handler: &dyn ApiHandler,
        visible: &[Message],
    ) -> Result<u64, Box<ApiError>> {
        let window = self.budget.context_window;
        let estimate = self.estimate_visible(visible);
        if estimate <= window {
            return Ok(estimate);
        }
        let bytes = self.system_prompt.len()
            + visible
                .iter()
                .flat_map(|m| &m.content)
                .map(block_bytes)
                .sum::<usize>();
        let model = handler.get_model();
        let counted = match self.tokenizer {
            Tokenizer::Bytes => "at 4 bytes per token",
            _ => "with the model's tokenizer",
        };
        Err(Box::new(ApiError::new(
            ErrorKind::ContextWindowExceeded,
            format!(
                "the request was not sent: it is about {estimate} tokens ({bytes} bytes, counted {counted}, with the system prompt), more than the context window of {window} tokens of {provider} model {id}; shorten the prompt or the file, or choose a model with a larger context window",
                provider = handler.provider_id(),
                id = model.id,
            ),
        )
        .with_code(NOT_SENT)
        .permanent()))
    }
}

fn block_bytes(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text { text } => text.len(),
        ContentBlock::Image { .. } => 0,
        ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
        ContentBlock::ToolResult { content, .. } => content.len(),
        ContentBlock::Thinking { thinking, .. } => thinking.len(),
        ContentBlock::RedactedThinking { data } => data.len(),
    }
}

/// Truncates when the last request came near the window or this one is estimated to.
async fn fit_context_window(
    conversation: &mut Conversation,
    previous_total: u64,
    sizer: &Sizer<'_>,
    observer: &mut dyn TurnObserver,
) {
    let budget = sizer.budget;
    let keep = should_truncate(previous_total, budget)
        .filter(|_| {
            !dedupe_saves_enough(
                &conversation.api_conversation_history,
                conversation.conversation_history_deleted_range,
            )
        })
        .or_else(|| should_truncate(sizer.estimate(conversation), budget));
    if let Some(keep) = keep {
        truncate(conversation, keep, observer).await;
        // Keep cutting while over budget, so one pasted file cannot overflow the first request.
        while sizer.estimate(conversation) >= budget.max_allowed_size
            && truncate(conversation, TruncationKeep::Quarter, observer).await
        {}
    }
}

/// Sends and probes; the outer error is a store failure, the inner one the request's.
async fn send_and_probe(
    ctx: &ApiRequestContext<'_>,
    route: &Route<'_>,
    system_prompt: &str,
    tools: &[ToolSpec],
    messages: &[Message],
    observer: &mut dyn TurnObserver,
) -> Result<Result<ApiStream, ApiError>, ApiError> {
    let handler = route.handler;
    let (options, mut reports) = request_options(
        &ctx.cancel,
        ctx.settings.deadlines,
        route.alternative,
        ctx.limits.is_some(),
        ctx.settings.bounds,
    );
    let stream = handler.create_message(system_prompt, messages, tools, options);
    let probed = probe(stream, &mut reports.retries, observer).await;
    if let Some(l) = ctx.limits {
        learn_limits(l, route.entry, &mut reports.heard, observer).await?;
    }
    Ok(probed.map_err(|e| e.with_origin(handler.provider_id(), &handler.get_model().id)))
}

/// Recovers `error`, a failure before content: `Ok` runs the step again, `Err` ends it.
async fn recover(
    ctx: &ApiRequestContext<'_>,
    route: &Route<'_>,
    error: ApiError,
    conversation: &mut Conversation,
    state: &mut RetryState,
    observer: &mut dyn TurnObserver,
) -> Result<(), ApiError> {
    // A cancellation is the user's choice: no retry, no question.
    if error.kind == ErrorKind::Cancelled {
        return Err(error);
    }
    if let Some(l) = ctx.limits {
        if fail_over(l, route, ctx.request_index, &error, observer).await? {
            return Ok(());
        }
    }
    let Some(error) = recover_overflow(error, conversation, state, observer).await else {
        return Ok(());
    };
    // A wait beyond the cap is named for the user, not waited out in slices that each cost.
    let waits_too_long = error
        .retry_after
        .is_some_and(|d| d > ctx.settings.retry_after_cap);
    let retryable =
        error.kind != ErrorKind::ContextWindowExceeded && error.is_retryable() && !waits_too_long;
    if retryable && state.auto_retries < ctx.settings.max_auto_retries {
        state.auto_retries += 1;
        observer
            .event(streaming_failed(ctx.request_index, &error))
            .await;
        wait_and_retry(&ctx.settings, state.auto_retries, &error, observer).await;
        state.did_automatically_retry = false;
        return Ok(());
    }
    if retryable && ctx.settings.max_auto_retries > 0 {
        observer
            .event(TaskEvent::ErrorRetry {
                attempt: state.auto_retries,
                max_attempts: ctx.settings.max_auto_retries,
                delay_seconds: 0.0,
                error_message: error.to_string(),
                failed: true,
            })
            .await;
    }
    decide(ctx, error, waits_too_long, conversation, state, observer).await
}

/// The first overflow truncates to a quarter and retries at once, returning `None`.
async fn recover_overflow(
    mut error: ApiError,
    conversation: &mut Conversation,
    state: &mut RetryState,
    observer: &mut dyn TurnObserver,
) -> Option<ApiError> {
    if error.kind != ErrorKind::ContextWindowExceeded {
        return Some(error);
    }
    if !state.did_automatically_retry {
        if truncate(conversation, TruncationKeep::Quarter, observer).await {
            state.did_automatically_retry = true;
            observer.event(TaskEvent::ApiReqRetried).await;
            return None;
        }
        // Nothing was removed, so the identical request is not sent again.
        return Some(nothing_left_to_truncate(error));
    }
    // A second overflow: with more than 3 visible messages a manual retry can cut further.
    let visible = apply_deleted_range(
        &conversation.api_conversation_history,
        conversation.conversation_history_deleted_range,
    )
    .len();
    if visible > 3 {
        error.message =
            "context window exceeded; retry to truncate the conversation further".into();
    }
    Some(error)
}

async fn decide(
    ctx: &ApiRequestContext<'_>,
    error: ApiError,
    waits_too_long: bool,
    conversation: &mut Conversation,
    state: &mut RetryState,
    observer: &mut dyn TurnObserver,
) -> Result<(), ApiError> {
    match ask(ctx.decider, &error, observer).await {
        FailureDecision::Cancel => Err(error),
        FailureDecision::Retry => {
            state.auto_retries = 0;
            if error.kind == ErrorKind::ContextWindowExceeded {
                let _ = truncate(conversation, TruncationKeep::Quarter, observer).await;
            }
            if let Some(wait) = error.retry_after.filter(|_| waits_too_long) {
                announce_and_wait(&ctx.settings, 1, wait, &error, observer).await;
            }
            observer.event(TaskEvent::ApiReqRetried).await;
            state.did_automatically_retry = false;
            Ok(())
        }
    }
}
