//! The durable task store (SPEC R10, R13.1): the [`TaskStore`] trait, [`SqliteStore`], its
//! default implementation on one SQLite file, and `PgStore` (Cargo feature `postgres`) on a
//! PostgreSQL server shared by a team's machines.
//!
//! The reference rewrites whole JSON files (`api_conversation_history.json`,
//! `ui_messages.json`) on every change, so a long task costs more per message the longer it
//! gets, and a crash in the middle of a write can lose the file. A store instead makes each
//! change one small transaction that touches only its own rows: appending a message inserts
//! one row, a usage report updates one task row, a streamed text chunk inserts one event row.
//! Nothing is ever rewritten whole.
//!
//! # What a store holds (SPEC R10.1)
//!
//! - tasks: id, creation time, cwd, mode, provider, model, first prompt, totals (tokens in/out,
//!   cache writes/reads, cost in USD), the previous request's total tokens (for R8.2 after a
//!   resume) and `conversation_history_deleted_range` (R8.4) — a [`TaskRecord`];
//! - the API conversation history, one row per message in the Anthropic shape
//!   (`{"role", "content": [blocks]}`);
//! - the UI events, the task's [`crate::task::TaskEvent`]s in order (the reference's
//!   `ui_messages.json`) — [`StoredEvent`]s;
//! - the context edits: what context management did (truncation ranges, file-read dedupe) —
//!   [`ContextEdit`]s.
//!
//! # Why the trait is async and object-safe
//!
//! A store is shared as `Arc<dyn TaskStore>`: a [`crate::Task`] holds one, several tasks in
//! one process share one, and the backend is chosen at run time from the configuration (SQLite
//! by default, PostgreSQL for teams, R13.1), so the trait must be object-safe. Its methods
//! return boxed futures ([`StoreFuture`]) rather than blocking, because the next backend talks
//! to a server over the network with an async client: a blocking trait would tie a runtime
//! thread to every round trip. [`SqliteStore`] runs each statement on tokio's blocking pool, so
//! a commit's `fsync` never stalls the tasks sharing a runtime thread.
//!
//! # Contract every implementation keeps (the suite in `store/suite.rs` checks it)
//!
//! - Each method is one transaction: done entirely or not at all. A method that returns `Ok`
//!   has made its change durable (survives a crash of the process and of the machine), except
//!   [`TaskStore::append_event`] with `durable_now = false`, which survives the process being
//!   killed and reaches the disk with the next durable commit (used for streamed text chunks,
//!   so a SIGKILL loses at most the chunk being received, R10.2).
//! - Several processes may share one store: writers wait for each other instead of failing, and
//!   two processes appending to the same task at the same index get
//!   [`StoreError::Conflict`], never a lost row.
//! - Data it must not touch (damaged, read-only, written by a newer Switchyard) is refused with
//!   a [`StoreError`] before anything is written.
//!
//! # What comes next
//!
//! # Limits state
//!
//! The failover cooldowns, spend and rate-limit state of SPEC R12 live in the same store so
//! every process on it shares them (R13.2). They are their own trait,
//! [`crate::limits::LimitsStore`], a supertrait of this one: every backend implements both on
//! the same connection, with the same rules (async, one atomic transaction per update,
//! versioned schema), so a task keeps one `Arc<dyn TaskStore>` and this trait stays about
//! tasks. [`TaskStore::add_usage`] also records the request's cost with its time, which
//! [`crate::limits::LimitsStore::spend_between`] sums for the daily cap.

mod import;
#[cfg(feature = "postgres")]
mod postgres;
mod records;
mod sqlite;
#[cfg(test)]
pub(crate) mod suite;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use serde_json::Value;
use switchyard_api::Message;

use crate::context::DeletedRange;

pub use import::{ImportError, UNKNOWN_MODEL, import_reference_dir};
#[cfg(feature = "postgres")]
pub use postgres::{PG_SCHEMA_VERSION, PgStore, RECONNECT_MS, is_postgres_url, redact_url};
pub use records::{
    ContextEdit, ImportedEdit, ImportedEvent, NewTask, StoredEvent, TaskRecord, TaskUsage,
};
pub use sqlite::{BUSY_TIMEOUT_MS, DB_FILE, SCHEMA_VERSION, SqliteStore};

