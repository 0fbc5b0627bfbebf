//! A task: everything between the user and one `ApiHandler`. `Task` answers one user turn at a
//! time and writes everything to the store as it happens; `TaskEvent` is what it reports, and
//! its serde form is the CLI's `--json` line contract.
//!
//! Files in the order a turn uses them, each using only those before it: `events`,
//! `conversation`, `observer`, `settings`, `mcp_wait`, `recovery`, `failover`, `probe`,
//! `attempt` for one request step, `assembler`, `request` for one stream, `turn` for the
//! request loop, `tools` for the tool loop, `journal`, `persisted` for `Task`, `run`, `resume`
//! and `builder`.
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
