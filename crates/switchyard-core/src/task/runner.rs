//! A task that persists itself (SPEC R10): the runner owns the task id, the store handle, the
//! conversation and the totals, and runs one user turn at a time through
//! [`run_turn_observed`], making every change durable before the next request is sent.
//!
//! What is written, and when (each a small transaction, R10.2):
//! - every [`TaskEvent`] as a UI event row, as it happens; streamed text chunks too, so a
//!   process killed mid-answer loses at most the chunk being received;
//! - each usage report into the task's totals;
//! - every message appended to the API conversation history, before the next request;
//! - the deleted range, the moment truncation changes it, before the request (R6.3);
//! - each new file-read dedupe (R8.6) as a context edit, before the request that uses it.
//!
//! [`TaskRunner::resume`] reopens a task and handles a turn that a crash or kill cut short
//! (R9.3, R10.3): a trailing `api_req_started` with neither a cost nor a cancel reason is
//! dropped when nothing streamed after it; when text had streamed, that text is kept as the
//! assistant's answer marked "[Response interrupted by API Error]" and the request row gets
//! `cancel_reason: streaming_failed`, exactly as for a stream that failed part-way.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchyard_api::{ApiError, ContentBlock, ErrorKind, Message, Role};

use super::TaskEvent;
use super::attempt::{ApiRequestContext, Conversation};
use super::request::RequestStatus;
use super::tools::{ToolApprover, ToolLoopSettings, ToolStep, merge, tool_step};
use super::turn::{CancelReason, INTERRUPTED_MARKER, TurnOutcome, run_turn_observed};
use crate::context::find_duplicate_file_reads;
use crate::mcp::McpServerHub;
use crate::store::{NewTask, StoreError, TaskRecord, TaskStore, TaskUsage};

/// Appended to the partial answer of a request the user cancelled (the reference's marker).
pub const INTERRUPTED_BY_USER_MARKER: &str = "[Response interrupted by user]";

/// The `streaming_failed_message` recorded on resume for a request whose process ended while
/// its answer streamed.
pub const PROCESS_ENDED_MESSAGE: &str =
    "switchyard stopped while the response was streaming (the process was killed or crashed)";

/// What [`TaskRunner::resume`] found and did about an interrupted turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumeReport {
    /// Bytes of partial assistant text recovered into the history.
    pub recovered_partial_bytes: usize,
    /// A trailing `api_req_started` with nothing after it was dropped (R10.3).
    pub dropped_request: bool,
    /// The request that was marked `streaming_failed` on resume.
    pub interrupted_request: Option<u32>,
}

/// What streamed since the last `api_req_started`.
#[derive(Debug, Default)]
struct Streaming {
    text: String,
    content_seen: bool,
}

/// A task bound to its store. See the module docs.
pub struct TaskRunner {
    store: Arc<TaskStore>,
    task: TaskRecord,
    conversation: Conversation,
    /// Messages of `conversation` already stored.
    persisted: usize,
    request_index: u32,
    last_request_total_tokens: u64,
    /// File-read dedupe edits already recorded: (message, block, path).
    recorded_dedupe: HashSet<(usize, usize, String)>,
    streaming: Streaming,
}

impl std::fmt::Debug for TaskRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRunner")
            .field("task_id", &self.task.id)
            .field(
                "messages",
                &self.conversation.api_conversation_history.len(),
            )
            .finish()
    }
}

impl TaskRunner {
    /// Creates a new task in `store`. Add its first prompt with [`Self::add_user_message`].
    pub fn create(store: Arc<TaskStore>, new: &NewTask) -> Result<Self, StoreError> {
        let task = store.create_task(new)?;
        Ok(Self {
            store,
            task,
            conversation: Conversation::default(),
            persisted: 0,
            request_index: 0,
            last_request_total_tokens: 0,
            recorded_dedupe: HashSet::new(),
            streaming: Streaming::default(),
        })
    }

    /// Reopens task `id`: its history, deleted range, request numbering and last request size
    /// (for R8.2), and handles a turn cut short by a crash (R9.3, R10.3; see the module docs).
    pub fn resume(store: Arc<TaskStore>, id: &str) -> Result<(Self, ResumeReport), StoreError> {
        let task = store.task(id)?;
        let history = store.messages(id)?;
        let recorded_dedupe = store
            .context_edits(id)?
            .into_iter()
            .filter(|e| e.kind == "file_read_dedupe")
            .filter_map(|e| {
                Some((
                    e.detail.get("message_index")?.as_u64()? as usize,
                    e.detail.get("block_index")?.as_u64()? as usize,
                    e.detail.get("path")?.as_str()?.to_owned(),
                ))
            })
            .collect();
        let mut runner = Self {
            persisted: history.len(),
            conversation: Conversation {
                api_conversation_history: history,
                conversation_history_deleted_range: task.conversation_history_deleted_range,
            },
            request_index: store.max_request_index(id)?,
            last_request_total_tokens: task.last_request_tokens,
            store,
            task,
            recorded_dedupe,
            streaming: Streaming::default(),
        };
        let report = runner.repair_interrupted_turn()?;
        Ok((runner, report))
    }

