//! The request loop of one user turn (SPEC R9): requests are started, probed and recovered by
//! `attempt_api_request`, consumed into events and the history, and a failure after the first
//! chunk is handled without tearing the task down (R9.3 **Improve**).

use std::time::Duration;

use switchyard_api::{ApiError, ContentBlock, ErrorKind, Message};
use tokio::time::Instant;

use super::TaskEvent;
use super::attempt::{
    ApiRequestContext, Conversation, attempt_api_request_on, nothing_left_to_truncate, truncate,
    wait_and_retry,
};
use super::observer::TurnObserver;
use super::request::{RejectedToolCall, RequestStatus, consume_stream};
use crate::context::{TruncationKeep, messages_for_request};
use crate::cost::{UsageTotals, add_costs};

/// Appended to an assistant message whose stream failed part-way (SPEC R9.3).
pub const INTERRUPTED_MARKER: &str = "[Response interrupted by API Error]";

/// The user message that asks the model to go on after an interrupted response.
pub const CONTINUE_AFTER_INTERRUPTION: &str =
    "[The previous response was interrupted by an API error. Continue exactly where it stopped.]";

/// Why a request ended early (the reference's `cancelReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// The stream failed after content had arrived.
    StreamingFailed,
    /// The user cancelled (Ctrl-C).
    UserCancelled,
}

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
    let turn_started = Instant::now();
    let mut totals = UsageTotals::default();
    let mut cost_usd = Some(0.0);
    let mut first_token = None;
    let mut requests = 0;
    let mut midstream_retries = 0;
    let mut previous_total = ctx.previous_request_total_tokens;
    // The outcome of the turn so far, ended with `status`.
    macro_rules! finish {
        ($status:expr) => {
            TurnOutcome {
                status: $status,
                usage: totals,
                cost_usd,
                last_request_total_tokens: previous_total,
                first_token,
                requests,
                rejected_tool_calls: Vec::new(),
            }
        };
    }
    loop {
        *request_index += 1;
        requests += 1;
        observer
            .event(TaskEvent::ApiReqStarted {
                request_index: *request_index,
            })
            .await;
        let request_ctx = ApiRequestContext {
            previous_request_total_tokens: previous_total,
            request_index: *request_index,
            cancel: ctx.cancel.clone(),
            ..*ctx
        };
        let started = Instant::now();
        let (stream, handler) =
            match attempt_api_request_on(&request_ctx, conversation, observer).await {
                Ok(answered) => answered,
                Err(error) => {
                    if error.kind == ErrorKind::Cancelled {
                        observer.event(user_cancelled(*request_index)).await;
                    }
                    observer.event(error_event(&error)).await;
                    return finish!(RequestStatus::Failed(error));
                }
            };
        let (system_prompt, _) = (ctx.system_prompt)();
        let visible = messages_for_request(
            &conversation.api_conversation_history,
            conversation.conversation_history_deleted_range,
        );
        let outcome =
            consume_stream(handler, stream, started, &system_prompt, &visible, observer).await;
        if let RequestStatus::Failed(e) = &outcome.status {
            // An overflow is reported once the request loop knows what it becomes (below). A
            // failure that left nothing to keep and is retried is reported as a pre-content
            // failure is (`api_req_finished`, `error_retry`): the user saw no answer fail.
            let nothing_kept = outcome.assistant_message.content.is_empty();
            let retried_quietly = nothing_kept
                && e.is_retryable()
                && midstream_retries < ctx.settings.max_auto_retries;
            if e.kind != ErrorKind::ContextWindowExceeded && !retried_quietly {
                observer.event(error_event(e)).await;
            }
        }
        if first_token.is_none() {
            first_token = outcome.first_token.map(|d| d + (started - turn_started));
        }
        totals += &outcome.usage;
        cost_usd = add_costs(cost_usd, outcome.cost_usd);
        previous_total = outcome.usage.total_tokens();

        let error = match outcome.status {
            RequestStatus::Completed => {
                if let Err(e) = append(conversation, outcome.assistant_message, observer).await {
                    return finish!(RequestStatus::Failed(e));
                }
                let mut done = finish!(RequestStatus::Completed);
                done.rejected_tool_calls = outcome.rejected_tool_calls;
                return done;
            }
            RequestStatus::Failed(error) => error,
        };

        if error.kind == ErrorKind::Cancelled {
            // R9.5: keep what was received (complete blocks only) and stop, no retry.
            if !outcome.assistant_message.content.is_empty() {
                if let Err(e) = append(conversation, outcome.assistant_message, observer).await {
                    return finish!(RequestStatus::Failed(e));
                }
            }
            observer.event(user_cancelled(*request_index)).await;
            return finish!(RequestStatus::Failed(error));
        }

        // R9.3: keep what arrived, marked, and record why the request ended. A failure that
        // left nothing worth keeping (only a tool call cut off, say) stores no empty assistant
        // message: the same request is simply sent again (issue 12 item 3).
        let kept = !outcome.assistant_message.content.is_empty();
        if kept {
            let mut partial = outcome.assistant_message;
            partial.content.push(ContentBlock::Text {
                text: INTERRUPTED_MARKER.to_owned(),
            });
            if let Err(e) = append(conversation, partial, observer).await {
                return finish!(RequestStatus::Failed(e));
            }
        }
        // The answer filled the context window (H01, H09, H27): waiting cannot help, a
        // shorter conversation can (R6.5). Truncate and go on at once, or stop when nothing
        // is left to remove.
        let overflow = error.kind == ErrorKind::ContextWindowExceeded;
        let mut error = error;
        let may_truncate = overflow && midstream_retries < ctx.settings.max_auto_retries;
        let truncated =
            may_truncate && truncate(conversation, TruncationKeep::Quarter, observer).await;
        if may_truncate && !truncated {
            error = nothing_left_to_truncate(error);
        }
        if overflow {
            observer.event(error_event(&error)).await;
        }
        observer
            .event(TaskEvent::ApiReqFinished {
                request_index: *request_index,
                cancel_reason: Some(CancelReason::StreamingFailed),
                streaming_failed_message: Some(error.to_string()),
            })
            .await;
        if midstream_retries >= ctx.settings.max_auto_retries {
            return finish!(RequestStatus::Failed(error));
        }
        if overflow {
            if !truncated {
                return finish!(RequestStatus::Failed(error));
            }
            midstream_retries += 1;
            observer.event(TaskEvent::ApiReqRetried).await;
        } else if !error.is_retryable() {
            return finish!(RequestStatus::Failed(error));
        } else {
            midstream_retries += 1;
            wait_and_retry(&ctx.settings, midstream_retries, &error, observer).await;
        }
        if kept {
            let next = Message::user_text(CONTINUE_AFTER_INTERRUPTION);
            if let Err(e) = append(conversation, next, observer).await {
                return finish!(RequestStatus::Failed(e));
            }
        }
    }
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

/// The `api_req_finished` of request `request_index`, cancelled by the user (SPEC R9.5).
pub(super) fn user_cancelled(request_index: u32) -> TaskEvent {
    TaskEvent::ApiReqFinished {
        request_index,
        cancel_reason: Some(CancelReason::UserCancelled),
        streaming_failed_message: None,
    }
}

pub(super) fn error_event(error: &ApiError) -> TaskEvent {
    TaskEvent::Error {
        kind: error.kind.as_str().to_owned(),
        message: error.to_string(),
        status: error.status,
    }
}
