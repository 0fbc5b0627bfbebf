//! The recovery the request step and the request loop share.
//! Spec: R6.3, R6.5, R6.7, R6.8, R6.9, R8.3, R9.3.

use std::time::Duration;

use switchyard_api::ApiError;
use switchyard_api::retry::task_retry_delay;

use super::conversation::Conversation;
use super::events::TaskEvent;
use super::observer::{BoxFuture, TurnObserver};
use super::settings::AttemptSettings;
use crate::context::{TruncationKeep, get_next_truncation_range};

/// The user's answer when automatic recovery is exhausted.
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

/// Answers every failure the same way, as `--on-failure fail|retry` does.
#[derive(Debug, Clone, Copy)]
pub struct FixedDecision(pub FailureDecision);

impl FailureDecider for FixedDecision {
    fn api_req_failed<'a>(&'a self, _error: &'a ApiError) -> BoxFuture<'a, FailureDecision> {
        Box::pin(std::future::ready(self.0))
    }
}

pub(super) async fn ask(
    decider: &dyn FailureDecider,
    error: &ApiError,
    observer: &mut dyn TurnObserver,
) -> FailureDecision {
    observer
        .event(TaskEvent::ApiReqFailed {
            kind: error.kind.as_str().to_owned(),
            message: error.to_string(),
        })
        .await;
    decider.api_req_failed(error).await
}

const NOTHING_TO_TRUNCATE: &str = "nothing is left to truncate: the prompt, the system prompt \
    and the tools alone exceed the model's context window; shorten the prompt or use a model \
    with a larger context window (on a local server, load the model with a larger context \
    length)";

pub(super) fn nothing_left_to_truncate(mut error: ApiError) -> ApiError {
    error.message = format!(
        "{}; {NOTHING_TO_TRUNCATE}",
        error.message.trim_end().trim_end_matches('.')
    );
    error.permanent = true;
    error
}

/// Automatic retry `attempt`: waits 2 s, 4 s, 8 s or a longer retry-after up to the cap.
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

pub(super) async fn announce_and_wait(
    settings: &AttemptSettings,
    attempt: u32,
    delay: Duration,
    error: &ApiError,
    observer: &mut dyn TurnObserver,
) {
    tracing::info!(
        "retry {attempt} of {} in {:.1} s after: {error}",
        settings.max_auto_retries,
        delay.as_secs_f64()
    );
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
