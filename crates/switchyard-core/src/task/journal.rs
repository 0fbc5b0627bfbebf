//! How a task writes itself down: each change goes to the store before the turn goes on.
//! Spec: R6.3, R8.6, R9.5, R10.2, R10.5.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_api::{ApiError, ErrorKind, Message};
use tokio::time::Instant;

use super::conversation::Conversation;
use super::events::TaskEvent;
use super::observer::{BoxFuture, TurnObserver};
use crate::context::{DeletedRange, find_duplicate_file_reads};
use crate::store::{StoreError, TaskStore};

const FILE_READ_DEDUPE: &str = "file_read_dedupe";

#[derive(Debug)]
pub(super) struct JournalState {
    /// Messages of the conversation already stored.
    pub persisted: usize,
    /// File-read dedupe edits already recorded: `(message, block, path)`.
    pub recorded_dedupe: HashSet<(usize, usize, String)>,
    pub streaming: Streaming,
    /// When the caller started the task; `first_content` counts from here.
    pub started: Instant,
    pub first_content: Option<Duration>,
    writing: Arc<tokio::sync::Mutex<()>>,
}

/// What streamed since the last `api_req_started`; the text is read back from stored events.
#[derive(Debug, Default)]
pub(super) struct Streaming {
    pub content_seen: bool,
}

impl Streaming {
    fn observe(&mut self, event: &TaskEvent) {
        match event {
            TaskEvent::ApiReqStarted { .. } => *self = Self::default(),
            TaskEvent::Text { .. } | TaskEvent::Reasoning { .. } | TaskEvent::ToolCall { .. } => {
                self.content_seen = true;
            }
            _ => {}
        }
    }
}

pub(super) async fn streamed_text(store: &dyn TaskStore, id: &str) -> Result<String, StoreError> {
    let Some(started) = store.last_event_of_kind(id, "api_req_started").await? else {
        return Ok(String::new());
    };
    let events = store.events_from(id, started + 1).await?;
    let texts = (events.iter())
        .filter(|e| e.kind == "text")
        .filter_map(|e| e.event.get("text").and_then(Value::as_str));
    Ok(texts.collect())
}

impl JournalState {
    pub fn new(persisted: usize) -> Self {
        Self {
            persisted,
            recorded_dedupe: HashSet::new(),
            streaming: Streaming::default(),
            started: Instant::now(),
            first_content: None,
            writing: Arc::default(),
        }
    }

    pub async fn reload(store: &dyn TaskStore, id: &str) -> Result<Self, StoreError> {
        let persisted = store.task(id).await?.message_count;
        let recorded_dedupe = store
            .context_edits(id)
            .await?
            .into_iter()
            .filter(|e| e.kind == FILE_READ_DEDUPE)
            .filter_map(|e| {
                Some((
                    e.detail.get("message_index")?.as_u64()? as usize,
                    e.detail.get("block_index")?.as_u64()? as usize,
                    e.detail.get("path")?.as_str()?.to_owned(),
                ))
            })
            .collect();
        Ok(Self {
            persisted,
            recorded_dedupe,
            streaming: Streaming::default(),
            started: Instant::now(),
            first_content: None,
            writing: Arc::default(),
        })
    }

    /// Waits for a write a dropped turn left running, then reloads what the store holds.
    pub async fn settle(&mut self, store: &dyn TaskStore, id: &str) -> Result<(), StoreError> {
        drop(self.writing.lock().await);
        let stored = Self::reload(store, id).await?;
        self.persisted = stored.persisted;
        self.recorded_dedupe = stored.recorded_dedupe;
        Ok(())
    }

    pub fn observe(&mut self, event: &TaskEvent) {
        self.streaming.observe(event);
        if self.first_content.is_none() && self.streaming.content_seen {
            self.first_content = Some(self.started.elapsed());
        }
    }
}

pub(super) async fn store_event(
    store: &dyn TaskStore,
    task_id: &str,
    event: &TaskEvent,
) -> Result<(), StoreError> {
    let mut value = serde_json::to_value(event).unwrap_or(Value::Null);
    switchyard_api::secrets::scrub_json(&mut value);
    let kind = value["type"].as_str().unwrap_or("unknown").to_owned();
    // These skip their own fsync: the next full commit always comes before their request.
    let deferred = matches!(
        event,
        TaskEvent::Text { .. } | TaskEvent::Reasoning { .. } | TaskEvent::TaskStarted { .. }
    );
    store
        .append_event(task_id, &kind, &value, !deferred)
        .await?;
    if let Some(usage) = event.usage() {
        store.add_usage(task_id, &usage).await?;
    }
    Ok(())
}

