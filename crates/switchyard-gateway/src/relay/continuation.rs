//! Continuing an answer cut after content started: whether it can be, and the conversation
//! that continues it.
//! Spec: R14.4, R9.3, R12.1.

use std::time::Duration;

use switchyard_api::{
    ApiError, ChainEntry, ContentBlock, Message, RequestOverrides, Role, fails_over,
};

use super::answer::estimate_tokens;

/// The most continuations of one answer, as a task retries a failed stream at most 3 times.
pub(super) const MAX_CONTINUATIONS: usize = 3;

/// The wait before continuing on the same entry, none being left: 2, 4, 8 s.
pub(super) fn backoff(continuation: usize) -> Duration {
    Duration::from_secs(2u64 << continuation.min(2))
}

/// Why a cut answer cannot be continued, or `None` when it can.
pub(super) fn refusal(
    error: &ApiError,
    tool_call: bool,
    text: &str,
    done: usize,
) -> Option<&'static str> {
    if !fails_over(error.kind) {
        Some("the failure is not one another attempt can mend")
    } else if tool_call {
        Some("the answer was cut inside a tool call")
    } else if text.is_empty() {
        Some("no text was sent to continue from")
    } else if done >= MAX_CONTINUATIONS {
        Some("the answer was already continued the most times allowed")
    } else {
        None
    }
}

/// What the model is told after its partial answer where it cannot continue it itself.
const CONTINUE_NOTE: &str = "Your previous answer was cut off by a connection failure. \
Continue it from exactly where it stopped: do not repeat anything already written and do \
not comment on the interruption.";

/// Whether `entry` continues a trailing assistant message itself, as Claude models do.
pub(super) fn prefills(entry: &ChainEntry) -> bool {
    entry.provider_id == "anthropic" || entry.model_id.contains("claude")
}

/// The conversation that continues `partial` on `entry`.
pub(super) fn messages(messages: &[Message], partial: &str, entry: &ChainEntry) -> Vec<Message> {
    let mut out = messages.to_vec();
    // Anthropic refuses a prefill that ends in whitespace.
    let block = ContentBlock::Text {
        text: partial.trim_end().to_owned(),
    };
    match out.last_mut() {
        // The client's own prefill: the partial answer follows it in the same message.
        Some(last) if last.role == Role::Assistant => last.content.push(block),
        _ => out.push(Message {
            role: Role::Assistant,
            content: vec![block],
        }),
    }
    if !prefills(entry) {
        out.push(Message::user_text(CONTINUE_NOTE));
    }
    out
}

/// The overrides of a continuation: the output limit less what the partial answer used.
pub(super) fn overrides(
    client: &RequestOverrides,
    partial: &str,
    entry: &ChainEntry,
) -> RequestOverrides {
    let mut overrides = client.clone();
    if let Some(max) = overrides.max_tokens.as_mut() {
        *max = max.saturating_sub(estimate_tokens(partial.len())).max(1);
    }
    // Anthropic refuses a prefill without a thinking block while thinking is on, and the
    // client has its thinking already.
    if prefills(entry) {
        overrides.thinking_budget_tokens = Some(0);
        overrides.reasoning_effort = None;
    }
    overrides
}
