//! A task: everything between the user and one `ApiHandler`, stored as it happens.
//! `persisted` holds `Task` and `TaskBuilder`; a turn runs through `run`, `tools`, `turn`,
//! `request` and `attempt`, and `journal` stores it.
//! Spec: R6, R8, R9, R10, R11.

mod assembler;
mod attempt;
mod builder;
mod conversation;
mod events;
mod failover;
mod journal;
pub(crate) mod mcp_wait;
mod observer;
mod persisted;
mod probe;
mod recovery;
mod request;
mod resume;
mod run;
mod settings;
mod state;
mod tools;
mod turn;

#[cfg(test)]
mod tests;

pub use assembler::MessageAssembler;
pub use events::{CancelReason, TaskEvent, TaskStatus};
pub use observer::BoxFuture;
pub use persisted::{Task, TaskBuilder};
pub use recovery::{FailureDecider, FailureDecision, FixedDecision};
pub use request::RequestStatus;
pub use resume::{PROCESS_ENDED_MESSAGE, recoverable_partial};
pub use settings::{AttemptSettings, DEFAULT_RETRY_AFTER_CAP, MAX_AUTO_RETRIES, MCP_WAIT};
pub use state::{INTERRUPTED_BY_USER_MARKER, ResumeReport, TaskError};
pub use tools::{
    DEFAULT_MAX_TOOL_ROUNDS, DenyToolCalls, TOOL_CALL_DENIED, TOOL_ROUNDS_EXCEEDED, ToolApprover,
    ToolCallRequest, ToolLoopSettings,
};
pub use turn::{CONTINUE_AFTER_INTERRUPTION, INTERRUPTED_MARKER, TurnOutcome};
