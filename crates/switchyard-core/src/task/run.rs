//! Running a `Task`: `task_started`, one user turn, and `task_finished`.
//! Spec: R1.4, R6, R9, R9.3, R9.5, R10.2, R11.2.

use switchyard_api::{ApiError, CancellationToken, ContentBlock, ErrorKind, Message, ToolSpec};

use super::attempt::ApiRequestContext;
use super::events::{TaskEvent, TaskStatus, user_cancelled};
use super::failover::LimitsContext;
use super::journal::Journal;
use super::persisted::{INTERRUPTED_BY_USER_MARKER, Task, TaskError};
use super::request::RequestStatus;
use super::tools::{ToolLoop, run_turn_with_tools};
use super::turn::{CONTINUE_AFTER_INTERRUPTION, TurnOutcome};
use crate::cost::UsageTotals;
use crate::prompt::get_system_prompt;
use crate::store::StoreError;

impl Task {
    /// Records and emits `task_started` once; `run_turn` and `finish` call it when needed.
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
        self.start(on_event).await?;
        match message.filter(|m| !m.trim().is_empty()) {
            Some(text) => self.add_user_message(text).await?,
            // The answer was cut off by a failure, a cancellation or a crash: the model goes on.
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

    /// Records and emits `task_finished` with `status`.
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

    /// The turn itself; cancelling drops it wherever it waits, closing the request's connection.
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
            // Only dropping the turn cancels, so a cancel is always recorded the same way.
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

    async fn record_cancelled(
        &mut self,
        request_started: bool,
        on_event: &mut (dyn FnMut(TaskEvent) + Send),
    ) -> Result<TurnOutcome, StoreError> {
        self.journal
            .settle(self.store.as_ref(), &self.record.id)
            .await?;
        let text = super::journal::streamed_text(self.store.as_ref(), &self.record.id).await?;
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
}

impl TurnOutcome {
    /// How a run of the task ends after this turn.
    pub fn task_status(&self) -> TaskStatus {
        match &self.status {
            RequestStatus::Completed => TaskStatus::Completed,
            RequestStatus::Failed(e) if e.kind == ErrorKind::Cancelled => TaskStatus::Cancelled,
            RequestStatus::Failed(_) => TaskStatus::Failed,
        }
    }
}
