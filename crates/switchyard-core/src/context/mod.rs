//! Context management: keeping each request inside the model's context window (SPEC R8).
//!
//! A long task eventually outgrows the model's window. Rather than cut the stored history, we
//! keep a **deleted range** — an inclusive pair of indices into the stored conversation — and
//! hide those messages when a request is built (SPEC R8.4). The stored history is never cut,
//! so the task can be resumed, inspected or restored to a checkpoint exactly, and the range
//! alone (persisted before the request is sent, SPEC R6.3) says what the model saw.
//!
//! The pieces, in the order a request uses them:
//!
//! - [`budget`]: the model's window and the size at which we act ([`context_budget`], R8.1);
//!   whether the previous request's usage calls for truncation and how hard
//!   ([`should_truncate`], R8.2); a bytes/4 estimate of what is about to be sent
//!   ([`estimate_message_tokens`]).
//! - [`truncation`]: the next, larger deleted range ([`get_next_truncation_range`], R8.3). It
//!   keeps the task and the first reply (messages 0 and 1) and always ends on an assistant
//!   message, so the visible history still alternates user, assistant, …
//! - [`apply`]: the messages the model sees ([`apply_deleted_range`], R8.4–R8.5). Hiding
//!   messages can split a tool call from its result; providers such as Anthropic reject a
//!   request with a tool result whose call is gone, or a call without a result. The repair
//!   drops orphan results, adds an error result for each unanswered call, and orders results
//!   like their calls, so every request is valid. The first user message gets a notice that
//!   earlier history was removed.
//!
//! - [`dedupe`]: earlier copies of a file read again later are replaced by a short notice
//!   ([`messages_for_request`], R8.6); when that saves 30 % of the request, no truncation is
//!   needed ([`dedupe_saves_enough`]).
//!
//! All of it is pure: functions of the history, the range and the model info, with no I/O.
//! The task layer decides when to call them (R6.3, R6.5) and persists the range.

pub mod apply;
pub mod budget;
pub mod dedupe;
pub mod truncation;

#[cfg(test)]
mod test_support;

pub use apply::{
    MISSING_TOOL_RESULT, REMOVED_TOOL_RESULTS, TRUNCATION_NOTICE, apply_deleted_range,
};
pub use budget::{
    ContextBudget, IMAGE_TOKENS, Tokenizer, context_budget, estimate_message_tokens,
    estimate_message_tokens_with, estimate_tokens, should_truncate,
};
pub use dedupe::{
    FILE_READ_NOTICE, FileReadEdit, apply_file_read_edits, dedupe_saves_enough,
    find_duplicate_file_reads, messages_for_request,
};
pub use truncation::{
    DeletedRange, EMPTY_RANGE, TruncationKeep, get_next_truncation_range, range_is_empty,
};
