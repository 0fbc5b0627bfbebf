//! [`McpServerHub`]: the configured MCP servers, connected concurrently through rmcp (the
//! official Rust SDK), with each server's state, tools and last error (SPEC R11).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use switchyard_api::ToolSpec;
use tokio::io::AsyncBufReadExt;

use super::settings::{McpServerConfig, McpSettings, McpTransport};
use crate::prompt::McpServerInfo;
use crate::task::attempt::{McpHub, McpServerProblem};

/// Lines of a stdio server's stderr kept to explain a failure.
const STDERR_TAIL_LINES: usize = 20;

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum McpServerStatus {
    /// `"disabled": true` in the settings: never started.
    Disabled,
    /// Starting, or in the MCP handshake, or listing its tools.
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

/// A snapshot of one server for display (`switchyard mcp list`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct McpServerState {
    /// The server's name in the settings file.
    pub name: String,
    /// `stdio`, `streamableHttp` or `sse`.
    pub transport: &'static str,
    /// Connecting, connected, failed or disabled.
    pub status: McpServerStatus,
    /// The server's tools (names as the server gives them); empty unless connected.
    pub tools: Vec<ToolSpec>,
    /// The last error in plain words (why it failed, or its last failed call's connection loss).
    pub error: Option<String>,
}

/// What a tool call gave back: its text for the model, and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpToolOutput {
    /// The result's text, as the model is sent it.
    pub content: String,
    /// The call failed (the server said so, timed out, or could not be reached).
    pub is_error: bool,
}

/// The configured servers. Create it with [`McpServerHub::start`] inside a tokio runtime; the
/// servers connect in the background, concurrently, each bounded by its `timeout`.
pub struct McpServerHub {
    servers: Vec<Arc<Server>>,
    /// Problems already reported to the task (name → reason), so each is said once.
    reported: Mutex<HashMap<String, String>>,
    /// The connection tasks, aborted by [`McpServerHub::shutdown`] (a server still connecting
    /// is stopped too).
    connecting: Mutex<Vec<tokio::task::AbortHandle>>,
}

struct Server {
    name: String,
    config: McpServerConfig,
    state: Mutex<ServerState>,
    /// The rmcp service, kept so it can be closed; `None` until connected.
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

struct ServerState {
    status: McpServerStatus,
    tools: Vec<ToolSpec>,
    error: Option<String>,
    peer: Option<Peer<RoleClient>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Server {
    /// The server's state, first marking a connected server whose connection has closed since
    /// (its process exited, or the HTTP session ended) as failed, with its last stderr line.
    fn state(&self) -> std::sync::MutexGuard<'_, ServerState> {
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

/// The last non-blank line of a stderr tail, trimmed to 300 characters.
fn last_line(tail: &VecDeque<String>) -> Option<String> {
    tail.iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().chars().take(300).collect())
}

impl McpServerHub {
    /// Starts connecting every enabled server of `settings` at once and returns immediately.
    /// Must be called inside a tokio runtime.
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

    /// Waits until no server is connecting (each is bounded by its own timeout).
    pub async fn wait_until_settled(&self) {
        while self.is_connecting() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Calls `tool` on `server` with `arguments` (a JSON object, or null for none), bounded by
    /// the server's timeout. Never fails: a failure is an output with `is_error` and the reason
    /// in plain words, which is what the model is shown.
    ///
    /// Every configured secret is scrubbed from the output (SPEC R10.5): a server that prints
    /// its environment or echoes a key never hands it to the model, the store or the screen.
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
                    // Marks the server failed, with the reason, once its connection is closed.
                    drop(s.state());
                }
                error(format!(
                    "the MCP server \"{server}\" failed to run {tool}: {message}"
                ))
            }
        }
    }

    /// Closes every connection and stops servers still connecting (stdio servers' processes
    /// are killed with their process group).
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

/// Connects one server and records the outcome in its state.
async fn connect(server: Arc<Server>) {
    let timeout = server.config.timeout;
    let outcome = match tokio::time::timeout(timeout, open(&server)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!(
            "it did not finish the MCP handshake within {} s (its \"timeout\")",
            timeout.as_secs_f64()
        )),
    };
    match outcome {
        Ok((service, tools)) => {
            let peer = service.peer().clone();
            *server.service.lock().await = Some(service);
            let mut state = lock(&server.state);
            state.status = McpServerStatus::Connected;
            state.tools = tools;
            state.error = None;
            state.peer = Some(peer);
            tracing::debug!(server = %server.name, "MCP server connected");
        }
        Err(reason) => {
            let reason = with_stderr(&server, reason).await;
            tracing::debug!(server = %server.name, %reason, "MCP server failed");
            let mut state = lock(&server.state);
            state.status = McpServerStatus::Failed;
            state.error = Some(reason);
        }
    }
}

