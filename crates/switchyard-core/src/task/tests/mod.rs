//! The steps of a turn over the real HTTP path (the testkit server replays recorded wire bytes
//! and the failure cases of `tests/cases`): `attempt_api_request` (R6), one stream consumed
//! (R9.1, R9.2), the request loop (R9.3), the tool loop over real MCP servers (R11). The
//! persisted [`crate::Task`] is tested through its public API in `tests/task.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod attempt;
mod cases;
mod mcp;
mod run_request;
mod turn;

use super::TaskEvent;
use super::observer::{BoxFuture, TurnObserver};
use crate::context::DeletedRange;

/// Keeps what a step reported: its events and the deleted ranges, in order.
#[derive(Debug, Default)]
struct Recorded {
    events: Vec<TaskEvent>,
    ranges: Vec<Option<DeletedRange>>,
}

impl TurnObserver for Recorded {
    fn event(&mut self, event: TaskEvent) -> BoxFuture<'_, ()> {
        self.events.push(event);
        Box::pin(std::future::ready(()))
    }

    fn range_changed(&mut self, range: Option<DeletedRange>) -> BoxFuture<'_, ()> {
        self.ranges.push(range);
        Box::pin(std::future::ready(()))
    }
}
