//! [`Task`]: a conversation with one model, persisted as it runs, answered one user turn at a
//! time (SPEC R10.1, R10.2; its turns run the request and tool loops of R6, R9 and R11).

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::{
    ApiError, ApiHandler, CancellationToken, ContentBlock, ErrorKind, Message, Mode, ToolSpec,
};

use super::attempt::ApiRequestContext;
use super::conversation::Conversation;
use super::events::{TaskEvent, TaskStatus, user_cancelled};
use super::failover::LimitsContext;
use super::journal::{self, Journal, JournalState, store_event};
use super::recovery::FailureDecider;
use super::request::RequestStatus;
use super::settings::AttemptSettings;
use super::tools::{ToolApprover, ToolLoop, ToolLoopSettings, run_turn_with_tools};
use super::turn::{CONTINUE_AFTER_INTERRUPTION, INTERRUPTED_MARKER, TurnOutcome};
use crate::context::DeletedRange;
use crate::cost::UsageTotals;
use crate::limits::RequestLimits;
use crate::mcp::McpServerHub;
use crate::prompt::{SystemPromptContext, get_system_prompt};
use crate::store::{StoreError, TaskRecord, TaskStore};

/// Appended to the partial answer of a request the user cancelled (the reference's marker).
pub const INTERRUPTED_BY_USER_MARKER: &str = "[Response interrupted by user]";

/// What resuming a task found and did about an interrupted turn (SPEC R10.3, `resume.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumeReport {
    /// Bytes of partial assistant text recovered into the history.
    pub recovered_partial_bytes: usize,
    /// A trailing `api_req_started` with nothing after it was dropped (R10.3).
    pub dropped_request: bool,
    /// The request that was marked `streaming_failed` on resume.
    pub interrupted_request: Option<u32>,
}

/// Why a task could not be created, reopened or run. `Display` is one sentence saying what to
/// do.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The task store failed; the task is intact up to the last change that was saved.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A new task needs a first message.
    #[error("the message is empty; say what to ask")]
    EmptyMessage,
    /// [`Task::run_turn`] without a message on a task whose last message was answered.
    #[error("task {task_id} has been answered; pass the next message")]
    NothingToAnswer {
        /// The task's id.
        task_id: String,
    },
}

impl TaskError {
    /// The `kind` of the `error` event that reports it: `store` for a store failure, `config`
    /// for a problem with what was asked.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Store(_) => "store",
            Self::EmptyMessage | Self::NothingToAnswer { .. } => "config",
        }
    }
}

/// One task: a conversation with the model of one [`ApiHandler`], written to a [`TaskStore`]
/// as it runs (SPEC R10), answered one user turn at a time ([`Task::run_turn`]).
///
/// A turn is everything between a user message and the model's final answer: the MCP wait
/// and the system prompt (R6.1, R6.2), context truncation (R8), each request prepared, probed
/// and recovered (`attempt_api_request`, R6: truncate once on overflow, retry after 2 s, 4 s,
/// 8 s, ask the failure decider when that is not enough), its stream consumed (R9: a failure
/// part-way keeps the partial answer and asks the model to continue), and the rounds of MCP
/// tool calls until the model answers without one (R11). Every event goes to the store before
/// it reaches the caller's `on_event`, so what was shown is never lost.
///
/// Build one with [`Task::builder`] (from configuration) or [`Task::builder_with_handler`].
/// Events bracket a run of the task: [`Task::start`] records `task_started`, [`Task::finish`]
/// `task_finished`; a resumed task starts again.
pub struct Task {
    pub(super) handler: Arc<dyn ApiHandler>,
    /// Failover, spend caps and rate limits (SPEC R12); `None`: none.
    pub(super) limits: Option<RequestLimits>,
    pub(super) mode: Mode,
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) mcp_hub: Arc<McpServerHub>,
    pub(super) decider: Arc<dyn FailureDecider>,
    pub(super) approver: Arc<dyn ToolApprover>,
    pub(super) attempt: AttemptSettings,
    pub(super) tool_loop: ToolLoopSettings,
    /// Gathered once; the MCP servers connected at each request are added then.
    pub(super) prompt_context: SystemPromptContext,
    /// Replaces the built-in system prompt.
    pub(super) system_prompt: Option<String>,
    pub(super) record: TaskRecord,
    pub(super) conversation: Conversation,
    /// The last `request_index` used (requests are numbered across the task).
    pub(super) request_index: u32,
    pub(super) last_request_total_tokens: u64,
    pub(super) journal: JournalState,
    pub(super) resume_report: Option<ResumeReport>,
    /// Time to the first content of the first turn that had one (for `task_finished`).
    pub(super) first_token: Option<Duration>,
    /// `task_started` was recorded.
    pub(super) started: bool,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("task_id", &self.record.id)
            .field("provider", &self.record.provider)
            .field("model", &self.record.model)
            .field(
                "messages",
                &self.conversation.api_conversation_history.len(),
            )
            .finish_non_exhaustive()
    }
}

