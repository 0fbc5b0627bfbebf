//! The request loop of one user turn, recovering a stream that fails part-way.
//! Spec: R6.5, R9.1, R9.3, R9.5, R10.2.

use std::time::Duration;

use switchyard_api::{ApiError, ContentBlock, ErrorKind, Message};
use tokio::time::Instant;

use super::attempt::{ApiRequestContext, attempt_api_request_on};
use super::conversation::Conversation;
use super::events::{CancelReason, TaskEvent, TaskStatus, error_event, user_cancelled};
use super::observer::TurnObserver;
use super::recovery::{nothing_left_to_truncate, truncate, wait_and_retry};
use super::request::{RejectedToolCall, RequestOutcome, RequestStatus, consume_stream};
use crate::context::TruncationKeep;
use crate::cost::{UsageTotals, add_costs};

/// Appended to an assistant message whose stream failed part-way.
pub const INTERRUPTED_MARKER: &str = "[Response interrupted by API Error]";

/// The user message that asks the model to go on after an interrupted response.
pub const CONTINUE_AFTER_INTERRUPTION: &str =
    "[The previous response was interrupted by an API error. Continue exactly where it stopped.]";

/// How one turn ended.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// `Completed`, or `Failed` with the error that ended the turn.
    pub status: RequestStatus,
    /// Tokens and provider cost of every request of the turn, summed.
    pub usage: UsageTotals,
    /// Cost of the turn in USD; `None` when a request's cost is unknown.
    pub cost_usd: Option<f64>,
    /// Total tokens of the turn's last request, for the next request's truncation check.
    pub last_request_total_tokens: u64,
    /// Time from the turn's start to its first content chunk.
    pub first_token: Option<Duration>,
    /// Requests started.
    pub requests: u32,
    pub(crate) rejected_tool_calls: Vec<RejectedToolCall>,
}

/// Runs requests until the assistant answered the last user message, or the user gave up.
pub(crate) async fn run_turn(
    ctx: &ApiRequestContext<'_>,
    conversation: &mut Conversation,
    request_index: &mut u32,
    observer: &mut dyn TurnObserver,
) -> TurnOutcome {
    let mut turn = Turn::new(ctx.previous_request_total_tokens);
    loop {
        *request_index += 1;
        let outcome = match send(ctx, conversation, *request_index, &mut turn, observer).await {
            Ok(outcome) => outcome,
            Err(error) => return turn.finish(RequestStatus::Failed(error)),
        };
        let error = match outcome.status {
            RequestStatus::Completed => {
                if let Err(e) = append(conversation, outcome.assistant_message, observer).await {
                    return turn.finish(RequestStatus::Failed(e));
                }
                let mut done = turn.finish(RequestStatus::Completed);
                done.rejected_tool_calls = outcome.rejected_tool_calls;
                return done;
            }
            RequestStatus::Failed(error) => error,
        };
        let answer = outcome.assistant_message;
        let next = if error.kind == ErrorKind::Cancelled {
            keep_cancelled(conversation, *request_index, answer, error, observer).await
        } else {
            recover_midstream(
                ctx,
                conversation,
                *request_index,
                answer,
                error,
                &mut turn,
                observer,
            )
            .await
        };
        if let Err(error) = next {
            return turn.finish(RequestStatus::Failed(error));
        }
    }
}

struct Turn {
    started: Instant,
    totals: UsageTotals,
    cost_usd: Option<f64>,
    first_token: Option<Duration>,
    requests: u32,
    midstream_retries: u32,
    previous_total: u64,
}

impl Turn {
    fn new(previous_total: u64) -> Self {
        Self {
            started: Instant::now(),
            totals: UsageTotals::default(),
            cost_usd: Some(0.0),
            first_token: None,
            requests: 0,
            midstream_retries: 0,
            previous_total,
        }
    }

    fn add(&mut self, outcome: &RequestOutcome, started: Instant) {
        if self.first_token.is_none() {
            self.first_token = outcome.first_token.map(|d| d + (started - self.started));
        }
        self.totals += &outcome.usage;
        self.cost_usd = add_costs(self.cost_usd, outcome.cost_usd);
        self.previous_total = outcome.usage.total_tokens();
    }

    fn finish(self, status: RequestStatus) -> TurnOutcome {
        TurnOutcome {
            status,
            usage: self.totals,
            cost_usd: self.cost_usd,
            last_request_total_tokens: self.previous_total,
            first_token: self.first_token,
            requests: self.requests,
            rejected_tool_calls: Vec::new(),
        }
    }
}

