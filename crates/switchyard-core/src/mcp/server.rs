//! One configured MCP server as the hub keeps it: its settings, status, tools and connection.
//! Spec: R11.1.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient};
use switchyard_api::ToolSpec;

use super::settings::{McpServerConfig, McpTransport};

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum McpServerStatus {
    /// Disabled in the settings, never started.
    Disabled,
    /// Starting, in the MCP handshake, or listing its tools.
    Connecting,
    /// Ready: its tools are offered to the model.
    Connected,
    /// It could not be started or connected, or its connection was lost; see the error.
    Failed,
}

impl McpServerStatus {
    /// `disabled`, `connecting`, `connected` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Connecting => "connecting",
            Self::Connected => "connected",
            Self::Failed => "failed",
        }
    }
}

pub(super) struct Server {
    pub name: String,
    pub config: McpServerConfig,
    pub state: Mutex<ServerState>,
    /// The rmcp service, kept so it can be closed; `None` until connected.
    pub service: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
    /// The last lines a stdio server wrote to stderr, to explain a failure.
    pub stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

pub(super) struct ServerState {
    pub status: McpServerStatus,
    pub tools: Vec<ToolSpec>,
    pub error: Option<String>,
    pub peer: Option<Peer<RoleClient>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Server {
    /// The server's state, marking a connected server whose connection closed as failed.
    pub fn state(&self) -> std::sync::MutexGuard<'_, ServerState> {
        let mut state = lock(&self.state);
        if state.status == McpServerStatus::Connected
            && state.peer.as_ref().is_some_and(Peer::is_transport_closed)
        {
            let mut reason = "the connection to the server closed".to_owned();
            if matches!(self.config.transport, McpTransport::Stdio { .. }) {
                reason = "the server process exited or closed its output".to_owned();
                if let Some(line) = last_line(&lock(&self.stderr_tail)) {
                    reason = format!("{reason}; its last output: {line}");
                }
            }
            state.status = McpServerStatus::Failed;
            state.error = Some(reason);
            state.tools.clear();
            state.peer = None;
        }
        state
    }
}

pub(super) fn last_line(tail: &VecDeque<String>) -> Option<String> {
    tail.iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().chars().take(300).collect())
}
