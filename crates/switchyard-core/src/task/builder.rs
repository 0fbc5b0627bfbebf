//! `TaskParts`: what a task is made of, and creating or reopening one from them.
//! Spec: R3.2, R10.1, R10.3, R12.

use std::path::PathBuf;
use std::sync::Arc;

use switchyard_api::{ApiHandler, Message, Mode};

use super::conversation::Conversation;
use super::journal::{JournalState, scrubbed_message};
use super::recovery::{FailureDecider, FailureDecision, FixedDecision};
use super::resume::repair_interrupted_turn;
use super::settings::AttemptSettings;
use super::state::{TaskError, TaskState};
use super::tools::{DenyToolCalls, ToolApprover, ToolLoopSettings};
use crate::limits::RequestLimits;
use crate::mcp::McpServerHub;
use crate::prompt::{SystemPromptContext, default_global_rules_dir};
use crate::store::{NewTask, TaskRecord, TaskStore};

/// The settings a `TaskBuilder` collects, each with its default.
pub(super) struct TaskParts {
    pub(super) handler: Arc<dyn ApiHandler>,
    pub(super) limits: Option<RequestLimits>,
    pub(super) mode: Mode,
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) mcp_hub: Option<Arc<McpServerHub>>,
    pub(super) decider: Arc<dyn FailureDecider>,
    pub(super) approver: Arc<dyn ToolApprover>,
    pub(super) attempt: AttemptSettings,
    pub(super) tool_loop: ToolLoopSettings,
    pub(super) cwd: Option<PathBuf>,
    pub(super) global_rules_dir: Option<Option<PathBuf>>,
    pub(super) system_prompt: Option<String>,
    pub(super) title: Option<String>,
}

impl TaskParts {
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

    pub(super) fn from_config(
        config: &switchyard_api::ApiConfiguration,
        mode: Mode,
        store: Arc<dyn TaskStore>,
    ) -> Result<Self, switchyard_api::ConfigError> {
        let limits = RequestLimits::from_config(config, mode)?;
        let handler = Arc::clone(&limits.entries()[0].handler);
        let mut parts = Self::new(handler, mode, store);
        parts.set_limits(limits);
        parts.attempt.bounds = config.limits.stream_bounds();
        Ok(parts)
    }

    pub(super) fn set_limits(&mut self, limits: RequestLimits) {
        if let Some(first) = limits.entries().first() {
            self.handler = Arc::clone(&first.handler);
        }
        self.limits = Some(limits);
    }

    /// Without limits set, the task's handler gets limits of its own.
    pub(super) fn set_max_cost_usd(&mut self, usd: f64) {
        let limits = self
            .limits
            .take()
            .unwrap_or_else(|| RequestLimits::single(Arc::clone(&self.handler)));
        self.limits = Some(limits.with_task_cap(Some(usd)));
    }

    pub(super) async fn create(self, first_message: &str) -> Result<TaskState, TaskError> {
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
        let mut task = self.into_state(record, vec![first], 0, journal);
        task.persist_history().await?;
        Ok(task)
    }

    pub(super) async fn resume(self, task_id: &str) -> Result<TaskState, TaskError> {
        let record = self.store.task(task_id).await?;
        let history = self.store.messages(task_id).await?;
        let request_index = self.store.max_request_index(task_id).await?;
        let journal = JournalState::reload(self.store.as_ref(), task_id).await?;
        let mut task = self.into_state(record, history, request_index, journal);
        let report = repair_interrupted_turn(&mut task).await?;
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

    fn into_state(
        self,
        record: TaskRecord,
        history: Vec<Message>,
        request_index: u32,
        journal: JournalState,
    ) -> TaskState {
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
        TaskState {
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