async fn send(
    ctx: &ApiRequestContext<'_>,
    conversation: &mut Conversation,
    request_index: u32,
    turn: &mut Turn,
    observer: &mut dyn TurnObserver,
) -> Result<RequestOutcome, ApiError> {
    turn.requests += 1;
    observer
        .event(TaskEvent::ApiReqStarted { request_index })
        .await;
    let request_ctx = ApiRequestContext {
        previous_request_total_tokens: turn.previous_total,
        request_index,
        cancel: ctx.cancel.clone(),
        ..*ctx
    };
    let started = Instant::now();
    let (stream, handler) = match attempt_api_request_on(&request_ctx, conversation, observer).await
    {
        Ok(answered) => answered,
        Err(error) if observer.failed() => return Err(error),
        Err(error) => {
            if error.kind == ErrorKind::Cancelled {
                observer.event(user_cancelled(request_index)).await;
            }
            observer.event(error_event(&error)).await;
            return Err(error);
        }
    };
    let (system_prompt, _) = (ctx.system_prompt)();
    let visible = conversation.visible();
    let outcome =
        consume_stream(handler, stream, started, &system_prompt, &visible, observer).await;
    if let RequestStatus::Failed(e) = &outcome.status {
        // A retried failure that kept nothing is reported as one before content would be.
        let nothing_kept = outcome.assistant_message.content.is_empty();
        let retried_quietly = nothing_kept
            && e.is_retryable()
            && turn.midstream_retries < ctx.settings.max_auto_retries;
        if e.kind != ErrorKind::ContextWindowExceeded && !retried_quietly {
            observer.event(error_event(e)).await;
        }
    }
    turn.add(&outcome, started);
    Ok(outcome)
}

async fn keep_cancelled(
    conversation: &mut Conversation,
    request_index: u32,
    answer: Message,
    error: ApiError,
    observer: &mut dyn TurnObserver,
) -> Result<(), ApiError> {
    if !answer.content.is_empty() {
        append(conversation, answer, observer).await?;
    }
    observer.event(user_cancelled(request_index)).await;
    Err(error)
}

/// A stream that failed part-way keeps what arrived, marked, and is retried or ends the turn.
async fn recover_midstream(
    ctx: &ApiRequestContext<'_>,
    conversation: &mut Conversation,
    request_index: u32,
    answer: Message,
    mut error: ApiError,
    turn: &mut Turn,
    observer: &mut dyn TurnObserver,
) -> Result<(), ApiError> {
    let kept = !answer.content.is_empty();
    if kept {
        let mut partial = answer;
        partial.content.push(ContentBlock::Text {
            text: INTERRUPTED_MARKER.to_owned(),
        });
        append(conversation, partial, observer).await?;
    }
    let max_retries = ctx.settings.max_auto_retries;
    let overflow = error.kind == ErrorKind::ContextWindowExceeded;
    let may_truncate = overflow && turn.midstream_retries < max_retries;
    let truncated = may_truncate && truncate(conversation, TruncationKeep::Quarter, observer).await;
    if may_truncate && !truncated {
        error = nothing_left_to_truncate(error);
    }
    if overflow {
        observer.event(error_event(&error)).await;
    }
    observer
        .event(TaskEvent::ApiReqFinished {
            request_index,
            cancel_reason: Some(CancelReason::StreamingFailed),
            streaming_failed_message: Some(error.to_string()),
        })
        .await;
    if turn.midstream_retries >= max_retries || (overflow && !truncated) {
        return Err(error);
    }
    if overflow {
        turn.midstream_retries += 1;
        observer.event(TaskEvent::ApiReqRetried).await;
    } else if !error.is_retryable() {
        return Err(error);
    } else {
        turn.midstream_retries += 1;
        wait_and_retry(&ctx.settings, turn.midstream_retries, &error, observer).await;
    }
    if kept {
        append(
            conversation,
            Message::user_text(CONTINUE_AFTER_INTERRUPTION),
            observer,
        )
        .await?;
    }
    Ok(())
}

pub(super) async fn append(
    conversation: &mut Conversation,
    message: Message,
    observer: &mut dyn TurnObserver,
) -> Result<(), ApiError> {
    conversation.api_conversation_history.push(message);
    observer.history_changed(conversation).await
}

impl TurnOutcome {
    /// How a run of the task ends after this turn.
    pub fn task_status(&self) -> TaskStatus {
        match &self.status {
            RequestStatus::Completed => TaskStatus::Completed,
            RequestStatus::Failed(e) if e.kind == ErrorKind::Cancelled => TaskStatus::Cancelled,
            RequestStatus::Failed(_) => TaskStatus::Failed,
        }
    }
}
