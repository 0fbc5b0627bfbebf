//! `McpServerHub`: the configured MCP servers, connected concurrently.
//! Spec: R6.1, R10.5, R11.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use switchyard_api::ToolSpec;

use super::connect::connect;
use super::errors::plain_service_error;
use super::output::{McpToolOutput, tool_output};
use super::server::{McpServerStatus, Server, ServerState, lock};
use super::settings::McpSettings;
use crate::prompt::McpServerInfo;
use crate::task::mcp_wait::{McpHub, McpServerProblem};

/// A snapshot of one server for `switchyard mcp list`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct McpServerState {
    /// The server's name in the settings file.
    pub name: String,
    /// `stdio`, `streamableHttp` or `sse`.
    pub transport: &'static str,
    /// The server's status.
    pub status: McpServerStatus,
    /// The server's tools; empty unless connected.
    pub tools: Vec<ToolSpec>,
    /// The last error in plain words.
    pub error: Option<String>,
}

/// The configured servers, connecting in the background, each bounded by its `timeout`.
pub struct McpServerHub {
    servers: Vec<Arc<Server>>,
    /// Problems already reported to the task, by server, so each is said once.
    reported: Mutex<HashMap<String, String>>,
    connecting: Mutex<Vec<tokio::task::AbortHandle>>,
}
impl McpServerHub {
    /// Starts connecting every enabled server at once and returns; needs a tokio runtime.
    pub fn start(settings: McpSettings) -> Arc<Self> {
        let servers: Vec<Arc<Server>> = settings
            .servers
            .into_iter()
            .map(|(name, config)| {
                let status = if config.disabled {
                    McpServerStatus::Disabled
                } else {
                    McpServerStatus::Connecting
                };
                Arc::new(Server {
                    name,
                    config,
                    state: Mutex::new(ServerState {
                        status,
                        tools: Vec::new(),
                        error: None,
                        peer: None,
                    }),
                    service: tokio::sync::Mutex::new(None),
                    stderr_tail: Arc::new(Mutex::new(VecDeque::new())),
                })
            })
            .collect();
        let connecting = servers
            .iter()
            .filter(|s| !s.config.disabled)
            .map(|s| tokio::spawn(connect(Arc::clone(s))).abort_handle())
            .collect();
        Arc::new(Self {
            servers,
            reported: Mutex::new(HashMap::new()),
            connecting: Mutex::new(connecting),
        })
    }

    /// A hub with no servers.
    pub fn empty() -> Arc<Self> {
        Self::start(McpSettings::default())
    }

    /// Every server's state, by name.
    pub fn states(&self) -> Vec<McpServerState> {
        self.servers
            .iter()
            .map(|s| {
                let state = s.state();
                McpServerState {
                    name: s.name.clone(),
                    transport: s.config.transport.kind(),
                    status: state.status,
                    tools: state.tools.clone(),
                    error: state.error.clone(),
                }
            })
            .collect()
    }

    /// The connected servers and their tools, for the system prompt and the tools array.
    pub fn connected_servers(&self) -> Vec<McpServerInfo> {
        self.servers
            .iter()
            .filter_map(|s| {
                let state = s.state();
                (state.status == McpServerStatus::Connected).then(|| McpServerInfo {
                    name: s.name.clone(),
                    tools: state.tools.clone(),
                })
            })
            .collect()
    }

    /// True when `tool` of `server` is in the server's `autoApprove` list.
    pub fn is_auto_approved(&self, server: &str, tool: &str) -> bool {
        self.find(server)
            .is_some_and(|s| s.config.auto_approve.iter().any(|t| t == tool))
    }

    /// Waits until no server is connecting; each is bounded by its own timeout.
    pub async fn wait_until_settled(&self) {
        while self.is_connecting() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Calls `tool` on `server` within its timeout; a failure is an `is_error` output.
    pub async fn call_tool(&self, server: &str, tool: &str, arguments: Value) -> McpToolOutput {
        let mut output = self.call_tool_unscrubbed(server, tool, arguments).await;
        switchyard_api::secrets::scrub_in_place(&mut output.content);
        output
    }

    async fn call_tool_unscrubbed(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> McpToolOutput {
        let error = |content: String| McpToolOutput {
            content,
            is_error: true,
        };
        let Some(s) = self.find(server) else {
            return error(format!("there is no MCP server named \"{server}\""));
        };
        let peer = {
            let state = s.state();
            match (&state.peer, state.status) {
                (Some(peer), McpServerStatus::Connected) => peer.clone(),
                _ => {
                    return error(format!(
                        "the MCP server \"{server}\" is not connected ({})",
                        state.error.as_deref().unwrap_or(state.status.as_str())
                    ));
                }
            }
        };
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return error(format!(
                    "the arguments of {tool} must be a JSON object, not {other}"
                ));
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let timeout = s.config.timeout;
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Err(_) => error(format!(
                "the MCP server \"{server}\" did not answer the call to {tool} within {} s",
                timeout.as_secs_f64()
            )),
            Ok(Ok(result)) => tool_output(result),
            Ok(Err(e)) => {
                let message = plain_service_error(&e);
                if matches!(
                    e,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                ) {
                    // Reading the state marks the server failed once its connection is closed.
                    drop(s.state());
                }
                error(format!(
                    "the MCP server \"{server}\" failed to run {tool}: {message}"
                ))
            }
        }
    }

    /// Closes every connection and stops servers still connecting, with their process groups.
    pub async fn shutdown(&self) {
        for task in lock(&self.connecting).drain(..) {
            task.abort();
        }
        for s in &self.servers {
            if let Some(service) = s.service.lock().await.take() {
                let _ = service.cancel().await;
            }
            let mut state = lock(&s.state);
            state.peer = None;
            if state.status == McpServerStatus::Connecting {
                state.status = McpServerStatus::Failed;
                state.error = Some("stopped before it finished connecting".to_owned());
            }
        }
    }

    fn find(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|s| s.name == name)
    }
}

impl McpHub for McpServerHub {
    fn is_connecting(&self) -> bool {
        self.servers
            .iter()
            .any(|s| s.state().status == McpServerStatus::Connecting)
    }

    fn newly_unavailable(&self) -> Vec<McpServerProblem> {
        let mut reported = lock(&self.reported);
        let mut out = Vec::new();
        for s in &self.servers {
            let state = s.state();
            let reason = match state.status {
                McpServerStatus::Connected | McpServerStatus::Disabled => {
                    reported.remove(&s.name);
                    continue;
                }
                McpServerStatus::Connecting => "it is still connecting".to_owned(),
                McpServerStatus::Failed => state
                    .error
                    .clone()
                    .unwrap_or_else(|| "it failed to connect".to_owned()),
            };
            if reported.get(&s.name) != Some(&reason) {
                reported.insert(s.name.clone(), reason.clone());
                out.push(McpServerProblem {
                    server: s.name.clone(),
                    reason,
                });
            }
        }
        out
    }
}
