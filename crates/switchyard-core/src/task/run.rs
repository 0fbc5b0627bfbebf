//! Running a task: `task_started`, one user turn, and `task_finished`.
//! Spec: R1.4, R6, R9, R9.3, R9.5, R10.2, R11.2.

use switchyard_api::{ApiError, CancellationToken, ContentBlock, ErrorKind, Message, ToolSpec};

use super::attempt::ApiRequestContext;
use super::events::{TaskEvent, TaskStatus, user_cancelled};
use super::failover::LimitsContext;
use super::journal::Journal;
use super::request::RequestStatus;
use super::state::{INTERRUPTED_BY_USER_MARKER, TaskError, TaskState};
use super::tools::{ToolLoop, run_turn_with_tools};
use super::turn::{CONTINUE_AFTER_INTERRUPTION, TurnOutcome};
use crate::cost::UsageTotals;
use crate::prompt::get_system_prompt;
use crate::store::StoreError;

pub(super) async fn start(
    t: &mut TaskState,
    on_event: &mut (dyn FnMut(TaskEvent) + Send),
) -> Result<(), StoreError> {
    if t.started {
        return Ok(());
    }
    let event = TaskEvent::TaskStarted {
        task_id: t.record.id.clone(),
        mode: t.mode.as_str().to_owned(),
        provider: t.record.provider.clone(),
        model: t.record.model.clone(),
    };
    t.record_event(&event).await?;
    t.started = true;
    t.journal.started = tokio::time::Instant::now();
    t.journal.first_content = None;
    on_event(event);
    Ok(())
}

pub(super) async fn run_turn(
    t: &mut TaskState,
    message: Option<&str>,
    cancel: &CancellationToken,
    on_event: &mut (dyn FnMut(TaskEvent) + Send),
) -> Result<TurnOutcome, TaskError> {
    start(t, on_event).await?;
    match message.filter(|m| !m.trim().is_empty()) {
        Some(text) => t.add_user_message(text).await?,
        // The answer was cut off by a failure, a cancellation or a crash: the model goes on.
        None if t.last_answer_was_cut_off() => {
            t.add_user_message(CONTINUE_AFTER_INTERRUPTION).await?;
        }
        None => {}
    }
    if !t.awaits_answer() {
        return Err(TaskError::NothingToAnswer {
            task_id: t.record.id.clone(),
        });
    }
    let index_before = t.request_index;
    let outcome = tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        outcome = turn(t, on_event) => Some(outcome),
    };
    let outcome = match outcome {
        Some(outcome) => outcome?,
        None => {
            let request_started = t.request_index != index_before;
            record_cancelled(t, request_started, on_event).await?
        }
    };
    if t.first_token.is_none() {
        t.first_token = outcome.first_token;
    }
    Ok(outcome)
}

pub(super) async fn finish(
    t: &mut TaskState,
    status: TaskStatus,
    on_event: &mut (dyn FnMut(TaskEvent) + Send),
) -> Result<(), StoreError> {
    start(t, on_event).await?;
    let first_token = t.first_token.or(t.journal.first_content);
    let event = TaskEvent::TaskFinished {
        status,
        first_token_ms: first_token.map(|d| d.as_millis() as u64),
        duration_ms: t.journal.started.elapsed().as_millis() as u64,
    };
    let stored = t.record_event(&event).await;
    on_event(event);
    stored
}

/// The turn itself; cancelling drops it wherever it waits, closing the request's connection.
async fn turn(
    t: &mut TaskState,
    on_event: &mut (dyn FnMut(TaskEvent) + Send),
) -> Result<TurnOutcome, StoreError> {
    let build_prompt = || {
        let ctx = t
            .prompt_context
            .clone()
            .with_mcp_servers(t.mcp_hub.connected_servers());
        let (text, tools): (String, Vec<ToolSpec>) = get_system_prompt(&ctx);
        (t.system_prompt.clone().unwrap_or(text), tools)
    };
    let limits = t.limits.as_ref().map(|limits| LimitsContext {
        limits,
        store: t.store.as_ref(),
        task_id: &t.record.id,
    });
    let ctx = ApiRequestContext {
        limits,
        handler: t.handler.as_ref(),
        mcp_hub: t.mcp_hub.as_ref(),
        decider: t.decider.as_ref(),
        system_prompt: &build_prompt,
        previous_request_total_tokens: t.last_request_total_tokens,
        request_index: t.request_index + 1,
        settings: t.attempt,
        // Only dropping the turn cancels, so a cancel is always recorded the same way.
        cancel: CancellationToken::new(),
    };
    let tools = ToolLoop {
        hub: t.mcp_hub.as_ref(),
        approver: t.approver.as_ref(),
        settings: t.tool_loop,
    };
    let mut journal = Journal {
        store: &t.store,
        task_id: &t.record.id,
        state: &mut t.journal,
        on_event,
        failure: None,
    };
    let outcome = run_turn_with_tools(
        &ctx,
        &tools,
        &mut t.conversation,
        &mut t.request_index,
        &mut journal,
    )
    .await;
    if let Some(e) = journal.failure {
        return Err(e);
    }
    t.last_request_total_tokens = outcome.last_request_total_tokens;
    Ok(outcome)
}

async fn record_cancelled(
    t: &mut TaskState,
    request_started: bool,
    on_event: &mut (dyn FnMut(TaskEvent) + Send),
) -> Result<TurnOutcome, StoreError> {
    t.journal.settle(t.store.as_ref(), &t.record.id).await?;
    let text = super::journal::streamed_text(t.store.as_ref(), &t.record.id).await?;
    super::journal::persist_history(&t.store, &t.record.id, &mut t.journal, &t.conversation)
        .await?;
    if !text.is_empty() && t.awaits_answer() {
        t.append_message(Message {
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
        let event = user_cancelled(t.request_index);
        t.record_event(&event).await?;
        on_event(event);
    }
    Ok(TurnOutcome {
        status: RequestStatus::Failed(ApiError::new(
            ErrorKind::Cancelled,
            "the task was cancelled",
        )),
        usage: UsageTotals::default(),
        cost_usd: Some(0.0),
        last_request_total_tokens: t.last_request_total_tokens,
        first_token: None,
        requests: 0,
        rejected_tool_calls: Vec::new(),
    })
}
