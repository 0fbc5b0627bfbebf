//! Continuing an answer cut after content started: whether it can be, and the request that
//! continues it, the conversation with the partial answer.
//! Spec: R14.4, R9.3, R12.1.

use std::time::Duration;

use switchyard_api::{
    ApiError, ChainEntry, ContentBlock, Message, RequestOverrides, Role, fails_over,
};

use super::answer::estimate_tokens;

/// The most continuations of one answer (SPEC R9.3: up to 3 retries of a stream that failed).
pub(super) const MAX_CONTINUATIONS: usize = 3;

/// The wait before continuing on the entry that was cut (no other entry left): 2, 4, 8 s for
/// the first, second, third continuation (SPEC R9.3). Another entry is tried at once (R12.1).
pub(super) fn backoff(continuation: usize) -> Duration {
    Duration::from_secs(2u64 << continuation.min(2))
}

/// Why a cut answer cannot be continued, or `None` when it can (SPEC R14.4): the failure is of
/// a kind that does not fail over (R12.1: a bad request, a blocked answer, a cut tool call's
/// decode error…), a tool call was under way (a half call cannot be resumed), no text was
/// sent yet to continue from, or the continuations are spent.
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

/// What the model is told after its partial answer, where the provider cannot continue an
/// assistant message itself.
const CONTINUE_NOTE: &str = "Your previous answer was cut off by a connection failure. \
Continue it from exactly where it stopped: do not repeat anything already written and do \
not comment on the interruption.";

/// Whether `entry` continues a trailing assistant message itself (Anthropic's prefill, Claude
/// models behind any provider); others are asked to continue in a user message.
pub(super) fn prefills(entry: &ChainEntry) -> bool {
    entry.provider_id == "anthropic" || entry.model_id.contains("claude")
}

/// The conversation that continues `partial` on `entry`: `messages`, then the partial answer
/// as the assistant's (its trailing whitespace left out: Anthropic refuses a prefill that ends
/// in it), then — where the entry does not prefill — a user message asking to continue.
pub(super) fn messages(messages: &[Message], partial: &str, entry: &ChainEntry) -> Vec<Message> {
    let mut out = messages.to_vec();
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

/// The overrides of a continuation: the client's output limit less what the partial answer
/// used (estimated; at least 1), and thinking off where the entry prefills (Anthropic refuses
/// a prefill without a thinking block while thinking is on; the client has its thinking).
pub(super) fn overrides(
    client: &RequestOverrides,
    partial: &str,
    entry: &ChainEntry,
) -> RequestOverrides {
    let mut overrides = client.clone();
    if let Some(max) = overrides.max_tokens.as_mut() {
        *max = max.saturating_sub(estimate_tokens(partial.len())).max(1);
    }
    if prefills(entry) {
        overrides.thinking_budget_tokens = Some(0);
        overrides.reasoning_effort = None;
    }
    overrides
}
