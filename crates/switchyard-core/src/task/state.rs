//! `TaskState`: what a task holds, and how each change of it is written down.
//! Spec: R8.4, R8.6, R10.1, R10.2, R10.3, R12.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::{ApiHandler, ContentBlock, Message, Mode};

use super::conversation::Conversation;
use super::events::TaskEvent;
use super::journal::{self, JournalState, store_event};
use super::recovery::FailureDecider;
use super::settings::AttemptSettings;
use super::tools::{ToolApprover, ToolLoopSettings};
use super::turn::INTERRUPTED_MARKER;
use crate::limits::RequestLimits;
use crate::mcp::McpServerHub;
use crate::prompt::SystemPromptContext;
use crate::store::{StoreError, TaskRecord, TaskStore};

/// Appended to the partial answer of a request the user cancelled, as the reference does.
pub const INTERRUPTED_BY_USER_MARKER: &str = "[Response interrupted by user]";

/// What resuming a task found and did about an interrupted turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumeReport {
    /// Bytes of partial assistant text recovered into the history.
    pub recovered_partial_bytes: usize,
    /// A trailing `api_req_started` with nothing after it was dropped.
    pub dropped_request: bool,
    /// The request that was marked `streaming_failed` on resume.
    pub interrupted_request: Option<u32>,
}

/// Why a task could not be created, reopened or run; `Display` says what to do.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The task store failed; the task is intact up to the last change that was saved.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A new task needs a first message.
    #[error("the message is empty; say what to ask")]
    EmptyMessage,
    /// `Task::run_turn` without a message on a task whose last message was answered.
    #[error("task {task_id} has been answered; pass the next message")]
    NothingToAnswer {
        /// The task's id.
        task_id: String,
    },
}

impl TaskError {
    /// The `kind` of the `error` event that reports it: `store`, or `config` for what was asked.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Store(_) => "store",
            Self::EmptyMessage | Self::NothingToAnswer { .. } => "config",
        }
    }
}

/// Everything a `Task` holds; the files of its steps work on this.
pub(super) struct TaskState {
    pub(super) handler: Arc<dyn ApiHandler>,
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
    pub(super) system_prompt: Option<String>,
    pub(super) record: TaskRecord,
    pub(super) conversation: Conversation,
    pub(super) request_index: u32,
    pub(super) last_request_total_tokens: u64,
    pub(super) journal: JournalState,
    pub(super) resume_report: Option<ResumeReport>,
    pub(super) first_token: Option<Duration>,
    pub(super) started: bool,
}

impl TaskState {
    pub(super) fn awaits_answer(&self) -> bool {
        self.last_role() == Some(switchyard_api::Role::User)
    }

    pub(super) fn last_answer_was_cut_off(&self) -> bool {
        match self.conversation.api_conversation_history.last() {
            Some(m) if m.role == switchyard_api::Role::Assistant => matches!(
                m.content.last(),
                Some(ContentBlock::Text { text })
                    if text == INTERRUPTED_MARKER || text == INTERRUPTED_BY_USER_MARKER
            ),
            _ => false,
        }
    }

    pub(super) fn last_role(&self) -> Option<switchyard_api::Role> {
        self.conversation
            .api_conversation_history
            .last()
            .map(|m| m.role)
    }

    pub(super) async fn append_message(&mut self, message: Message) -> Result<(), StoreError> {
        let index = self.conversation.api_conversation_history.len();
        self.store
            .append_message(&self.record.id, index, &journal::scrubbed_message(&message))
            .await?;
        self.conversation.api_conversation_history.push(message);
        self.journal.persisted = index + 1;
        Ok(())
    }

    pub(super) async fn record_event(&mut self, event: &TaskEvent) -> Result<(), StoreError> {
        self.journal.observe(event);
        store_event(self.store.as_ref(), &self.record.id, event).await
    }

    pub(super) async fn add_message(&mut self, text: &str) -> Result<(), TaskError> {
        if text.trim().is_empty() {
            return Err(TaskError::EmptyMessage);
        }
        Ok(self.add_user_message(text).await?)
    }

    /// Joins a last message that is already the user's, so roles keep alternating.
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

    pub(super) async fn persist_history(&mut self) -> Result<(), StoreError> {
        super::journal::persist_history(
            &self.store,
            &self.record.id,
            &mut self.journal,
            &self.conversation,
        )
        .await
    }

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
