//! Connecting one MCP server over stdio or streamable HTTP, within the server's `timeout`.
//! Spec: R10.5, R11.1.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use switchyard_api::ToolSpec;
use tokio::io::AsyncBufReadExt;

use super::errors::{plain_init_error, plain_service_error, spawn_error};
use super::server::{McpServerStatus, Server, last_line, lock};
use super::settings::McpTransport;

const STDERR_TAIL_LINES: usize = 20;

pub(super) async fn connect(server: Arc<Server>) {
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
        } => open_stdio(server, command, args, env, cwd.as_deref()).await?,
        McpTransport::StreamableHttp { url, headers } | McpTransport::Sse { url, headers } => {
            open_http(server, url, headers).await?
        }
    };
    let tools = list_tools(&service).await?;
    Ok((service, tools))
}

async fn open_stdio(
    server: &Server,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
) -> Result<RunningService<RoleClient, ()>, String> {
    register_secrets(env);
    let mut cmd = tokio::process::Command::new(command);
    // Never Switchyard's provider keys: only what a process needs, plus the server's `env`.
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
    // Its own process group, so a launcher such as npx and what it starts stop together.
    #[cfg(unix)]
    wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
    let (transport, stderr) = TokioChildProcess::builder(wrapped)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| spawn_error(command, cwd, &e))?;
    if let Some(stderr) = stderr {
        keep_stderr_tail(server, stderr);
    }
    ().serve(transport)
        .await
        .map_err(|e| plain_init_error(&e, true))
}

fn keep_stderr_tail(server: &Server, stderr: tokio::process::ChildStderr) {
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

/// Completes the handshake over streamable HTTP, which a legacy SSE server is also tried with.
async fn open_http(
    server: &Server,
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<RunningService<RoleClient, ()>, String> {
    register_secrets(headers);
    let config =
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(header_map(headers)?);
    let transport = StreamableHttpClientTransport::from_config(config);
    ().serve(transport).await.map_err(|e| {
        // rmcp has no client for the legacy HTTP+SSE transport.
        let mut reason = format!("{} ({url})", plain_init_error(&e, false));
        if matches!(server.config.transport, McpTransport::Sse { .. }) {
            reason.push_str(
                "; this server is configured as legacy SSE, which the MCP SDK no longer \
                 speaks: use its streamable HTTP endpoint",
            );
        }
        reason
    })
}

async fn list_tools(service: &RunningService<RoleClient, ()>) -> Result<Vec<ToolSpec>, String> {
    let tools = service.peer().list_all_tools().await.map_err(|e| {
        format!(
            "it connected but listing its tools failed: {}",
            plain_service_error(&e)
        )
    })?;
    Ok(tools
        .into_iter()
        .map(|t| ToolSpec {
            name: t.name.into_owned(),
            description: t.description.map(|d| d.into_owned()).unwrap_or_default(),
            input_schema: Value::Object((*t.input_schema).clone()),
        })
        .collect())
}

fn register_secrets(values: &BTreeMap<String, String>) {
    const WORDS: [&str; 6] = ["key", "token", "secret", "password", "auth", "credential"];
    for (name, value) in values {
        let name = name.to_ascii_lowercase();
        if WORDS.iter().any(|w| name.contains(w)) {
            switchyard_api::secrets::register(value);
        }
    }
}

/// The variables a stdio MCP server inherits, as the MCP TypeScript SDK chooses them, plus the
/// locale, temporary and `XDG_*` folders; anything else goes in the server's `env`.
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
