//! What stops a task outside a turn: a problem found before it runs ([`Refused`], exit code 2)
//! and a task-database failure (exit code 1), each reported as an `error` event (README "Exit
//! codes"; a store that fails, SPEC R13.1).

use std::process::ExitCode;

use switchyard_core::store::StoreError;
use switchyard_core::task::{TaskError, TaskEvent, TaskStatus};

use crate::render::Renderer;

/// A problem found before the task runs: the `kind` of its `error` event and its sentence.
pub(super) struct Refused {
    pub(super) kind: &'static str,
    pub(super) message: String,
}

impl Refused {
    pub(super) fn config(message: impl ToString) -> Self {
        Self {
            kind: "config",
            message: message.to_string(),
        }
    }

    pub(super) fn store(message: impl ToString) -> Self {
        Self {
            kind: "store",
            message: message.to_string(),
        }
    }
}

impl From<TaskError> for Refused {
    fn from(e: TaskError) -> Self {
        Self {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

/// Reports a problem found before the task ran; exit code 2.
pub(super) fn fail(renderer: &mut Renderer, refused: Refused, json: bool) -> ExitCode {
    renderer.event(&TaskEvent::Error {
        kind: refused.kind.to_owned(),
        message: refused.message,
        status: None,
    });
    if json {
        renderer.event(&TaskEvent::TaskFinished {
            status: TaskStatus::Failed,
            first_token_ms: None,
            duration_ms: 0,
        });
    }
    ExitCode::from(2)
}

/// Reports a task-database failure; the task fails with exit code 1.
pub(super) fn store_failed(renderer: &mut Renderer, e: &StoreError) -> (TaskStatus, ExitCode) {
    renderer.event(&TaskEvent::Error {
        kind: "store".to_owned(),
        message: e.to_string(),
        status: None,
    });
    (TaskStatus::Failed, ExitCode::from(1))
}
