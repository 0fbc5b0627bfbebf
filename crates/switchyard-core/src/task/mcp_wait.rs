//! The request step's bounded wait for MCP servers still connecting.
//! Spec: R6.1, R11.2.

use std::time::Duration;

use tokio::time::Instant;

use super::events::TaskEvent;
use super::observer::TurnObserver;

pub(crate) trait McpHub: Send + Sync {
    fn is_connecting(&self) -> bool;

    /// Enabled servers not connected, each reported once until its state or reason changes.
    fn newly_unavailable(&self) -> Vec<McpServerProblem> {
        Vec::new()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct McpServerProblem {
    pub server: String,
    pub reason: String,
}

#[cfg(test)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NoMcpServers;

#[cfg(test)]
impl McpHub for NoMcpServers {
    fn is_connecting(&self) -> bool {
        false
    }
}

pub(super) async fn wait_and_report(
    hub: &dyn McpHub,
    wait: Duration,
    observer: &mut dyn TurnObserver,
) {
    wait_for_mcp(hub, wait).await;
    for problem in hub.newly_unavailable() {
        observer
            .event(TaskEvent::McpServerUnavailable {
                server: problem.server,
                reason: problem.reason,
            })
            .await;
    }
}

async fn wait_for_mcp(hub: &dyn McpHub, wait: Duration) {
    let deadline = Instant::now() + wait;
    while hub.is_connecting() {
        if Instant::now() >= deadline {
            tracing::debug!(
                "MCP servers are still connecting after {} s; sending the request without them",
                wait.as_secs_f64()
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(50).min(wait)).await;
    }
}
