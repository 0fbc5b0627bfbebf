//! The request loop of one user turn (SPEC R9): requests are started, probed and recovered by
//! `attempt_api_request`, consumed into events and the history, and a failure after the first
//! chunk is handled without tearing the task down (R9.3 **Improve**).

use std::time::Duration;

use switchyard_api::{ApiError, ContentBlock, ErrorKind, Message};
use tokio::time::Instant;

use super::attempt::{ApiRequestContext, attempt_api_request_on};
use super::conversation::Conversation;
use super::events::{CancelReason, TaskEvent, error_event, user_cancelled};
use super::observer::TurnObserver;
use super::recovery::{nothing_left_to_truncate, truncate, wait_and_retry};
use super::request::{RejectedToolCall, RequestOutcome, RequestStatus, consume_stream};
use crate::context::TruncationKeep;
use crate::cost::{UsageTotals, add_costs};

/// Appended to an assistant message whose stream failed part-way (SPEC R9.3).
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
    /// Cost of the turn in USD; `None` when a request's cost is unknown (SPEC R2.3).
    pub cost_usd: Option<f64>,
    /// Total tokens of the turn's last request (for the next request's R8.2 check).
    pub last_request_total_tokens: u64,
    /// Time from the turn's start to its first content chunk.
    pub first_token: Option<Duration>,
    /// Requests started (each `api_req_started`).
    pub requests: u32,
    /// Tool calls of the last answer that must not run (their arguments are not one JSON
    /// object): the tool loop answers them with an error result.
    pub(crate) rejected_tool_calls: Vec<RejectedToolCall>,
}

/// Runs requests until the assistant answered the last user message of `conversation`, or
/// the user (or policy) gave up. The assistant's message (complete, or partial with
/// [`INTERRUPTED_MARKER`]) is appended to the history; a failure after the first chunk is
/// retried up to `settings.max_auto_retries` times after 2 s, 4 s, 8 s, except errors that are
/// never retried ([`ApiError::is_retryable`]) (SPEC R9.3). An answer that filled the context
/// window is followed at once by a truncated request, or ends the turn when nothing is left to
/// hide (R6.5). A failure that left nothing to keep stores no assistant message (no empty
/// one) and sends the same request again.
///
/// `request_index` numbers `api_req_started` events across the task. `observer` gets every
/// event, every change of the deleted range and every message appended to the history, each
/// awaited before the turn goes on (a store makes each durable first, SPEC R10.2); when its
/// `history_changed` fails, the turn ends at once with that error.
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

/// What a turn has added up so far.
struct Turn {
    started: Instant,
    totals: UsageTotals,
    cost_usd: Option<f64>,
    first_token: Option<Duration>,
    requests: u32,
    /// Retries after a failure part-way (SPEC R9.3).
    midstream_retries: u32,
    /// Total tokens of the last request (for the next request's R8.2 check).
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

    /// Adds one request that started at `started`: its tokens, cost and first token time.
    fn add(&mut self, outcome: &RequestOutcome, started: Instant) {
        if self.first_token.is_none() {
            self.first_token = outcome.first_token.map(|d| d + (started - self.started));
        }
        self.totals += &outcome.usage;
        self.cost_usd = add_costs(self.cost_usd, outcome.cost_usd);
        self.previous_total = outcome.usage.total_tokens();
    }

    /// The outcome of the turn, ended with `status`.
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

/// Request `request_index` of the turn (SPEC R9.1): started, sent, probed and recovered by
/// the request step, then consumed into events. An error ends the turn (the step gave up);
/// a failure of the stream is in the outcome.
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
        // An overflow is reported once the request loop knows what it becomes (below). A
        // failure that left nothing to keep and is retried is reported as a pre-content
        // failure is (`api_req_finished`, `error_retry`): the user saw no answer fail.
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

/// R9.5: a request the user cancelled keeps what was received (complete blocks only) and
/// ends the turn with `error`, no retry.
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

/// R9.3: a stream that failed part-way keeps what arrived, marked, records why the request
/// ended, and is retried (`Ok`: the loop sends the next request) or ends the turn (`Err`).
/// A failure that left nothing worth keeping (only a tool call cut off, say) stores no empty
/// assistant message: the same request is simply sent again (issue 12 item 3). An answer that
/// filled the context window (H01, H09, H27) cannot be helped by waiting but by a shorter
/// conversation (R6.5): truncate and go on at once, or stop when nothing is left to remove.
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

/// Appends `message` to the history, then lets the observer store it before the turn goes on.
pub(super) async fn append(
    conversation: &mut Conversation,
    message: Message,
    observer: &mut dyn TurnObserver,
) -> Result<(), ApiError> {
    conversation.api_conversation_history.push(message);
    observer.history_changed(conversation).await
}
