//! What a store holds of a task: its row and totals, UI events and context edits.
//! Spec: R10.1.

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

/// Token and cost totals of a task.
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
    /// Requests whose cost is unknown; while any, the task's cost is unknown.
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

    /// All tokens of the request, cache writes and reads included.
    pub fn total_tokens(&self) -> u64 {
        self.tokens_in + self.tokens_out + self.cache_writes + self.cache_reads
    }
}

/// One stored task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// The id the user resumes with: Unix ms at creation.
    pub id: String,
    /// Creation time, Unix ms.
    pub created_ms: i64,
    /// Last change, Unix ms.
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
    /// Total tokens of the task's last request, checked again after a resume.
    pub last_request_tokens: u64,
    /// The range of stored messages hidden from the model, inclusive.
    pub conversation_history_deleted_range: Option<DeletedRange>,
    /// Messages in the API conversation history.
    pub message_count: usize,
}

/// One stored UI event: a [`crate::task::TaskEvent`] as JSON, or an imported row.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// Position in the task's event list, with gaps where rows were dropped.
    pub seq: i64,
    /// When it was recorded, Unix ms.
    pub ts_ms: i64,
    /// The event's `type`.
    pub kind: String,
    /// The whole event as JSON.
    pub event: Value,
}

/// One recorded context edit.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextEdit {
    /// Position in the task's list of edits.
    pub seq: i64,
    /// Unix milliseconds.
    pub ts_ms: i64,
    /// `truncation`, `file_read_dedupe` or `reference_context_history`.
    pub kind: String,
    /// What was done.
    pub detail: Value,
}

/// A UI event of a whole task stored at once: its time, its `type` and the event as JSON.
pub type ImportedEvent = (i64, String, Value);

/// A context edit of a whole task stored at once: its kind and detail.
pub type ImportedEdit = (String, Value);

/// The current time in Unix ms.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
