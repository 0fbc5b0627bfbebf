//! `Task` and `TaskBuilder`: the task layer's front door. Each method hands its work to the
//! file of its step: `state`, `run`, `builder`.
//! Spec: R10.1, R10.2, R12.

use std::path::PathBuf;
use std::sync::Arc;

use switchyard_api::{ApiHandler, CancellationToken, Message, Mode};

use super::builder::TaskParts;
use super::events::{TaskEvent, TaskStatus};
use super::recovery::FailureDecider;
use super::run;
use super::settings::AttemptSettings;
use super::state::{ResumeReport, TaskError, TaskState};
use super::tools::{ToolApprover, ToolLoopSettings};
use super::turn::TurnOutcome;
use crate::context::DeletedRange;
use crate::limits::RequestLimits;
use crate::mcp::McpServerHub;
use crate::store::{StoreError, TaskRecord, TaskStore};

/// One task: a conversation with one model, written to a store as it runs and answered one turn
/// at a time; every event is stored before `on_event` sees it.
pub struct Task {
    state: TaskState,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = &self.state;
        f.debug_struct("Task")
            .field("task_id", &state.record.id)
            .field("provider", &state.record.provider)
            .field("model", &state.record.model)
            .field(
                "messages",
                &state.conversation.api_conversation_history.len(),
            )
            .finish_non_exhaustive()
    }
}

impl Task {
    /// A task for `mode` of `config` with its failover entries, caps and limits; sends nothing.
    pub fn builder(
        config: &switchyard_api::ApiConfiguration,
        mode: Mode,
        store: Arc<dyn TaskStore>,
    ) -> Result<TaskBuilder, switchyard_api::ConfigError> {
        let parts = TaskParts::from_config(config, mode, store)?;
        Ok(TaskBuilder { parts })
    }

    /// A task sending its requests through `handler`; `mode` picks the system prompt's mode.
    pub fn builder_with_handler(
        handler: Arc<dyn ApiHandler>,
        mode: Mode,
        store: Arc<dyn TaskStore>,
    ) -> TaskBuilder {
        TaskBuilder {
            parts: TaskParts::new(handler, mode, store),
        }
    }

    /// The task's failover chain, spend caps and rate limits, if any.
    pub fn limits(&self) -> Option<&RequestLimits> {
        self.state.limits.as_ref()
    }

    /// The task's id, what resuming takes.
    pub fn id(&self) -> &str {
        &self.state.record.id
    }

    /// The task's row as it was opened, with the mode, provider and model it now runs with.
    pub fn record(&self) -> &TaskRecord {
        &self.state.record
    }

    /// The stored history; truncation never cuts it.
    pub fn messages(&self) -> &[Message] {
        &self.state.conversation.api_conversation_history
    }

    /// The inclusive range of `messages` hidden from the model.
    pub fn deleted_range(&self) -> Option<DeletedRange> {
        self.state.conversation.conversation_history_deleted_range
    }

    /// What reopening the task repaired; `None` for a new task.
    pub fn resume_report(&self) -> Option<&ResumeReport> {
        self.state.resume_report.as_ref()
    }

    /// True when the last message is the user's, so a turn is due.
    pub fn awaits_answer(&self) -> bool {
        self.state.awaits_answer()
    }

    /// True when the last answer ends with an interruption marker.
    pub fn last_answer_was_cut_off(&self) -> bool {
        self.state.last_answer_was_cut_off()
    }

    /// True when `run_turn` has work without a new message, such as a cut-off answer.
    pub fn has_pending_turn(&self) -> bool {
        self.awaits_answer() || self.last_answer_was_cut_off()
    }

    /// Adds the user's message `text` to the history, durably, without answering it.
    pub async fn add_message(&mut self, text: &str) -> Result<(), TaskError> {
        self.state.add_message(text).await
    }

