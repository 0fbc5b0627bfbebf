//! The task: everything between the user and one `ApiHandler` (SPEC R6, R8–R11).
//!
//! [`Task`] is the front door: built from configuration (or a handler), a [`TaskStore`]
//! and an MCP hub, it answers one user turn at a time and writes everything to the store as
//! it happens. [`TaskEvent`] is what it reports, in order; serialised with serde it is exactly
//! the `--json` line contract of the CLI (README "JSON output").
//!
//! Inside, one file per step of a turn:
//! - `attempt.rs`: `attempt_api_request`, one request prepared, probed and recovered (R6);
//! - `request.rs`: one stream consumed into events and the assistant's message (R9.1, R9.2);
//! - `turn.rs`: the request loop of a turn, recovering a stream that fails part-way (R9.3);
//! - `tools.rs`: the rounds of MCP tool calls (R11.2);
//! - `journal.rs`: how a task writes each change down before going on (R10.2);
//! - `resume.rs`: reopening a task a crash cut short (R10.3).
//!
//! [`TaskStore`]: crate::store::TaskStore

mod assembler;
pub(crate) mod attempt;
mod builder;
mod events;
mod journal;
mod observer;
mod persisted;
mod request;
mod resume;
mod tools;
mod turn;

#[cfg(test)]
mod tests;

pub use attempt::{
    AttemptSettings, BoxFuture, DEFAULT_RETRY_AFTER_CAP, FailureDecider, FailureDecision,
    FixedDecision, MAX_AUTO_RETRIES, MCP_WAIT,
};
pub use builder::TaskBuilder;
pub use events::{TaskEvent, TaskStatus};
pub use persisted::{INTERRUPTED_BY_USER_MARKER, Task, TaskError};
pub use request::RequestStatus;
pub use resume::{PROCESS_ENDED_MESSAGE, ResumeReport, recoverable_partial};
pub use tools::{
    DEFAULT_MAX_TOOL_ROUNDS, DenyToolCalls, TOOL_CALL_DENIED, TOOL_ROUNDS_EXCEEDED, ToolApprover,
    ToolCallRequest, ToolLoopSettings,
};
pub use turn::{CONTINUE_AFTER_INTERRUPTION, CancelReason, INTERRUPTED_MARKER, TurnOutcome};
