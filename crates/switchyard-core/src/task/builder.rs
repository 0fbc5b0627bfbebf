//! `TaskBuilder`: what a `Task` is made of, and creating or reopening one.
//! Spec: R3.2, R10.1, R10.3, R12.

use std::path::PathBuf;
use std::sync::Arc;

use switchyard_api::{ApiHandler, Message, Mode};

use super::conversation::Conversation;
use super::journal::{JournalState, scrubbed_message};
use super::persisted::{Task, TaskError};
use super::recovery::{FailureDecider, FailureDecision, FixedDecision};
use super::settings::AttemptSettings;
use super::tools::{DenyToolCalls, ToolApprover, ToolLoopSettings};
use crate::limits::RequestLimits;
use crate::mcp::McpServerHub;
use crate::prompt::{SystemPromptContext, default_global_rules_dir};
use crate::store::{NewTask, TaskRecord, TaskStore};

/// Builds a `Task` from the handler it sends through and the store it writes itself to.
pub struct TaskBuilder {
    handler: Arc<dyn ApiHandler>,
    limits: Option<RequestLimits>,
    mode: Mode,
    store: Arc<dyn TaskStore>,
    mcp_hub: Option<Arc<McpServerHub>>,
    decider: Arc<dyn FailureDecider>,
    approver: Arc<dyn ToolApprover>,
    attempt: AttemptSettings,
    tool_loop: ToolLoopSettings,
    cwd: Option<PathBuf>,
    global_rules_dir: Option<Option<PathBuf>>,
    system_prompt: Option<String>,
    title: Option<String>,
}

impl Task {
    /// A task for `mode` of `config` with its failover entries, caps and limits; sends nothing.
    pub fn builder(
        config: &switchyard_api::ApiConfiguration,
        mode: Mode,
        store: Arc<dyn TaskStore>,
    ) -> Result<TaskBuilder, switchyard_api::ConfigError> {
        let limits = RequestLimits::from_config(config, mode)?;
        let handler = Arc::clone(&limits.entries()[0].handler);
        let mut builder = TaskBuilder::new(handler, mode, store).limits(limits);
        builder.attempt.bounds = config.limits.stream_bounds();
        Ok(builder)
    }

    /// A task sending its requests through `handler`; `mode` picks the system prompt's mode.
    pub fn builder_with_handler(
        handler: Arc<dyn ApiHandler>,
        mode: Mode,
        store: Arc<dyn TaskStore>,
    ) -> TaskBuilder {
        TaskBuilder::new(handler, mode, store)
    }
}

