//! [`TaskStore`], the trait every task store backend implements (SPEC R10.1, R10.2, R13.1):
//! one transaction per method, object-safe and async (see the [`super`] docs for the contract).

use serde_json::Value;
use switchyard_api::Message;

use super::error::StoreFuture;
use super::keys::KeyStore;
use super::records::{
    ContextEdit, ImportedEdit, ImportedEvent, NewTask, StoredEvent, TaskRecord, TaskUsage,
};
use super::requests::RequestLog;
use super::responses::ResponseStore;
use crate::context::DeletedRange;
use crate::limits::state::LimitsStore;

/// Where tasks are kept (see the module docs for the contract every implementation keeps).
/// The same backend keeps the limits state of SPEC R12 ([`LimitsStore`]) and the gateway's
/// request log ([`RequestLog`]), so one `Arc<dyn TaskStore>` holds all three.
///
/// Ids are the strings [`TaskStore::create_task`] returned. Message indices count from 0.
/// Every method fails with [`StoreError::TaskNotFound`](super::StoreError::TaskNotFound) for an unknown task where it says so,
/// and with [`StoreError::Backend`](super::StoreError::Backend) when the database itself fails.
pub trait TaskStore: LimitsStore + RequestLog + ResponseStore + KeyStore + Send + Sync {
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

    /// The task `id`, or [`StoreError::TaskNotFound`](super::StoreError::TaskNotFound).
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
    /// another process appended to the same task: [`StoreError::Conflict`](super::StoreError::Conflict).
    fn append_message<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        message: &'a Message,
    ) -> StoreFuture<'a, ()>;

    /// [`TaskStore::append_message`] of a message given as its JSON text (`json`, as
    /// `serde_json` writes a [`Message`]; built once by the caller, which then holds no other
    /// copy of it for the write). The default reads it back and appends it; the stores
    /// override it to store the text as it is.
    fn append_message_json<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        json: String,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let message: Message =
                serde_json::from_str(&json).map_err(|source| super::StoreError::Json {
                    id: id.to_owned(),
                    source,
                })?;
            drop(json);
            self.append_message(id, index, &message).await
        })
    }

    /// Replaces the stored message `index` (used once per resume, to add a new prompt to an
    /// unanswered user message so roles keep alternating). No message there:
    /// [`StoreError::Conflict`](super::StoreError::Conflict).
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
    /// [`StoreError::Conflict`](super::StoreError::Conflict). Returns the stored task.
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

    /// The history of an existing task: [`StoreError::TaskNotFound`](super::StoreError::TaskNotFound) for an unknown id (where
    /// [`TaskStore::messages`] returns an empty list).
    fn messages_of_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>> {
        Box::pin(async move {
            self.task(id).await?;
            self.messages(id).await
        })
    }
}
