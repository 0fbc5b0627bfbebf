//! Messages the context tests (SPEC R8.3–R8.6) build their histories from.

use switchyard_api::{ContentBlock, Message, Role};

/// A user message of `blocks`.
pub(super) fn user(blocks: Vec<ContentBlock>) -> Message {
    Message {
        role: Role::User,
        content: blocks,
    }
}

/// An assistant message of `blocks`.
pub(super) fn assistant(blocks: Vec<ContentBlock>) -> Message {
    Message {
        role: Role::Assistant,
        content: blocks,
    }
}

/// `len` messages alternating user (even index, `u{i}`) and assistant (odd index, `a{i}`).
pub(super) fn alternating(len: usize) -> Vec<Message> {
    (0..len)
        .map(|i| {
            if i % 2 == 0 {
                Message::user_text(format!("u{i}"))
            } else {
                Message::assistant_text(format!("a{i}"))
            }
        })
        .collect()
}
