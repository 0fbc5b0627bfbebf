//! [`TaskStore`] on SQLite, each method's statements run on tokio's blocking pool.
//! Spec: R10, R13.1.

use serde_json::Value;
use switchyard_api::Message;

use super::{SqliteStore, history, tasks};
use crate::context::DeletedRange;
use crate::store::rows::to_json;
use crate::store::{
    ContextEdit, ImportedEdit, ImportedEvent, NewTask, StoreFuture, StoredEvent, TaskRecord,
    TaskStore, TaskUsage,
};

impl TaskStore for SqliteStore {
    fn create_task(&self, new: &NewTask) -> StoreFuture<'static, TaskRecord> {
        self.with(new, tasks::create_task)
    }

    fn create_task_with_message(
        &self,
        new: &NewTask,
        first: &Message,
    ) -> StoreFuture<'static, TaskRecord> {
        let new = new.clone();
        let json = to_json("(new task)", first);
        self.call(move |db| tasks::create_task_with_message(db, &new, &json?))
    }

    fn task(&self, id: &str) -> StoreFuture<'static, TaskRecord> {
        self.by_id(id, tasks::task)
    }

    fn list_tasks(&self) -> StoreFuture<'static, Vec<TaskRecord>> {
        self.call(tasks::list_tasks)
    }

    fn add_usage(&self, id: &str, usage: &TaskUsage) -> StoreFuture<'static, ()> {
        let (id, usage) = (id.to_owned(), *usage);
        self.call(move |db| tasks::add_usage(db, &id, &usage))
    }

    fn set_task_model(
        &self,
        id: &str,
        mode: &str,
        provider: &str,
        model: &str,
    ) -> StoreFuture<'static, ()> {
        let [id, mode, provider, model] = [id, mode, provider, model].map(str::to_owned);
        self.call(move |db| tasks::set_task_model(db, &id, &mode, &provider, &model))
    }

    fn set_deleted_range(
        &self,
        id: &str,
        range: Option<DeletedRange>,
        detail: &Value,
    ) -> StoreFuture<'static, ()> {
        let (id, detail) = (id.to_owned(), detail.to_string());
        self.call(move |db| tasks::set_deleted_range(db, &id, range, &detail))
    }

    fn append_message(
        &self,
        id: &str,
        index: usize,
        message: &Message,
    ) -> StoreFuture<'static, ()> {
        self.write_message(id, index, message, history::append_message)
    }

    fn append_message_json(
        &self,
        id: &str,
        index: usize,
        json: String,
    ) -> StoreFuture<'static, ()> {
        let id = id.to_owned();
        self.call(move |db| history::append_message(db, &id, index, &json))
    }

    fn replace_message(
        &self,
        id: &str,
        index: usize,
        message: &Message,
    ) -> StoreFuture<'static, ()> {
        self.write_message(id, index, message, history::replace_message)
    }

    fn messages(&self, id: &str) -> StoreFuture<'static, Vec<Message>> {
        self.by_id(id, history::messages)
    }

    fn append_event(
        &self,
        id: &str,
        kind: &str,
        event: &Value,
        durable_now: bool,
    ) -> StoreFuture<'static, i64> {
        let (id, kind, event) = (id.to_owned(), kind.to_owned(), event.to_string());
        self.call(move |db| history::append_event(db, &id, &kind, &event, durable_now))
    }

    fn events_from(&self, id: &str, from: i64) -> StoreFuture<'static, Vec<StoredEvent>> {
        let id = id.to_owned();
        self.call(move |db| history::events_from(db, &id, from))
    }

    fn last_event_of_kind(&self, id: &str, kind: &str) -> StoreFuture<'static, Option<i64>> {
        let (id, kind) = (id.to_owned(), kind.to_owned());
        self.call(move |db| history::last_event_of_kind(db, &id, &kind))
    }

    fn delete_event(&self, id: &str, seq: i64) -> StoreFuture<'static, ()> {
        let id = id.to_owned();
        self.call(move |db| history::delete_event(db, &id, seq))
    }

    fn max_request_index(&self, id: &str) -> StoreFuture<'static, u32> {
        self.by_id(id, history::max_request_index)
    }

    fn add_context_edit(&self, id: &str, kind: &str, detail: &Value) -> StoreFuture<'static, ()> {
        let (id, kind, detail) = (id.to_owned(), kind.to_owned(), detail.to_string());
        self.call(move |db| history::add_context_edit(db, &id, &kind, &detail))
    }

    fn context_edits(&self, id: &str) -> StoreFuture<'static, Vec<ContextEdit>> {
        self.by_id(id, history::context_edits)
    }

    fn import_task(
        &self,
        task: &TaskRecord,
        messages: &[Message],
        events: &[ImportedEvent],
        edits: &[ImportedEdit],
    ) -> StoreFuture<'static, TaskRecord> {
        let whole = (
            task.clone(),
            messages.to_vec(),
            events.to_vec(),
            edits.to_vec(),
        );
        self.call(move |db| history::import_task(db, &whole.0, &whole.1, &whole.2, &whole.3))
    }
}
