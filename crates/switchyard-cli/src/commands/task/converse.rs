//! The turns of a session: the first message, then each follow-up typed in a terminal.
//! Spec: R9.5, R12.2.

use std::convert::Infallible;
use std::process::ExitCode;
use std::sync::Arc;

use switchyard_api::{CancellationToken, ErrorKind};
use switchyard_core::Task;
use switchyard_core::task::{RequestStatus, TaskError, TaskEvent, TaskStatus, TurnOutcome};

use super::refused::store_failed;
use crate::render::Renderer;
use crate::signals::{Signal, next_signal};

type Ended = (TaskStatus, ExitCode);

/// Runs turns until an empty line, Ctrl-D or Ctrl-C, and returns how the task ended.
pub(super) async fn converse(
    task: &mut Task,
    first: Option<String>,
    interactive: bool,
    renderer: &mut Renderer,
    follow_up: &mut crate::follow_up::FollowUp,
) -> Ended {
    let mut next = first;
    loop {
        if next.is_none() && !task.has_pending_turn() {
            // Resumed in a terminal with nothing to answer: ask first.
            match ask_next(follow_up, renderer).await {
                Ok(line) => next = Some(line),
                Err(ended) => return ended,
            }
        }
        let (outcome, signal) = turn(task, next.take(), renderer).await;
        if let Some(ended) = turn_ended(outcome, signal, interactive, renderer) {
            return ended;
        }
        match ask_next(follow_up, renderer).await {
            Ok(line) => next = Some(line),
            Err(ended) => return ended,
        }
    }
}

/// The next message typed, or how the task ends: completed on an empty line or Ctrl-D.
async fn ask_next(
    follow_up: &mut crate::follow_up::FollowUp,
    renderer: &Renderer,
) -> Result<String, Ended> {
    match follow_up.ask(&renderer.closed_signal()).await {
        Ok(Some(line)) => Ok(line),
        Ok(None) => Err((TaskStatus::Completed, ExitCode::SUCCESS)),
        Err(signal) => Err((TaskStatus::Completed, ExitCode::from(signal.exit_code()))),
    }
}

async fn turn(
    task: &mut Task,
    message: Option<String>,
    renderer: &mut Renderer,
) -> (Result<TurnOutcome, TaskError>, Option<Signal>) {
    let cancel = CancellationToken::new();
    let closed = renderer.closed_signal();
    let mut on_event = |e: TaskEvent| renderer.event(&e);
    let mut signal = None;
    let outcome = tokio::select! {
        outcome = task.run_turn(message.as_deref(), &cancel, &mut on_event) => outcome,
        never = cancel_on_signal(&cancel, &mut signal, closed) => match never {},
    };
    (outcome, signal)
}

/// How the task ends after a turn; `None` when it completed in a terminal and goes on.
fn turn_ended(
    outcome: Result<TurnOutcome, TaskError>,
    signal: Option<Signal>,
    interactive: bool,
    renderer: &mut Renderer,
) -> Option<Ended> {
    if let Ok(TurnOutcome {
        status: RequestStatus::Failed(e),
        ..
    }) = &outcome
        && e.kind == ErrorKind::SpendCap
    {
        // Its own exit code, so a script can tell a cap from a failure.
        return Some((TaskStatus::Failed, ExitCode::from(SPEND_CAP_EXIT)));
    }
    Some(match outcome.map(|o| o.task_status()) {
        Err(TaskError::Store(e)) => store_failed(renderer, &e),
        Err(e) => {
            renderer.event(&TaskEvent::Error {
                kind: e.kind().to_owned(),
                message: e.to_string(),
                status: None,
            });
            (TaskStatus::Failed, ExitCode::from(1))
        }
        Ok(TaskStatus::Cancelled) => {
            if signal == Some(Signal::StdoutClosed) {
                renderer.mark_stdout_closed();
            }
            let code = signal.map_or(130, Signal::exit_code);
            (TaskStatus::Cancelled, ExitCode::from(code))
        }
        Ok(TaskStatus::Failed) => (TaskStatus::Failed, ExitCode::from(1)),
        Ok(TaskStatus::Completed) if !interactive => (TaskStatus::Completed, ExitCode::SUCCESS),
        Ok(TaskStatus::Completed) => return None,
    })
}

pub const SPEND_CAP_EXIT: u8 = 3;

/// Cancels `cancel` on a signal or a closed stdout and says which in `which`; never returns.
async fn cancel_on_signal(
    cancel: &CancellationToken,
    which: &mut Option<Signal>,
    stdout_closed: Arc<tokio::sync::Notify>,
) -> Infallible {
    *which = Some(next_signal(&stdout_closed).await);
    cancel.cancel();
    std::future::pending().await
}