    fn repair_interrupted_turn(&mut self) -> Result<ResumeReport, StoreError> {
        let mut report = ResumeReport::default();
        let id = self.task.id.clone();
        let Some(seq) = self.store.last_event_of_kind(&id, "api_req_started")? else {
            return Ok(report);
        };
        let events = self.store.events_from(&id, seq)?;
        let Some((started, rest)) = events.split_first() else {
            return Ok(report);
        };
        let has_cost = rest.iter().any(|e| e.kind == "usage");
        let has_cancel = rest
            .iter()
            .any(|e| e.kind == "api_req_finished" && !e.event["cancel_reason"].is_null());
        if has_cost || has_cancel {
            return Ok(report);
        }
        let content_seen = rest
            .iter()
            .any(|e| matches!(e.kind.as_str(), "text" | "reasoning" | "tool_call"));
        if !content_seen {
            // R10.3: a request that never produced anything is dropped.
            self.store.delete_event(&id, started.seq)?;
            report.dropped_request = true;
            return Ok(report);
        }
        // R9.3: what streamed is kept, marked, and the request is recorded as failed.
        let text: String = rest
            .iter()
            .filter(|e| e.kind == "text")
            .filter_map(|e| e.event["text"].as_str())
            .collect();
        if !text.is_empty() && self.last_role() == Some(Role::User) {
            report.recovered_partial_bytes = text.len();
            self.append_message(Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text { text },
                    ContentBlock::Text {
                        text: INTERRUPTED_MARKER.to_owned(),
                    },
                ],
            })?;
        }
        let request_index = started.event["request_index"].as_u64().unwrap_or(0) as u32;
        report.interrupted_request = Some(request_index);
        self.record_event(&TaskEvent::ApiReqFinished {
            request_index,
            cancel_reason: Some(CancelReason::StreamingFailed),
            streaming_failed_message: Some(PROCESS_ENDED_MESSAGE.to_owned()),
        })?;
        Ok(report)
    }

    /// The task's id (what `switchyard resume` takes).
    pub fn task_id(&self) -> &str {
        &self.task.id
    }

    /// The task row as it was opened.
    pub fn task(&self) -> &TaskRecord {
        &self.task
    }

    /// Records that the task now runs with this mode, provider and model (a resume whose flags
    /// chose others); nothing is written when they are the task's already.
    pub fn set_model(&mut self, mode: &str, provider: &str, model: &str) -> Result<(), StoreError> {
        if (
            self.task.mode.as_str(),
            self.task.provider.as_str(),
            self.task.model.as_str(),
        ) == (mode, provider, model)
        {
            return Ok(());
        }
        self.store
            .set_task_model(&self.task.id, mode, provider, model)?;
        self.task.mode = mode.to_owned();
        self.task.provider = provider.to_owned();
        self.task.model = model.to_owned();
        Ok(())
    }

    /// The conversation so far.
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    /// True when the last message is the user's, i.e. a turn is due.
    pub fn awaits_answer(&self) -> bool {
        self.last_role() == Some(Role::User)
    }

    /// True when the last message is an answer that was cut off (it ends with
    /// [`INTERRUPTED_MARKER`] or [`INTERRUPTED_BY_USER_MARKER`]): a stream failure, a
    /// cancellation, or a crash repaired by [`Self::resume`].
    pub fn last_answer_was_cut_off(&self) -> bool {
        match self.conversation.api_conversation_history.last() {
            Some(m) if m.role == Role::Assistant => matches!(
                m.content.last(),
                Some(ContentBlock::Text { text })
                    if text == INTERRUPTED_MARKER || text == INTERRUPTED_BY_USER_MARKER
            ),
            _ => false,
        }
    }

    fn last_role(&self) -> Option<Role> {
        self.conversation
            .api_conversation_history
            .last()
            .map(|m| m.role)
    }

    fn append_message(&mut self, message: Message) -> Result<(), StoreError> {
        let index = self.conversation.api_conversation_history.len();
        self.store.append_message(&self.task.id, index, &message)?;
        self.conversation.api_conversation_history.push(message);
        self.persisted = index + 1;
        Ok(())
    }

    /// Adds the user's prompt to the history, durably. When the last message is already the
    /// user's (a turn that never got an answer), the prompt joins it as another text block so
    /// roles keep alternating.
    pub fn add_user_message(&mut self, text: &str) -> Result<(), StoreError> {
        let block = ContentBlock::Text {
            text: text.to_owned(),
        };
        if self.last_role() == Some(Role::User) {
            let index = self.conversation.api_conversation_history.len() - 1;
            let mut merged = self.conversation.api_conversation_history[index].clone();
            merged.content.push(block);
            self.store.replace_message(&self.task.id, index, &merged)?;
            self.conversation.api_conversation_history[index] = merged;
        } else {
            self.append_message(Message {
                role: Role::User,
                content: vec![block],
            })?;
        }
        record_dedupe(
            &self.store,
            &self.task.id,
            &self.conversation,
            &mut self.recorded_dedupe,
        )
    }

    /// Stores one event (and, for a usage report, adds it to the totals), tracking what
    /// streamed since the last `api_req_started`.
    pub fn record_event(&mut self, event: &TaskEvent) -> Result<(), StoreError> {
        store_event(&self.store, &self.task.id, &mut self.streaming, event)
    }

    /// Runs one user turn on the conversation (SPEC R9) with everything persisted as it
    /// happens; events go to `on_event` after they are stored. `ctx.request_index` and
    /// `ctx.previous_request_total_tokens` are taken from the task.
    ///
    /// Returns the turn's outcome, or the store error that stopped it (the turn ends at the
    /// first change that could not be saved; the history is intact up to it).
    pub async fn run_turn(
        &mut self,
        ctx: &ApiRequestContext<'_>,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<TurnOutcome, StoreError> {
        let ctx = ApiRequestContext {
            previous_request_total_tokens: self.last_request_total_tokens,
            cancel: ctx.cancel.clone(),
            ..*ctx
        };
        let latch: Mutex<Option<StoreError>> = Mutex::new(None);
        let fail = |e: StoreError| {
            let mut slot = latch
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if slot.is_none() {
                *slot = Some(e);
            }
        };
        let store = &self.store;
        let task_id = self.task.id.as_str();
        let persisted = &mut self.persisted;
        let recorded = &mut self.recorded_dedupe;
        let streaming = &mut self.streaming;
        let failed = || {
            latch
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_some()
        };
        let mut on_history_changed = |conversation: &Conversation| -> Result<(), Box<ApiError>> {
            if let Err(e) = persist_history(store, task_id, conversation, persisted, recorded) {
                fail(e);
            }
            if failed() {
                return Err(Box::new(ApiError::new(
                    ErrorKind::Server,
                    "the task could not be saved",
                )));
            }
            Ok(())
        };
        let mut on_range_changed = |range| {
            let detail = json!({ "range": range });
            if let Err(e) = store.set_deleted_range(task_id, range, &detail) {
                fail(e);
            }
        };
        let mut on_stored_event = |event: TaskEvent| {
            if let Err(e) = store_event(store, task_id, streaming, &event) {
                fail(e);
            }
            on_event(event);
        };
        let outcome = run_turn_observed(
            &ctx,
            &mut self.conversation,
            &mut self.request_index,
            &mut on_history_changed,
            &mut on_range_changed,
            &mut on_stored_event,
        )
        .await;
        if let Some(e) = latch
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            return Err(e);
        }
        self.last_request_total_tokens = outcome.last_request_total_tokens;
        Ok(outcome)
    }

    /// Runs one user turn with its MCP tool calls (SPEC R11.2): [`Self::run_turn`], then, while
    /// the answer calls offered MCP tools, [`tool_step`] carries them out and their results go
    /// into the history (durably, before the next request) and the next request is sent.
    ///
    /// The outcome sums every request of the turn; its status is that of the last request, or
    /// `Failed` when `settings.max_rounds` rounds of tool calls did not end the turn. A store
    /// error ends the turn at the first change that could not be saved.
    pub async fn run_turn_with_tools(
        &mut self,
        ctx: &ApiRequestContext<'_>,
        hub: &McpServerHub,
        approver: &dyn ToolApprover,
        settings: ToolLoopSettings,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<TurnOutcome, StoreError> {
        let mut total: Option<TurnOutcome> = None;
        let mut rounds = 0;
        loop {
            let outcome = self.run_turn(ctx, on_event).await?;
            let completed = matches!(outcome.status, RequestStatus::Completed);
            let mut sum = merge(total.take(), outcome);
            if !completed {
                return Ok(sum);
            }
            let mut store_failure = None;
            let step = {
                let (store, task_id, streaming) = (&self.store, &self.task.id, &mut self.streaming);
                let mut on_tool_event = |event: TaskEvent| {
                    if let Err(e) = store_event(store, task_id, streaming, &event) {
                        store_failure.get_or_insert(e);
                    }
                    on_event(event);
                };
                tool_step(
                    hub,
                    approver,
                    settings,
                    &mut rounds,
                    &self.conversation,
                    &mut on_tool_event,
                )
                .await
            };
            if let Some(e) = store_failure {
                return Err(e);
            }
            match step {
                ToolStep::Answered => return Ok(sum),
                ToolStep::Stopped(error) => {
                    sum.status = RequestStatus::Failed(error);
                    return Ok(sum);
                }
                ToolStep::Results(message) => self.append_message(message)?,
            }
            total = Some(sum);
        }
    }

    /// Records a turn the user cancelled by dropping [`Self::run_turn`]'s future (Ctrl-C,
    /// R9.5): the text that streamed is kept as the assistant's answer, marked
    /// [`INTERRUPTED_BY_USER_MARKER`], and the request gets `cancel_reason: user_cancelled`.
    /// The event is stored and passed to `on_event`. The task stays resumable.
    pub fn record_cancelled(
        &mut self,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<(), StoreError> {
        let text = std::mem::take(&mut self.streaming.text);
        // The turn may have been dropped before storing what it had appended.
        for i in self.persisted..self.conversation.api_conversation_history.len() {
            let message = &self.conversation.api_conversation_history[i];
            self.store.append_message(&self.task.id, i, message)?;
            self.persisted = i + 1;
        }
        if !text.is_empty() && self.last_role() == Some(Role::User) {
            self.append_message(Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text { text },
                    ContentBlock::Text {
                        text: INTERRUPTED_BY_USER_MARKER.to_owned(),
                    },
                ],
            })?;
        }
        let event = TaskEvent::ApiReqFinished {
            request_index: self.request_index,
            cancel_reason: Some(CancelReason::UserCancelled),
            streaming_failed_message: None,
        };
        self.record_event(&event)?;
        on_event(event);
        Ok(())
    }
}