impl std::fmt::Debug for TaskBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskBuilder")
            .field("provider", &self.handler.provider_id())
            .field("model", &self.handler.get_model().id)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl TaskBuilder {
    pub(super) fn new(handler: Arc<dyn ApiHandler>, mode: Mode, store: Arc<dyn TaskStore>) -> Self {
        Self {
            handler,
            limits: None,
            mode,
            store,
            mcp_hub: None,
            decider: Arc::new(FixedDecision(FailureDecision::Cancel)),
            approver: Arc::new(DenyToolCalls),
            attempt: AttemptSettings::default(),
            tool_loop: ToolLoopSettings::default(),
            cwd: None,
            global_rules_dir: None,
            system_prompt: None,
            title: None,
        }
    }

    /// Failover chain, spend caps and rate limits; the first entry's handler becomes the task's.
    pub fn limits(mut self, limits: RequestLimits) -> Self {
        if let Some(first) = limits.entries().first() {
            self.handler = Arc::clone(&first.handler);
        }
        self.limits = Some(limits);
        self
    }

    /// The per-task spend cap in USD, the CLI's `--max-cost`, over the configuration's.
    pub fn max_cost_usd(mut self, usd: f64) -> Self {
        let limits = self
            .limits
            .take()
            .unwrap_or_else(|| RequestLimits::single(Arc::clone(&self.handler)));
        self.limits = Some(limits.with_task_cap(Some(usd)));
        self
    }

    /// The MCP servers whose tools the model may call; the caller shuts the hub down after.
    pub fn mcp_hub(mut self, hub: Arc<McpServerHub>) -> Self {
        self.mcp_hub = Some(hub);
        self
    }

    /// Decides what happens when automatic recovery gives up; the default cancels.
    pub fn failure_decider(mut self, decider: Arc<dyn FailureDecider>) -> Self {
        self.decider = decider;
        self
    }

    /// Approves calls of tools outside their server's `autoApprove` list; the default denies.
    pub fn tool_approver(mut self, approver: Arc<dyn ToolApprover>) -> Self {
        self.approver = approver;
        self
    }

    /// Retries, deadlines and the MCP wait of each request.
    pub fn attempt_settings(mut self, settings: AttemptSettings) -> Self {
        self.attempt = settings;
        self
    }

    /// Automatic retries of a request that failed before content or part-way; default 3.
    pub fn max_auto_retries(mut self, retries: u32) -> Self {
        self.attempt.max_auto_retries = retries;
        self
    }

    /// The limit of tool-call rounds in one turn, 25 by default.
    pub fn tool_loop(mut self, settings: ToolLoopSettings) -> Self {
        self.tool_loop = settings;
        self
    }

    /// The workspace where rules are read, named in the system prompt; default the process's.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The directory of global rules files, `~/Documents/Cline/Rules` by default; `None` for none.
    pub fn global_rules_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.global_rules_dir = Some(dir);
        self
    }

    /// Replaces the built-in system prompt with `text`; the tools are still offered.
    pub fn system_prompt(mut self, text: impl Into<String>) -> Self {
        self.system_prompt = Some(text.into());
        self
    }

    /// What `switchyard tasks` lists as the first prompt when piped text precedes it.
    pub fn title(mut self, text: impl Into<String>) -> Self {
        self.title = Some(text.into());
        self
    }

    /// Creates a task whose first message is stored before this returns; `run_turn` answers it.
    pub async fn create(self, first_message: &str) -> Result<Task, TaskError> {
        if first_message.trim().is_empty() {
            return Err(TaskError::EmptyMessage);
        }
        let cwd = self.workspace();
        let model = self.handler.get_model();
        let first = Message::user_text(first_message);
        // The task row and its first message in one commit: one fsync before the first request.
        let record = self
            .store
            .create_task_with_message(
                &NewTask {
                    cwd: cwd.display().to_string(),
                    mode: self.mode.as_str().to_owned(),
                    provider: self.handler.provider_id().to_owned(),
                    model: model.id,
                    first_prompt: switchyard_api::secrets::scrub(
                        self.title.as_deref().unwrap_or(first_message),
                    )
                    .into_owned(),
                },
                // Stored without secrets; the model gets the message as typed.
                &scrubbed_message(&first),
            )
            .await?;
        let journal = JournalState::new(record.message_count);
        let mut task = self.into_task(record, vec![first], 0, journal);
        task.persist_history().await?;
        Ok(task)
    }

    /// Reopens task `task_id`, repairing a turn a crash cut short.
    pub async fn resume(self, task_id: &str) -> Result<Task, TaskError> {
        let record = self.store.task(task_id).await?;
        let history = self.store.messages(task_id).await?;
        let request_index = self.store.max_request_index(task_id).await?;
        let journal = JournalState::reload(self.store.as_ref(), task_id).await?;
        let mut task = self.into_task(record, history, request_index, journal);
        let report = task.repair_interrupted_turn().await?;
        task.resume_report = Some(report);
        let (mode, provider, model) = (
            task.mode.as_str(),
            task.handler.provider_id().to_owned(),
            task.handler.get_model().id,
        );
        task.set_model(mode, &provider, &model).await?;
        Ok(task)
    }

    fn workspace(&self) -> PathBuf {
        self.cwd
            .clone()
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")))
    }

    fn into_task(
        self,
        record: TaskRecord,
        history: Vec<Message>,
        request_index: u32,
        journal: JournalState,
    ) -> Task {
        let rules_dir = self
            .global_rules_dir
            .clone()
            .unwrap_or_else(default_global_rules_dir);
        let prompt_context = SystemPromptContext::gather(
            &self.workspace(),
            rules_dir.as_deref(),
            self.handler.provider_id(),
            &self.handler.get_model().id,
            self.mode,
        )
        .with_native_tool_calling(true);
        Task {
            conversation: Conversation {
                api_conversation_history: history,
                conversation_history_deleted_range: record.conversation_history_deleted_range,
            },
            last_request_total_tokens: record.last_request_tokens,
            request_index,
            record,
            journal,
            handler: self.handler,
            limits: self.limits,
            mode: self.mode,
            store: self.store,
            mcp_hub: self.mcp_hub.unwrap_or_else(McpServerHub::empty),
            decider: self.decider,
            approver: self.approver,
            attempt: self.attempt,
            tool_loop: self.tool_loop,
            prompt_context,
            system_prompt: self.system_prompt,
            resume_report: None,
            first_token: None,
            started: false,
        }
    }
}