impl Task {
    /// The task's failover chain, spend caps and rate limits (SPEC R12), when it has them.
    pub fn limits(&self) -> Option<&RequestLimits> {
        self.limits.as_ref()
    }

    /// The task's id (what resuming takes).
    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// The task's row as it was opened (mode, provider and model as they are now).
    pub fn record(&self) -> &TaskRecord {
        &self.record
    }

    /// The API conversation history so far (the stored history: truncation never cuts it).
    pub fn messages(&self) -> &[Message] {
        &self.conversation.api_conversation_history
    }

    /// The range of [`Task::messages`] hidden from the model (SPEC R8.4), inclusive.
    pub fn deleted_range(&self) -> Option<DeletedRange> {
        self.conversation.conversation_history_deleted_range
    }

    /// What reopening the task repaired (`None` for a task created by this builder).
    pub fn resume_report(&self) -> Option<&ResumeReport> {
        self.resume_report.as_ref()
    }

    /// True when the last message is the user's, i.e. a turn is due.
    pub fn awaits_answer(&self) -> bool {
        self.last_role() == Some(switchyard_api::Role::User)
    }

    /// True when the last message is an answer that was cut off (it ends with
    /// [`INTERRUPTED_MARKER`] or [`INTERRUPTED_BY_USER_MARKER`]): a stream failure, a
    /// cancellation, or a crash repaired on resume.
    pub fn last_answer_was_cut_off(&self) -> bool {
        match self.conversation.api_conversation_history.last() {
            Some(m) if m.role == switchyard_api::Role::Assistant => matches!(
                m.content.last(),
                Some(ContentBlock::Text { text })
                    if text == INTERRUPTED_MARKER || text == INTERRUPTED_BY_USER_MARKER
            ),
            _ => false,
        }
    }

    /// True when [`Task::run_turn`] has something to do without a new message: an unanswered
    /// message, or an answer that was cut off (the model is asked to continue).
    pub fn has_pending_turn(&self) -> bool {
        self.awaits_answer() || self.last_answer_was_cut_off()
    }

