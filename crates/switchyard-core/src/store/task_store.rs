//! [`TaskStore`], the trait every store backend implements for tasks.
//! Spec: R10.1, R10.2, R13.1.

use serde_json::Value;
use switchyard_api::Message;

use super::error::StoreFuture;
use super::gateway::audit::AuditStore;
use super::gateway::key_store::KeyStore;
use super::gateway::leases::LeaseStore;
use super::gateway::open::OpenStore;
use super::gateway::requests::RequestLog;
use super::gateway::responses::ResponseStore;
use super::records::{
    ContextEdit, ImportedEdit, ImportedEvent, NewTask, StoredEvent, TaskRecord, TaskUsage,
};
use crate::context::DeletedRange;
use crate::limits::state::LimitsStore;

/// Where tasks are kept; its supertraits are the backend's other roles.
pub trait TaskStore:
    LimitsStore
    + RequestLog
    + ResponseStore
    + KeyStore
    + LeaseStore
    + OpenStore
    + AuditStore
    + Send
    + Sync
{
    /// Creates a task and returns it; its id is the current Unix time in ms, made unique.
    fn create_task<'a>(&'a self, new: &'a NewTask) -> StoreFuture<'a, TaskRecord>;

    /// Creates a task whose message 0 is `first` and returns it, in one commit where it can.
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

    /// Adds one request's usage to the task's totals, its spend row and the day's total.
    fn add_usage<'a>(&'a self, id: &'a str, usage: &'a TaskUsage) -> StoreFuture<'a, ()>;

    /// Records the mode, provider and model the task now runs with, after a resume.
    fn set_task_model<'a>(
        &'a self,
        id: &'a str,
        mode: &'a str,
        provider: &'a str,
        model: &'a str,
    ) -> StoreFuture<'a, ()>;

    /// Sets the task's deleted range and records a `truncation` edit with `detail`.
    fn set_deleted_range<'a>(
        &'a self,
        id: &'a str,
        range: Option<DeletedRange>,
        detail: &'a Value,
    ) -> StoreFuture<'a, ()>;

    /// Appends `message` as message `index` of task `id`; a message there is a conflict.
    fn append_message<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        message: &'a Message,
    ) -> StoreFuture<'a, ()>;

    /// [`TaskStore::append_message`] of a message as its JSON text, stored as it is.
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

    /// Replaces the stored message `index`, which must exist.
    fn replace_message<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        message: &'a Message,
    ) -> StoreFuture<'a, ()>;

    /// The task's API conversation history in order, empty for an unknown task.
    fn messages<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>>;

    /// Appends a UI event of type `kind` and returns its `seq`, synced now if `durable_now`.
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

    /// Deletes one UI event.
    fn delete_event<'a>(&'a self, id: &'a str, seq: i64) -> StoreFuture<'a, ()>;

    /// The largest `request_index` of the task's `api_req_started` events, or 0.
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

    /// Stores a whole task with its messages, events and edits in one transaction.
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

    /// The history of an existing task; an unknown id is an error.
    fn messages_of_task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>> {
        Box::pin(async move {
            self.task(id).await?;
            self.messages(id).await
        })
    }
}
