//! What the store holds, independent of the database behind it: a task's row, its totals, its
//! UI events and its context edits.

use serde_json::Value;

use crate::context::DeletedRange;

/// What a new task is created with.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    pub cwd: String,
    /// `plan` or `act`.
    pub mode: String,
    pub provider: String,
    pub model: String,
    /// The task's first prompt, for listings.
    pub first_prompt: String,
}

/// Token and cost totals of a task (tokens; USD).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TaskUsage {
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cache_writes: u64,
    pub cache_reads: u64,
    pub cost_usd: f64,
}

impl TaskUsage {
    /// All tokens of the request: in + out + cache writes + cache reads (what SPEC R8.2 compares
    /// with the context budget).
    pub fn total_tokens(&self) -> u64 {
        self.tokens_in + self.tokens_out + self.cache_writes + self.cache_reads
    }
}

/// One stored task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// The id the user resumes with (Unix milliseconds at creation, as the reference's).
    pub id: String,
    /// Creation time, Unix milliseconds.
    pub created_ms: i64,
    /// Last change, Unix milliseconds.
    pub updated_ms: i64,
    pub cwd: String,
    pub mode: String,
    pub provider: String,
    pub model: String,
    pub first_prompt: String,
    pub usage: TaskUsage,
    /// Total tokens of the task's last request (in + out + cache writes + cache reads), for
    /// the R8.2 check of the next request after a resume.
    pub last_request_tokens: u64,
    /// The range of stored messages hidden from the model (SPEC R8.4), inclusive.
    pub conversation_history_deleted_range: Option<DeletedRange>,
    /// Messages in the API conversation history.
    pub message_count: usize,
}

/// One stored UI event (a [`crate::task::TaskEvent`] as its JSON object, or a row imported
/// from the reference's `ui_messages.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Position in the task's event list (not necessarily contiguous: R10.3 drops rows).
    pub seq: i64,
    /// When it was recorded, Unix milliseconds.
    pub ts_ms: i64,
    /// The event's `type` (`api_req_started`, `text`, …).
    pub kind: String,
    /// The whole event as JSON.
    pub event: Value,
}

/// One recorded context edit (`truncation`, `file_read_dedupe`, or an imported reference
/// `context_history` entry).
#[derive(Debug, Clone, PartialEq)]
pub struct ContextEdit {
    pub seq: i64,
    /// Unix milliseconds.
    pub ts_ms: i64,
    pub kind: String,
    pub detail: Value,
}

/// A UI event of a whole task stored at once ([`super::TaskStore::import_task`]): when it
/// happened (Unix milliseconds), its `type`, and the event as JSON.
pub type ImportedEvent = (i64, String, Value);

/// A context edit of a whole task stored at once: its kind and detail.
pub type ImportedEdit = (String, Value);