/// The JSON of an event and its `type`.
fn event_json(event: &TaskEvent) -> (String, Value) {
    let value = serde_json::to_value(event).unwrap_or(Value::Null);
    let kind = value["type"].as_str().unwrap_or("unknown").to_owned();
    (kind, value)
}

fn store_event(
    store: &TaskStore,
    task_id: &str,
    streaming: &mut Streaming,
    event: &TaskEvent,
) -> Result<(), StoreError> {
    match event {
        TaskEvent::ApiReqStarted { .. } => *streaming = Streaming::default(),
        TaskEvent::Text { text } => {
            streaming.text.push_str(text);
            streaming.content_seen = true;
        }
        TaskEvent::Reasoning { .. } | TaskEvent::ToolCall { .. } => streaming.content_seen = true,
        _ => {}
    }
    let (kind, value) = event_json(event);
    // Streamed chunks survive a killed process at once and reach the disk with the next
    // full commit; everything else is fully synced before the call returns.
    let streamed = matches!(event, TaskEvent::Text { .. } | TaskEvent::Reasoning { .. });
    store.append_event(task_id, &kind, &value, !streamed)?;
    if let TaskEvent::Usage {
        input_tokens,
        output_tokens,
        cache_read_tokens,
        cache_write_tokens,
        cost_usd,
        ..
    } = event
    {
        store.add_usage(
            task_id,
            &TaskUsage {
                tokens_in: *input_tokens,
                tokens_out: *output_tokens,
                cache_writes: *cache_write_tokens,
                cache_reads: *cache_read_tokens,
                cost_usd: *cost_usd,
            },
        )?;
    }
    Ok(())
}