    /// Records and emits `task_started` (the task's id, mode, provider and model) and starts
    /// the clock of `task_finished`. [`Task::run_turn`] and [`Task::finish`] call it when it
    /// was not called; calling it again does nothing.
    pub async fn start(
        &mut self,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<(), StoreError> {
        if self.started {
            return Ok(());
        }
        let event = TaskEvent::TaskStarted {
            task_id: self.record.id.clone(),
            mode: self.mode.as_str().to_owned(),
            provider: self.record.provider.clone(),
            model: self.record.model.clone(),
        };
        self.record_event(&event).await?;
        self.started = true;
        self.journal.started = tokio::time::Instant::now();
        self.journal.first_content = None;
        on_event(event);
        Ok(())
    }

    /// Runs one user turn (see [`Task`]) and returns how it ended: every request's tokens and
    /// cost summed, the status of the last request (`Failed` with the error the turn gave up
    /// on, an error of kind `cancelled` when `cancel` fired).
    ///
    /// `message` (when not blank) is added to the history first; without one, an unanswered
    /// message is answered, or an answer that was cut off is continued
    /// ([`CONTINUE_AFTER_INTERRUPTION`]). Events reach `on_event` after they are stored.
    ///
    /// Cancelling `cancel` stops the turn at once wherever it is (a request, a retry's wait, a
    /// question to the user): what streamed is kept as the answer, marked
    /// [`INTERRUPTED_BY_USER_MARKER`], and the request is recorded with `cancel_reason:
    /// user_cancelled` (SPEC R9.5); the task stays resumable.
    ///
    /// Errors: [`TaskError::NothingToAnswer`] without a message on an answered task; a
    /// [`TaskError::Store`] when a change could not be saved (the turn stops there, before
    /// another request is sent; the history is intact up to it).
    pub async fn run_turn(
        &mut self,
        message: Option<&str>,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<TurnOutcome, TaskError> {
        self.start(on_event).await?;
        match message.filter(|m| !m.trim().is_empty()) {
            Some(text) => self.add_user_message(text).await?,
            // Resumed after an answer was cut off (a failure, a cancellation, or a crash; R9.3):
            // the model goes on where it stopped.
            None if self.last_answer_was_cut_off() => {
                self.add_user_message(CONTINUE_AFTER_INTERRUPTION).await?;
            }
            None => {}
        }
        if !self.awaits_answer() {
            return Err(TaskError::NothingToAnswer {
                task_id: self.record.id.clone(),
            });
        }
        let index_before = self.request_index;
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            outcome = self.turn(on_event) => Some(outcome),
        };
        let outcome = match outcome {
            Some(outcome) => outcome?,
            None => {
                let request_started = self.request_index != index_before;
                self.record_cancelled(request_started, on_event).await?
            }
        };
        if self.first_token.is_none() {
            self.first_token = outcome.first_token;
        }
        Ok(outcome)
    }

    /// Records and emits `task_finished` with `status`, the time to the first content chunk
    /// and the time since [`Task::start`].
    pub async fn finish(
        &mut self,
        status: TaskStatus,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<(), StoreError> {
        self.start(on_event).await?;
        let first_token = self.first_token.or(self.journal.first_content);
        let event = TaskEvent::TaskFinished {
            status,
            first_token_ms: first_token.map(|d| d.as_millis() as u64),
            duration_ms: self.journal.started.elapsed().as_millis() as u64,
        };
        let stored = self.record_event(&event).await;
        on_event(event);
        stored
    }

    /// The turn itself, every change written by the journal. Cancelling drops this future
    /// wherever it waits (its stream too, which closes the request's connection, R1.4).
    async fn turn(
        &mut self,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<TurnOutcome, StoreError> {
        let build_prompt = || {
            let ctx = self
                .prompt_context
                .clone()
                .with_mcp_servers(self.mcp_hub.connected_servers());
            let (text, tools): (String, Vec<ToolSpec>) = get_system_prompt(&ctx);
            (self.system_prompt.clone().unwrap_or(text), tools)
        };
        let limits = self.limits.as_ref().map(|limits| LimitsContext {
            limits,
            store: self.store.as_ref(),
            task_id: &self.record.id,
        });
        let ctx = ApiRequestContext {
            limits,
            handler: self.handler.as_ref(),
            mcp_hub: self.mcp_hub.as_ref(),
            decider: self.decider.as_ref(),
            system_prompt: &build_prompt,
            previous_request_total_tokens: self.last_request_total_tokens,
            request_index: self.request_index + 1,
            settings: self.attempt,
            // Cancelling the turn drops it (`run_turn`); its requests are never cancelled on
            // their own, so a cancelled turn is always recorded the same way (R9.5).
            cancel: CancellationToken::new(),
        };
        let tools = ToolLoop {
            hub: self.mcp_hub.as_ref(),
            approver: self.approver.as_ref(),
            settings: self.tool_loop,
        };
        let mut journal = Journal {
            store: &self.store,
            task_id: &self.record.id,
            state: &mut self.journal,
            on_event,
            failure: None,
        };
        let outcome = run_turn_with_tools(
            &ctx,
            &tools,
            &mut self.conversation,
            &mut self.request_index,
            &mut journal,
        )
        .await;
        if let Some(e) = journal.failure {
            return Err(e);
        }
        self.last_request_total_tokens = outcome.last_request_total_tokens;
        Ok(outcome)
    }

    /// Records a turn that was dropped because the user cancelled (R9.5): the text that
    /// streamed is kept as the assistant's answer, marked [`INTERRUPTED_BY_USER_MARKER`], and
    /// the request under way (when `request_started`) gets `cancel_reason: user_cancelled`,
    /// stored and passed to `on_event`.
    async fn record_cancelled(
        &mut self,
        request_started: bool,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<TurnOutcome, StoreError> {
        // A write the turn had under way runs to its end first; then the store says what it
        // holds, and what the turn had not stored yet is stored now.
        self.journal
            .settle(self.store.as_ref(), &self.record.id)
            .await?;
        let text = std::mem::take(&mut self.journal.streaming.text);
        super::journal::persist_history(
            &self.store,
            &self.record.id,
            &mut self.journal,
            &self.conversation,
        )
        .await?;
        if !text.is_empty() && self.awaits_answer() {
            self.append_message(Message {
                role: switchyard_api::Role::Assistant,
                content: vec![
                    ContentBlock::Text { text },
                    ContentBlock::Text {
                        text: INTERRUPTED_BY_USER_MARKER.to_owned(),
                    },
                ],
            })
            .await?;
        }
        if request_started {
            let event = user_cancelled(self.request_index);
            self.record_event(&event).await?;
            on_event(event);
        }
        Ok(TurnOutcome {
            status: RequestStatus::Failed(ApiError::new(
                ErrorKind::Cancelled,
                "the task was cancelled",
            )),
            usage: UsageTotals::default(),
            cost_usd: Some(0.0),
            last_request_total_tokens: self.last_request_total_tokens,
            first_token: None,
            requests: 0,
            rejected_tool_calls: Vec::new(),
        })
    }

    pub(super) fn last_role(&self) -> Option<switchyard_api::Role> {
        self.conversation
            .api_conversation_history
            .last()
            .map(|m| m.role)
    }

    /// Appends `message` to the history, durably.
    pub(super) async fn append_message(&mut self, message: Message) -> Result<(), StoreError> {
        let index = self.conversation.api_conversation_history.len();
        self.store
            .append_message(&self.record.id, index, &journal::scrubbed_message(&message))
            .await?;
        self.conversation.api_conversation_history.push(message);
        self.journal.persisted = index + 1;
        Ok(())
    }

    /// Stores one event (and, for a usage report, adds it to the totals), following what
    /// streamed.
    pub(super) async fn record_event(&mut self, event: &TaskEvent) -> Result<(), StoreError> {
        self.journal.observe(event);
        store_event(self.store.as_ref(), &self.record.id, event).await
    }

    /// Adds the user's message `text` to the history, durably, without answering it
    /// ([`Task::run_turn`] with `None` answers it). When the last message is already the
    /// user's (a turn that never got an answer), the text joins it as another block so roles
    /// keep alternating. New file-read dedupes are recorded (R8.6) before this returns.
    ///
    /// Errors: [`TaskError::EmptyMessage`] for a blank text; a [`TaskError::Store`].
    pub async fn add_message(&mut self, text: &str) -> Result<(), TaskError> {
        if text.trim().is_empty() {
            return Err(TaskError::EmptyMessage);
        }
        Ok(self.add_user_message(text).await?)
    }

    /// [`Task::add_message`] for any text.
    pub(super) async fn add_user_message(&mut self, text: &str) -> Result<(), StoreError> {
        let block = ContentBlock::Text {
            text: text.to_owned(),
        };
        if self.awaits_answer() {
            let index = self.conversation.api_conversation_history.len() - 1;
            let mut merged = self.conversation.api_conversation_history[index].clone();
            merged.content.push(block);
            self.store
                .replace_message(&self.record.id, index, &journal::scrubbed_message(&merged))
                .await?;
            self.conversation.api_conversation_history[index] = merged;
        } else {
            self.append_message(Message {
                role: switchyard_api::Role::User,
                content: vec![block],
            })
            .await?;
        }
        self.persist_history().await
    }

    /// Stores what the history holds that the store does not, and the file-read dedupes
    /// (R8.6) not recorded yet.
    pub(super) async fn persist_history(&mut self) -> Result<(), StoreError> {
        super::journal::persist_history(
            &self.store,
            &self.record.id,
            &mut self.journal,
            &self.conversation,
        )
        .await
    }

    /// Records that the task now runs with this mode, provider and model (a resume with other
    /// choices); nothing is written when they are the task's already.
    pub(super) async fn set_model(
        &mut self,
        mode: &str,
        provider: &str,
        model: &str,
    ) -> Result<(), StoreError> {
        let record = &self.record;
        if (
            record.mode.as_str(),
            record.provider.as_str(),
            record.model.as_str(),
        ) == (mode, provider, model)
        {
            return Ok(());
        }
        self.store
            .set_task_model(&self.record.id, mode, provider, model)
            .await?;
        self.record.mode = mode.to_owned();
        self.record.provider = provider.to_owned();
        self.record.model = model.to_owned();
        Ok(())
    }
}

impl TurnOutcome {
    /// How a run of the task ends after this turn: `Completed`, `Cancelled` (the error's kind
    /// is `cancelled`) or `Failed`.
    pub fn task_status(&self) -> TaskStatus {
        match &self.status {
            RequestStatus::Completed => TaskStatus::Completed,
            RequestStatus::Failed(e) if e.kind == ErrorKind::Cancelled => TaskStatus::Cancelled,
            RequestStatus::Failed(_) => TaskStatus::Failed,
        }
    }
}
