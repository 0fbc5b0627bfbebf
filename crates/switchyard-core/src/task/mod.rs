//! The task: everything between the user and one `ApiHandler` (SPEC R6, R8–R11).
//!
//! [`Task`] is the front door: built from configuration (or a handler), a [`TaskStore`]
//! and an MCP hub, it answers one user turn at a time and writes everything to the store as
//! it happens. [`TaskEvent`] is what it reports, in order; serialised with serde it is exactly
//! the `--json` line contract of the CLI (README "JSON output").
//!
//! Inside, one file per step of a turn, each using only the files above it in this list:
//! - `events.rs`: [`TaskEvent`] and [`CancelReason`], what a task reports (R6.8, R9.1, R10.5);
//! - `conversation.rs`: the history and its deleted range as a request sees them (R8.4);
//! - `observer.rs`: the turn's observer, each change awaited so it is stored first (R10.2);
//! - `settings.rs`: [`AttemptSettings`], the step's deadlines and limits (R5.2, R6.1, R6.7);
//! - `mcp_wait.rs`: the bounded wait for MCP servers before a request (R6.1);
//! - `recovery.rs`: retry waits, truncation after an overflow, the user's decision (R6.5–R6.10);
//! - `failover.rs`: the failover entry, spend caps and rate-limit waits of a request (R12);
//! - `probe.rs`: one request sent and probed up to its first content chunk (R6.4);
//! - `attempt.rs`: `attempt_api_request`, one request prepared, probed and recovered (R6);
//! - `assembler.rs`: the assistant's message assembled from streamed chunks (R9.1, R9.3);
//! - `request.rs`: one stream consumed into events and the assistant's message (R9.1, R9.2);
//! - `turn.rs`: the request loop of a turn, recovering a stream that fails part-way (R9.3);
//! - `tools.rs`: the rounds of MCP tool calls (R11.2);
//! - `journal.rs`: how a task writes each change down before going on (R10.2);
//! - `persisted.rs`: [`Task`], its state and how it writes itself down (R10.1, R10.2);
//! - `run.rs`: running a task: `task_started`, one user turn, `task_finished` (R6, R9, R11);
//! - `resume.rs`: reopening a task a crash cut short (R10.3);
//! - `builder.rs`: [`TaskBuilder`], creating or reopening a task (R3.2, R10.1, R12).
//!
//! [`TaskStore`]: crate::store::TaskStore

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
mod tools;
mod turn;

#[cfg(test)]
mod tests;

pub use assembler::MessageAssembler;
pub use builder::TaskBuilder;
pub use events::{CancelReason, TaskEvent, TaskStatus};
pub use observer::BoxFuture;
pub use persisted::{INTERRUPTED_BY_USER_MARKER, ResumeReport, Task, TaskError};
pub use recovery::{FailureDecider, FailureDecision, FixedDecision};
pub use request::RequestStatus;
pub use resume::{PROCESS_ENDED_MESSAGE, recoverable_partial};
pub use settings::{AttemptSettings, DEFAULT_RETRY_AFTER_CAP, MAX_AUTO_RETRIES, MCP_WAIT};
pub use tools::{
    DEFAULT_MAX_TOOL_ROUNDS, DenyToolCalls, TOOL_CALL_DENIED, TOOL_ROUNDS_EXCEEDED, ToolApprover,
    ToolCallRequest, ToolLoopSettings,
};
pub use turn::{CONTINUE_AFTER_INTERRUPTION, INTERRUPTED_MARKER, TurnOutcome};
