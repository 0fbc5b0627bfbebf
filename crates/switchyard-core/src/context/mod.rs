//! Keeping each request inside the context window by hiding a range, never cutting history.
//! Spec: R8.

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
