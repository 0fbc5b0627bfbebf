//! Continuing an answer cut after content started (SPEC R14.4, R9.3, R12.1): whether it can be
//! continued, the request that continues it (the conversation with the partial answer), and
//! the splice that joins the continuation to what the client already has with no repeated
//! text.

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

/// The longest prefix of a continuation kept back to compare with the answer's tail, in bytes.
const WINDOW: usize = 512;
/// The longest partial answer whose whole repetition at a continuation's start is looked for.
const RESTART_LIMIT: usize = 16 * 1024;
/// The shortest repeated tail that is stripped when it does not start and end on word
/// boundaries, in bytes.
const UNALIGNED_OVERLAP: usize = 16;

/// Joins a continuation's text to the answer so far: its start is held back until it can be
/// compared with the answer's tail, and whatever it repeats is left out — the whole answer
/// when the model started over, the tail when it repeated the last words, leading whitespace
/// when the answer already ended in some.
#[derive(Debug, Default)]
pub(super) struct Splice {
    /// The answer so far (its last [`RESTART_LIMIT`] bytes at most), or empty once released.
    answer: String,
    /// The continuation's text held back.
    head: String,
    holding: bool,
}

impl Splice {
    /// A splice after `answer` (the text the client has).
    pub(super) fn after(answer: &str) -> Self {
        let mut from = answer.len().saturating_sub(RESTART_LIMIT);
        while !answer.is_char_boundary(from) {
            from += 1;
        }
        Self {
            answer: answer[from..].to_owned(),
            head: String::new(),
            holding: true,
        }
    }

    /// Adds continuation text; gives the text to send now, if any.
    pub(super) fn push(&mut self, text: &str) -> Option<String> {
        if !self.holding {
            return Some(text.to_owned());
        }
        self.head.push_str(text);
        let may_restart = self.answer.starts_with(self.head.trim_start())
            || self.head.trim_start().starts_with(&self.answer);
        if self.head.len() < WINDOW.min(self.answer.len())
            || (may_restart && self.head.len() <= self.answer.len())
        {
            return None;
        }
        self.release()
    }

    /// Gives what is held back (the continuation ended, or something other than text came).
    pub(super) fn release(&mut self) -> Option<String> {
        if !self.holding {
            return None;
        }
        self.holding = false;
        let head = std::mem::take(&mut self.head);
        let kept = strip_repeat(&self.answer, &head).to_owned();
        self.answer.clear();
        (!kept.is_empty()).then_some(kept)
    }
}

/// `head` without what it repeats of `answer` (see [`Splice`]).
fn strip_repeat<'h>(answer: &str, head: &'h str) -> &'h str {
    let mut head = head;
    if answer.ends_with(char::is_whitespace) {
        head = head.trim_start();
    }
    if let Some(rest) = head.strip_prefix(answer.trim_start()) {
        return rest;
    }
    let longest = head.len().min(answer.len()).min(WINDOW);
    for k in (1..=longest).rev() {
        if !head.is_char_boundary(k) || !answer.ends_with(&head[..k]) {
            continue;
        }
        let starts = answer[..answer.len() - k]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric())
            || !head[..k].starts_with(char::is_alphanumeric);
        let ends = head[k..]
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric())
            || !head[..k].ends_with(char::is_alphanumeric);
        if k >= UNALIGNED_OVERLAP || (starts && ends) {
            return &head[k..];
        }
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spliced(answer: &str, pieces: &[&str]) -> String {
        let mut splice = Splice::after(answer);
        let mut out = String::new();
        for piece in pieces {
            out.extend(splice.push(piece));
        }
        out.extend(splice.release());
        out
    }

    #[test]
    fn an_exact_continuation_is_kept_whole() {
        assert_eq!(
            spliced("The capital", &[" of France", " is Paris."]),
            " of France is Paris."
        );
        assert_eq!(spliced("datab", &["ase, then"]), "ase, then");
    }

    #[test]
    fn a_repeated_tail_or_a_restart_is_left_out() {
        let answer = "The migration has three steps: first back up the database, then";
        assert_eq!(
            spliced(answer, &[" then", " stop the app."]),
            " stop the app."
        );
        assert_eq!(
            spliced(
                answer,
                &[
                    "The migration has three",
                    " steps: first back up the database, then stop it."
                ]
            ),
            " stop it."
        );
        assert_eq!(spliced("Hello there. ", &[" World"]), "World");
        assert_eq!(
            spliced(answer, &["up the database, then restore."]),
            " restore."
        );
    }

    #[test]
    fn a_short_overlap_inside_a_word_is_not_taken_for_a_repeat() {
        assert_eq!(spliced("I said hel", &["lo"]), "lo");
        assert_eq!(spliced("a tool", &["s and more"]), "s and more");
    }
}