/// The future a [`TaskStore`] method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A failure of the task store. `Display` is one sentence saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but is not a SQLite database, or is damaged.
    #[error(
        "the task database {path} is damaged or is not a Switchyard database ({detail}); it was left untouched: move it away (or point --data-dir elsewhere) to start a new one"
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// SQLite's message.
        detail: String,
    },
    /// The file (or its directory) cannot be written.
    #[error(
        "the task database {path} is read-only; make it writable or point --data-dir (or SWITCHYARD_DATA_DIR) at a writable directory"
    )]
    ReadOnly {
        /// The database file.
        path: PathBuf,
    },
    /// The store was written by a newer Switchyard.
    #[error(
        "the task database {location} has schema version {found}, newer than this Switchyard supports ({supported}); upgrade Switchyard (the file was left untouched)"
    )]
    NewerSchema {
        /// The file, or the server without its password.
        location: String,
        /// The store's schema version.
        found: i64,
        /// The newest this build knows ([`SCHEMA_VERSION`]).
        supported: i64,
    },
    /// No task has this id.
    #[error("no task with id {id}; `switchyard tasks` lists the saved tasks")]
    TaskNotFound {
        /// The id asked for.
        id: String,
    },
    /// Another process changed the same task at the same time.
    #[error(
        "task {id} was changed by another switchyard process at the same time; run one process per task"
    )]
    Conflict {
        /// The task's id.
        id: String,
    },
    /// The data directory could not be created or read.
    #[error("cannot use the data directory {path}: {source}")]
    Io {
        /// The data directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A stored row could not be decoded.
    #[error("a stored record of task {id} could not be read: {source}")]
    Json {
        /// The task's id.
        id: String,
        /// The decoder's error.
        source: serde_json::Error,
    },
    /// The database server cannot be reached (down, restarting, wrong address) within the
    /// reconnect time.
    #[error(
        "cannot reach the task store {location} ({source}); start the server, or point --store, SWITCHYARD_STORE or `store` in the configuration at a running one"
    )]
    Unreachable {
        /// The server without its password.
        location: String,
        /// The connection error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Any other failure of the database (disk full, I/O error, locked for longer than the
    /// timeout, a lost connection).
    #[error("the task database {location} could not be used: {source}")]
    Backend {
        /// The file, or the server without its password.
        location: String,
        /// The database's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Where tasks are kept (see the module docs for the contract every implementation keeps).
///
/// Ids are the strings [`TaskStore::create_task`] returned. Message indices count from 0.
/// Every method fails with [`StoreError::TaskNotFound`] for an unknown task where it says so,
/// and with [`StoreError::Backend`] when the database itself fails.
pub trait TaskStore: crate::limits::LimitsStore + Send + Sync {
    /// Creates a task and returns it. Its id is the current Unix time in milliseconds (the
    /// reference's task id form), made unique if another task already has it.
    fn create_task<'a>(&'a self, new: &'a NewTask) -> StoreFuture<'a, TaskRecord>;

    /// Creates a task whose history starts with `first` (message 0) and returns it, as
    /// [`TaskStore::create_task`] then [`TaskStore::append_message`] would, but as one change:
    /// a backend that can commits both in one transaction, so starting a task costs one
    /// durable commit (one `fsync` for SQLite) instead of two (issue 17). The default does the
    /// two calls.
    fn create_task_with_message<'a>(
        &'a self,
        new: &'a NewTask,
        first: &'a Message,
    ) -> StoreFuture<'a, TaskRecord> {
        Box::pin(async move {
            let record = self.create_task(new).await?;
            self.append_message(&record.id, 0, first).await?;
            self.task(&record.id).await
        })
    }

    /// The task `id`, or [`StoreError::TaskNotFound`].
    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, TaskRecord>;

    /// Every task, oldest first.
    fn list_tasks(&self) -> StoreFuture<'_, Vec<TaskRecord>>;

    /// Adds one request's usage to the task's totals and records its total tokens as the last
    /// request's (tokens; cost in USD). In the same transaction it records the cost with the
    /// current time for [`crate::limits::LimitsStore::spend_between`].
    fn add_usage<'a>(&'a self, id: &'a str, usage: &'a TaskUsage) -> StoreFuture<'a, ()>;

    /// Records the mode, provider and model the task now runs with (a resume with other
    /// choices), so listings show what the task last used.
    fn set_task_model<'a>(
        &'a self,
        id: &'a str,
        mode: &'a str,
        provider: &'a str,
        model: &'a str,
    ) -> StoreFuture<'a, ()>;

    /// Sets the task's `conversation_history_deleted_range` and records the change as a
    /// `truncation` context edit with `detail`, in one transaction (SPEC R6.3: called before
    /// the request).
    fn set_deleted_range<'a>(
        &'a self,
        id: &'a str,
        range: Option<DeletedRange>,
        detail: &'a Value,
    ) -> StoreFuture<'a, ()>;

    /// Appends `message` as message `index` of task `id` (indices must follow the stored
    /// ones). The cost does not grow with the history. A message already at `index` means
    /// another process appended to the same task: [`StoreError::Conflict`].
    fn append_message<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        message: &'a Message,
    ) -> StoreFuture<'a, ()>;

    /// Replaces the stored message `index` (used once per resume, to add a new prompt to an
    /// unanswered user message so roles keep alternating). No message there:
    /// [`StoreError::Conflict`].
    fn replace_message<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        message: &'a Message,
    ) -> StoreFuture<'a, ()>;

    /// The task's API conversation history, in order (empty for an unknown task; see
    /// [`TaskStore::messages_of_task`]).
    fn messages<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>>;

    /// Appends a UI event (`kind` is its `type`) and returns its `seq`. `durable_now = false`
    /// lets the commit skip waiting for the disk: it survives the process being killed and
    /// reaches the disk with the next durable commit (streamed text chunks).
    fn append_event<'a>(
        &'a self,
        id: &'a str,
        kind: &'a str,
        event: &'a Value,
        durable_now: bool,
    ) -> StoreFuture<'a, i64>;

    /// The task's UI events with `seq >= from`, in order.
    fn events_from<'a>(&'a self, id: &'a str, from: i64) -> StoreFuture<'a, Vec<StoredEvent>>;

    /// The `seq` of the task's last event of kind `kind`.
    fn last_event_of_kind<'a>(&'a self, id: &'a str, kind: &'a str)
    -> StoreFuture<'a, Option<i64>>;

    /// Deletes one UI event (SPEC R10.3 drops a trailing `api_req_started`).
    fn delete_event<'a>(&'a self, id: &'a str, seq: i64) -> StoreFuture<'a, ()>;

    /// The largest `request_index` among the task's `api_req_started` events (0 when none),
    /// so a resumed task numbers its requests on.
    fn max_request_index<'a>(&'a self, id: &'a str) -> StoreFuture<'a, u32>;

    /// Records a context edit of `kind`.
    fn add_context_edit<'a>(
        &'a self,
        id: &'a str,
        kind: &'a str,
        detail: &'a Value,
    ) -> StoreFuture<'a, ()>;

    /// The task's context edits in order.
    fn context_edits<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<ContextEdit>>;

    /// Stores a whole task at once (import, copying between stores): the task row with its
    /// totals and range, its messages, UI events and context edits, in one transaction, so a
    /// failed import leaves nothing behind. A task with the same id:
    /// [`StoreError::Conflict`]. Returns the stored task.
    fn import_task<'a>(
        &'a self,
        task: &'a TaskRecord,
        messages: &'a [Message],
        events: &'a [ImportedEvent],
        edits: &'a [ImportedEdit],
    ) -> StoreFuture<'a, TaskRecord>;

    /// The task's UI events in order.
    fn events<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<StoredEvent>> {
        self.events_from(id, 0)
    }

    /// The history of an existing task: [`StoreError::TaskNotFound`] for an unknown id (where
    /// [`TaskStore::messages`] returns an empty list).
    fn messages_of_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>> {
        Box::pin(async move {
            self.task(id).await?;
            self.messages(id).await
        })
    }
}

/// The current time in Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
