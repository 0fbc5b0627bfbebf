//! [`TaskStore`] on PostgreSQL (SPEC R10, R13.1): each method is the backend's async function
//! of the same name, boxed.

use serde_json::Value;
use switchyard_api::Message;

use super::PgStore;
use crate::context::DeletedRange;
use crate::store::{
    ContextEdit, ImportedEdit, ImportedEvent, NewTask, StoreFuture, StoredEvent, TaskRecord,
    TaskStore, TaskUsage,
};

impl TaskStore for PgStore {
    fn create_task<'a>(&'a self, new: &'a NewTask) -> StoreFuture<'a, TaskRecord> {
        Box::pin(self.do_create_task(new))
    }

    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, TaskRecord> {
        Box::pin(self.do_task(id))
    }

    fn list_tasks(&self) -> StoreFuture<'_, Vec<TaskRecord>> {
        Box::pin(self.do_list_tasks())
    }

    fn add_usage<'a>(&'a self, id: &'a str, usage: &'a TaskUsage) -> StoreFuture<'a, ()> {
        Box::pin(self.do_add_usage(id, usage))
    }

    fn set_task_model<'a>(
        &'a self,
        id: &'a str,
        mode: &'a str,
        provider: &'a str,
        model: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.do_set_task_model(id, mode, provider, model))
    }

    fn set_deleted_range<'a>(
        &'a self,
        id: &'a str,
        range: Option<DeletedRange>,
        detail: &'a Value,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.do_set_deleted_range(id, range, detail))
    }

    fn append_message<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        message: &'a Message,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.do_append_message(id, index, message))
    }

    fn replace_message<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        message: &'a Message,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.do_replace_message(id, index, message))
    }

    fn messages<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>> {
        Box::pin(self.do_messages(id))
    }

    fn append_event<'a>(
        &'a self,
        id: &'a str,
        kind: &'a str,
        event: &'a Value,
        durable_now: bool,
    ) -> StoreFuture<'a, i64> {
        Box::pin(self.do_append_event(id, kind, event, durable_now))
    }

    fn events_from<'a>(&'a self, id: &'a str, from: i64) -> StoreFuture<'a, Vec<StoredEvent>> {
        Box::pin(self.do_events_from(id, from))
    }

    fn last_event_of_kind<'a>(
        &'a self,
        id: &'a str,
        kind: &'a str,
    ) -> StoreFuture<'a, Option<i64>> {
        Box::pin(self.do_last_event_of_kind(id, kind))
    }

    fn delete_event<'a>(&'a self, id: &'a str, seq: i64) -> StoreFuture<'a, ()> {
        Box::pin(self.do_delete_event(id, seq))
    }

    fn max_request_index<'a>(&'a self, id: &'a str) -> StoreFuture<'a, u32> {
        Box::pin(self.do_max_request_index(id))
    }

    fn add_context_edit<'a>(
        &'a self,
        id: &'a str,
        kind: &'a str,
        detail: &'a Value,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.do_add_context_edit(id, kind, detail))
    }

    fn context_edits<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<ContextEdit>> {
        Box::pin(self.do_context_edits(id))
    }

    fn import_task<'a>(
        &'a self,
        task: &'a TaskRecord,
        messages: &'a [Message],
        events: &'a [ImportedEvent],
        edits: &'a [ImportedEdit],
    ) -> StoreFuture<'a, TaskRecord> {
        Box::pin(self.do_import_task(task, messages, events, edits))
    }
}