pub(super) async fn persist_history(
    store: &Arc<dyn TaskStore>,
    task_id: &str,
    state: &mut JournalState,
    conversation: &Conversation,
) -> Result<(), StoreError> {
    let history = &conversation.api_conversation_history;
    for (i, message) in history.iter().enumerate().skip(state.persisted) {
        // The stored form, built once: the write holds no copy of the message but its JSON.
        let json = stored_json(message).map_err(|source| StoreError::Json {
            id: task_id.to_owned(),
            source,
        })?;
        let (store, id) = (Arc::clone(store), task_id.to_owned());
        shielded(&state.writing, async move {
            store.append_message_json(&id, i, json).await
        })
        .await?;
        state.persisted = i + 1;
    }
    for edit in find_duplicate_file_reads(history, conversation.conversation_history_deleted_range)
    {
        let key = (edit.message_index, edit.block_index, edit.path.clone());
        if state.recorded_dedupe.contains(&key) {
            continue;
        }
        let mut detail = serde_json::to_value(&edit).unwrap_or(Value::Null);
        switchyard_api::secrets::scrub_json(&mut detail);
        let (store, id) = (Arc::clone(store), task_id.to_owned());
        shielded(&state.writing, async move {
            store.add_context_edit(&id, FILE_READ_DEDUPE, &detail).await
        })
        .await?;
        state.recorded_dedupe.insert(key);
    }
    Ok(())
}

pub(super) fn scrubbed_message(message: &Message) -> Message {
    switchyard_api::secrets::scrub_serde(message).unwrap_or_else(|| message.clone())
}

fn stored_json(message: &Message) -> Result<String, serde_json::Error> {
    match switchyard_api::secrets::scrub_serde(message) {
        Some(clean) => serde_json::to_string(&clean),
        None => serde_json::to_string(message),
    }
}

/// Runs one store write to its end even when a cancel drops the turn awaiting it.
async fn shielded<T, F>(lock: &Arc<tokio::sync::Mutex<()>>, write: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, StoreError>> + Send + 'static,
{
    let guard = Arc::clone(lock).lock_owned().await;
    tokio::spawn(async move {
        let result = write.await;
        drop(guard);
        result
    })
    .await
    .unwrap_or_else(|e| {
        Err(StoreError::Backend {
            location: "the task store".to_owned(),
            source: Box::new(e),
        })
    })
}

/// The observer of a task's turn: every change goes to the store; the first failure is kept.
pub(super) struct Journal<'a> {
    pub store: &'a Arc<dyn TaskStore>,
    pub task_id: &'a str,
    pub state: &'a mut JournalState,
    pub on_event: &'a mut (dyn FnMut(TaskEvent) + Send),
    pub failure: Option<StoreError>,
}

impl Journal<'_> {
    fn fail(&mut self, e: StoreError) {
        self.failure.get_or_insert(e);
    }
}

impl TurnObserver for Journal<'_> {
    fn store_failed(&mut self, e: StoreError) -> ApiError {
        let error = ApiError::new(ErrorKind::Server, e.to_string());
        self.fail(e);
        error
    }

    fn failed(&self) -> bool {
        self.failure.is_some()
    }

    fn event(&mut self, mut event: TaskEvent) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            event.scrub_secrets();
            self.state.observe(&event);
            let (store, id, stored) = (
                Arc::clone(self.store),
                self.task_id.to_owned(),
                event.clone(),
            );
            let written = shielded(&self.state.writing, async move {
                store_event(store.as_ref(), &id, &stored).await
            })
            .await;
            if let Err(e) = written {
                self.fail(e);
            }
            (self.on_event)(event);
        })
    }

    fn range_changed(&mut self, range: Option<DeletedRange>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let (store, id) = (Arc::clone(self.store), self.task_id.to_owned());
            let written = shielded(&self.state.writing, async move {
                store
                    .set_deleted_range(&id, range, &json!({ "range": range }))
                    .await
            })
            .await;
            if let Err(e) = written {
                self.fail(e);
            }
        })
    }

    fn history_changed<'a>(
        &'a mut self,
        conversation: &'a Conversation,
    ) -> BoxFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            if let Err(e) =
                persist_history(self.store, self.task_id, self.state, conversation).await
            {
                self.fail(e);
            }
            if self.failure.is_some() {
                return Err(ApiError::new(
                    ErrorKind::Server,
                    "the task could not be saved",
                ));
            }
            Ok(())
        })
    }
}