/// Stores the messages of `conversation` from index `persisted` on, then any new file-read
/// dedupe.
fn persist_history(
    store: &TaskStore,
    task_id: &str,
    conversation: &Conversation,
    persisted: &mut usize,
    recorded: &mut HashSet<(usize, usize, String)>,
) -> Result<(), StoreError> {
    let history = &conversation.api_conversation_history;
    for (i, message) in history.iter().enumerate().skip(*persisted) {
        store.append_message(task_id, i, message)?;
        *persisted = i + 1;
    }
    record_dedupe(store, task_id, conversation, recorded)
}

/// Records each file-read dedupe (R8.6) the next request will apply and that is not recorded
/// yet, as a `file_read_dedupe` context edit.
fn record_dedupe(
    store: &TaskStore,
    task_id: &str,
    conversation: &Conversation,
    recorded: &mut HashSet<(usize, usize, String)>,
) -> Result<(), StoreError> {
    for edit in find_duplicate_file_reads(
        &conversation.api_conversation_history,
        conversation.conversation_history_deleted_range,
    ) {
        let key = (edit.message_index, edit.block_index, edit.path.clone());
        if recorded.contains(&key) {
            continue;
        }
        let detail = serde_json::to_value(&edit).unwrap_or(Value::Null);
        store.add_context_edit(task_id, "file_read_dedupe", &detail)?;
        recorded.insert(key);
    }
    Ok(())
}
