//! What stops a task outside a turn: a problem before it runs, exit 2, and a task-database
//! failure, exit 1, each reported as an `error` event.
//! Spec: R13.1.

use std::process::ExitCode;

use switchyard_core::store::StoreError;
use switchyard_core::task::{TaskError, TaskEvent, TaskStatus};

use crate::render::Renderer;

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

pub(super) fn store_failed(renderer: &mut Renderer, e: &StoreError) -> (TaskStatus, ExitCode) {
    renderer.event(&TaskEvent::Error {
        kind: "store".to_owned(),
        message: e.to_string(),
        status: None,
    });
    (TaskStatus::Failed, ExitCode::from(1))
}