    /// Records and emits `task_started` once; `run_turn` and `finish` call it when needed.
    pub async fn start(
        &mut self,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<(), StoreError> {
        run::start(&mut self.state, on_event).await
    }

    /// Runs one user turn and returns how it ended, every request's tokens and cost summed.
    ///
    /// Without a `message`, an unanswered message is answered or a cut-off answer continued.
    /// Cancelling `cancel` stops the turn at once; what streamed is kept and the task can resume.
    pub async fn run_turn(
        &mut self,
        message: Option<&str>,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<TurnOutcome, TaskError> {
        run::run_turn(&mut self.state, message, cancel, on_event).await
    }

    /// Records and emits `task_finished` with `status`.
    pub async fn finish(
        &mut self,
        status: TaskStatus,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<(), StoreError> {
        run::finish(&mut self.state, status, on_event).await
    }
}

/// Builds a `Task` from the handler it sends through and the store it writes itself to.
pub struct TaskBuilder {
    parts: TaskParts,
}

impl std::fmt::Debug for TaskBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskBuilder")
            .field("provider", &self.parts.handler.provider_id())
            .field("model", &self.parts.handler.get_model().id)
            .field("mode", &self.parts.mode)
            .finish_non_exhaustive()
    }
}

impl TaskBuilder {
    /// Failover chain, spend caps and rate limits; the first entry's handler becomes the task's.
    pub fn limits(mut self, limits: RequestLimits) -> Self {
        self.parts.set_limits(limits);
        self
    }

    /// The per-task spend cap in USD, the CLI's `--max-cost`, over the configuration's.
    pub fn max_cost_usd(mut self, usd: f64) -> Self {
        self.parts.set_max_cost_usd(usd);
        self
    }

    /// The MCP servers whose tools the model may call; the caller shuts the hub down after.
    pub fn mcp_hub(mut self, hub: Arc<McpServerHub>) -> Self {
        self.parts.mcp_hub = Some(hub);
        self
    }

    /// Decides what happens when automatic recovery gives up; the default cancels.
    pub fn failure_decider(mut self, decider: Arc<dyn FailureDecider>) -> Self {
        self.parts.decider = decider;
        self
    }

    /// Approves calls of tools outside their server's `autoApprove` list; the default denies.
    pub fn tool_approver(mut self, approver: Arc<dyn ToolApprover>) -> Self {
        self.parts.approver = approver;
        self
    }

    /// Retries, deadlines and the MCP wait of each request.
    pub fn attempt_settings(mut self, settings: AttemptSettings) -> Self {
        self.parts.attempt = settings;
        self
    }

    /// Automatic retries of a request that failed before content or part-way; default 3.
    pub fn max_auto_retries(mut self, retries: u32) -> Self {
        self.parts.attempt.max_auto_retries = retries;
        self
    }

    /// The limit of tool-call rounds in one turn, 25 by default.
    pub fn tool_loop(mut self, settings: ToolLoopSettings) -> Self {
        self.parts.tool_loop = settings;
        self
    }

    /// The workspace where rules are read, named in the system prompt; default the process's.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.parts.cwd = Some(dir.into());
        self
    }

    /// The directory of global rules files, `~/Documents/Cline/Rules` by default; `None` for none.
    pub fn global_rules_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.parts.global_rules_dir = Some(dir);
        self
    }

    /// Replaces the built-in system prompt with `text`; the tools are still offered.
    pub fn system_prompt(mut self, text: impl Into<String>) -> Self {
        self.parts.system_prompt = Some(text.into());
        self
    }

    /// What `switchyard tasks` lists as the first prompt when piped text precedes it.
    pub fn title(mut self, text: impl Into<String>) -> Self {
        self.parts.title = Some(text.into());
        self
    }

    /// Creates a task whose first message is stored before this returns; `run_turn` answers it.
    pub async fn create(self, first_message: &str) -> Result<Task, TaskError> {
        let state = self.parts.create(first_message).await?;
        Ok(Task { state })
    }

    /// Reopens task `task_id`, repairing a turn a crash cut short.
    pub async fn resume(self, task_id: &str) -> Result<Task, TaskError> {
        let state = self.parts.resume(task_id).await?;
        Ok(Task { state })
    }
}