type Connected = (RunningService<RoleClient, ()>, Vec<ToolSpec>);

async fn open(server: &Server) -> Result<Connected, String> {
    let service = match &server.config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            register_secrets(env);
            let mut cmd = tokio::process::Command::new(command);
            // A minimal environment (SPEC R10.5): what a process needs to run, plus the
            // server's own `env`; never Switchyard's provider keys.
            cmd.env_clear()
                .envs(inherited_env())
                .args(args)
                .envs(env)
                .kill_on_drop(true);
            if let Some(cwd) = cwd {
                cmd.current_dir(cwd);
            }
            #[allow(unused_mut)]
            let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
            // Its own process group, so a launcher (npx, uvx) and what it starts stop together.
            #[cfg(unix)]
            wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
            let (transport, stderr) = TokioChildProcess::builder(wrapped)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| spawn_error(command, cwd.as_deref(), &e))?;
            if let Some(stderr) = stderr {
                let tail = Arc::clone(&server.stderr_tail);
                let name = server.name.clone();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tracing::debug!(server = %name, "stderr: {line}");
                        let mut tail = lock(&tail);
                        if tail.len() == STDERR_TAIL_LINES {
                            tail.pop_front();
                        }
                        tail.push_back(line);
                    }
                });
            }
            ().serve(transport)
                .await
                .map_err(|e| plain_init_error(&e, true))?
        }
        McpTransport::StreamableHttp { url, headers } | McpTransport::Sse { url, headers } => {
            register_secrets(headers);
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .custom_headers(header_map(headers)?);
            let transport = StreamableHttpClientTransport::from_config(config);
            ().serve(transport).await.map_err(|e| {
                let mut reason = format!("{} ({url})", plain_init_error(&e, false));
                if matches!(server.config.transport, McpTransport::Sse { .. }) {
                    reason.push_str(
                        "; this server is configured as legacy SSE, which the MCP SDK no longer \
                         speaks: use its streamable HTTP endpoint",
                    );
                }
                reason
            })?
        }
    };
    let tools = service.peer().list_all_tools().await.map_err(|e| {
        format!(
            "it connected but listing its tools failed: {}",
            plain_service_error(&e)
        )
    })?;
    let tools = tools
        .into_iter()
        .map(|t| ToolSpec {
            name: t.name.into_owned(),
            description: t.description.map(|d| d.into_owned()).unwrap_or_default(),
            input_schema: Value::Object((*t.input_schema).clone()),
        })
        .collect();
    Ok((service, tools))
}

/// Registers the values of a server's `env` or `headers` whose names say they are secret (a
/// key, token, secret, password or authorization) as configured secrets (SPEC R10.5), so a
/// server that prints them, or an error that quotes them, shows `[redacted]`.
fn register_secrets(values: &BTreeMap<String, String>) {
    const WORDS: [&str; 6] = ["key", "token", "secret", "password", "auth", "credential"];
    for (name, value) in values {
        let name = name.to_ascii_lowercase();
        if WORDS.iter().any(|w| name.contains(w)) {
            switchyard_api::secrets::register(value);
        }
    }
}

/// The variables a stdio MCP server inherits from Switchyard's environment: the MCP
/// TypeScript SDK's `DEFAULT_INHERITED_ENV_VARS` (`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`,
/// `USER`; on Windows `APPDATA`, `HOMEDRIVE`, `HOMEPATH`, `LOCALAPPDATA`, `PATH`,
/// `PROCESSOR_ARCHITECTURE`, `SYSTEMDRIVE`, `SYSTEMROOT`, `TEMP`, `USERNAME`, `USERPROFILE`,
/// `PROGRAMFILES`), plus the locale (`LANG`, `LANGUAGE`, `LC_*`), the temporary folder
/// (`TMPDIR`, `TMP`, `TEMP`) and `XDG_*` folders. Anything else a server needs (a proxy, its
/// own key) goes in its `env` in the settings file. Values that look like functions
/// (`() {…`, bash exported functions) are left out, as the SDK does.
pub fn inherited_env() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    const NAMES: &[&str] = &[
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
        "LANG",
        "LANGUAGE",
        "TMPDIR",
        "TMP",
        "TEMP",
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "USERNAME",
        "USERPROFILE",
        "PROGRAMFILES",
    ];
    std::env::vars_os()
        .filter(|(name, value)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            let wanted = NAMES.iter().any(|n| name.eq_ignore_ascii_case(n))
                || name.starts_with("LC_")
                || name.starts_with("XDG_");
            wanted && !value.to_string_lossy().starts_with("()")
        })
        .collect()
}

