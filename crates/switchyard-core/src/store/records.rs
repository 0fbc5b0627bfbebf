//! What a task store holds, independent of the database behind it (SPEC R10.1): a task's row,
//! its totals, its UI events and its context edits, and the clock their times are read from.

use serde_json::Value;

use crate::context::DeletedRange;

/// What a new task is created with.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    /// The working directory the task runs in.
    pub cwd: String,
    /// `plan` or `act`.
    pub mode: String,
    /// The provider id.
    pub provider: String,
    /// The model id.
    pub model: String,
    /// The task's first prompt, for listings.
    pub first_prompt: String,
}

/// Token and cost totals of a task (tokens; USD).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TaskUsage {
    /// Non-cached input tokens.
    pub tokens_in: u64,
    /// Output tokens.
    pub tokens_out: u64,
    /// Tokens written to the prompt cache.
    pub cache_writes: u64,
    /// Tokens read from the prompt cache.
    pub cache_reads: u64,
    /// USD: the sum of the requests whose cost is known.
    pub cost_usd: f64,
    /// Requests whose cost is unknown (a model without prices, SPEC R2.3): while any, the
    /// task's cost is unknown ([`TaskUsage::cost`]).
    pub unpriced_requests: u64,
}

impl std::ops::AddAssign for TaskUsage {
    /// Adds `other`'s tokens and cost.
    fn add_assign(&mut self, other: Self) {
        self.tokens_in += other.tokens_in;
        self.tokens_out += other.tokens_out;
        self.cache_writes += other.cache_writes;
        self.cache_reads += other.cache_reads;
        self.cost_usd += other.cost_usd;
        self.unpriced_requests += other.unpriced_requests;
    }
}

impl TaskUsage {
    /// The cost in USD, `None` when some request's cost is unknown.
    pub fn cost(&self) -> Option<f64> {
        (self.unpriced_requests == 0).then_some(self.cost_usd)
    }

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
    /// The working directory it was created in.
    pub cwd: String,
    /// `plan` or `act`, as it last ran.
    pub mode: String,
    /// The provider id it last ran with.
    pub provider: String,
    /// The model id it last ran with.
    pub model: String,
    /// Its first prompt, for listings.
    pub first_prompt: String,
    /// Totals of every request.
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
    /// Position in the task's list of edits.
    pub seq: i64,
    /// Unix milliseconds.
    pub ts_ms: i64,
    /// `truncation`, `file_read_dedupe` or `reference_context_history`.
    pub kind: String,
    /// What was done (the range; the message, block and path; the reference's entry).
    pub detail: Value,
}

/// A UI event of a whole task stored at once ([`super::TaskStore::import_task`]): when it
/// happened (Unix milliseconds), its `type`, and the event as JSON.
pub type ImportedEvent = (i64, String, Value);

/// A context edit of a whole task stored at once: its kind and detail.
pub type ImportedEdit = (String, Value);

/// The current time in Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