fn header_map(
    headers: &BTreeMap<String, String>,
) -> Result<HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>, String> {
    headers
        .iter()
        .map(|(k, v)| {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("its header name \"{k}\" is not a valid HTTP header name"))?;
            let mut value = reqwest::header::HeaderValue::from_str(v)
                .map_err(|_| format!("the value of its header \"{k}\" is not valid in HTTP"))?;
            value.set_sensitive(true);
            Ok((name, value))
        })
        .collect()
}

fn spawn_error(command: &str, cwd: Option<&std::path::Path>, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => match cwd {
            Some(cwd) if !cwd.is_dir() => format!(
                "its working directory {} does not exist; fix \"cwd\" in the MCP settings",
                cwd.display()
            ),
            _ => format!(
                "the command \"{command}\" was not found; install it or fix \"command\" in the MCP \
                 settings"
            ),
        },
        std::io::ErrorKind::PermissionDenied => {
            format!("the command \"{command}\" cannot be run (permission denied)")
        }
        _ => format!("the command \"{command}\" could not be started: {e}"),
    }
}

/// A handshake failure in plain words.
fn plain_init_error(e: &ClientInitializeError, stdio: bool) -> String {
    match e {
        ClientInitializeError::ConnectionClosed(_) if stdio => {
            "the server process exited (or closed its output) during the MCP handshake".to_owned()
        }
        ClientInitializeError::ConnectionClosed(_) => {
            "the server closed the connection during the MCP handshake".to_owned()
        }
        ClientInitializeError::TransportError { .. } if stdio => {
            "the server process exited (or stopped reading) during the MCP handshake".to_owned()
        }
        ClientInitializeError::TransportError { error, .. } => {
            format!("could not reach the server: {}", innermost(error))
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!("the server refused the MCP handshake: {}", data.message)
        }
        other => format!("the MCP handshake failed: {}", error_chain(other)),
    }
}

fn plain_service_error(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(data) => data.message.to_string(),
        ServiceError::TransportClosed => "the connection to the server is closed".to_owned(),
        ServiceError::Timeout { timeout } => {
            format!("no answer within {} s", timeout.as_secs_f64())
        }
        other => error_chain(other),
    }
}

/// The deepest cause of an error (for HTTP: the status or the connection error, without the
/// SDK's type names), with a hint for a refused connection.
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last: &(dyn std::error::Error + 'static) = e;
    let mut source = e.source();
    while let Some(s) = source {
        let client = match s.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(r)) => Some(r),
            _ => s.downcast_ref::<reqwest::Error>(),
        };
        if let Some(r) = client {
            if r.is_connect() {
                let chain = error_chain(r).to_ascii_lowercase();
                if chain.contains("dns error") || chain.contains("failed to lookup address") {
                    return "its host name could not be resolved (check the url)".to_owned();
                }
                return "nothing answered at that address (is the server running?)".to_owned();
            }
            if r.is_timeout() {
                return "the connection timed out".to_owned();
            }
            if let Some(status) = r.status() {
                return format!("it answered HTTP {status}");
            }
            return error_chain(r);
        }
        last = s;
        source = s.source();
    }
    last.to_string()
}

/// An error and its sources, joined with `: ` (repeats skipped).
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// Appends the server's last stderr line (what most servers print when they give up).
async fn with_stderr(server: &Server, reason: String) -> String {
    if !matches!(server.config.transport, McpTransport::Stdio { .. }) {
        return reason;
    }
    // The process may still be writing its last words; give the reader a moment.
    for _ in 0..10 {
        if !lock(&server.stderr_tail).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    match last_line(&lock(&server.stderr_tail)) {
        Some(line) => format!("{reason}; its last output: {line}"),
        None => reason,
    }
}

/// The text the model sees for a tool result: text blocks joined by newlines; images, audio and
/// binary resources described; the structured content when there is no other content.
fn tool_output(result: CallToolResult) -> McpToolOutput {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Image(i) => parts.push(format!(
                "[image: {}, {} bytes of base64]",
                i.mime_type,
                i.data.len()
            )),
            ContentBlock::Audio(a) => parts.push(format!(
                "[audio: {}, {} bytes of base64]",
                a.mime_type,
                a.data.len()
            )),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    parts.push(format!("[resource {uri}]\n{text}"));
                }
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    parts.push(format!(
                        "[resource {uri}: {} binary data]",
                        mime_type.as_deref().unwrap_or("binary")
                    ))
                }
                _ => parts.push("[a resource of a kind Switchyard does not show]".to_owned()),
            },
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[resource link {}]", link.uri));
            }
            _ => parts.push("[content of a kind Switchyard does not show]".to_owned()),
        }
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    McpToolOutput {
        content: parts.join("\n"),
        is_error: result.is_error.unwrap_or(false),
    }
}
