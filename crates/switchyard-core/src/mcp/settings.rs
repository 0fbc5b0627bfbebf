//! The MCP settings file in the common `mcpServers` shape; Cline's is read as is.
//! Spec: R11.1.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The default per-server timeout in seconds, Cline's `DEFAULT_MCP_TIMEOUT_SECONDS`.
pub const DEFAULT_MCP_TIMEOUT_SECONDS: u64 = 60;

/// Every configured server, sorted by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpSettings {
    /// Each server's configuration, by its name in the file.
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// One server's configuration.
#[derive(Clone, PartialEq)]
pub struct McpServerConfig {
    /// How the server is reached.
    pub transport: McpTransport,
    /// A disabled server is listed but never started.
    pub disabled: bool,
    /// Bounds the connection handshake and each tool call.
    pub timeout: Duration,
    /// Tools, by the server's names for them, called without asking the user.
    pub auto_approve: Vec<String>,
}

/// How to reach a server.
#[derive(Clone, PartialEq)]
pub enum McpTransport {
    /// A child process on stdin and stdout, its `env` added to one without provider keys.
    Stdio {
        /// The program, looked up on `PATH`.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: BTreeMap<String, String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// MCP streamable HTTP at `url`, with extra request `headers`.
    StreamableHttp {
        /// The server's endpoint.
        url: String,
        /// Sent with every request, such as `Authorization`.
        headers: BTreeMap<String, String>,
    },
    /// A legacy HTTP+SSE server, tried over streamable HTTP since rmcp speaks only that.
    Sse {
        /// The server's endpoint.
        url: String,
        /// Sent with every request, such as `Authorization`.
        headers: BTreeMap<String, String>,
    },
}

impl McpTransport {
    /// `stdio`, `streamableHttp` or `sse`, as in Cline's settings.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Stdio { .. } => "stdio",
            Self::StreamableHttp { .. } => "streamableHttp",
            Self::Sse { .. } => "sse",
        }
    }
}

// Environment values and headers may hold secrets: Debug shows their names only.
impl std::fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::StreamableHttp { url, headers } | Self::Sse { url, headers } => f
                .debug_struct(self.kind())
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

impl std::fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("transport", &self.transport)
            .field("disabled", &self.disabled)
            .field("timeout", &self.timeout)
            .field("auto_approve", &self.auto_approve)
            .finish()
    }
}

/// A settings file that cannot be used; `Display` is one sentence naming the file.
#[derive(Debug, thiserror::Error)]
pub enum McpSettingsError {
    /// The file could not be read.
    #[error("cannot read the MCP settings file {path}: {source}")]
    Read {
        /// The settings file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error(
        "the MCP settings file {path} is not valid JSON at line {line}, column {column}: {message}"
    )]
    Json {
        /// The settings file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// The column, from 1.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A server's entry is unusable.
    #[error("the MCP settings file {path}: server \"{server}\" {problem}")]
    Server {
        /// The settings file.
        path: PathBuf,
        /// The server's name.
        server: String,
        /// What is wrong, in plain words.
        problem: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawFile {
    #[serde(default)]
    mcp_servers: BTreeMap<String, RawServer>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    #[serde(default)]
    disabled: bool,
    timeout: Option<f64>,
    url: Option<String>,
    #[serde(rename = "type", alias = "transportType")]
    kind: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    auto_approve: Vec<String>,
}

impl McpSettings {
    /// Reads and checks the file at `path`; a missing file is an error here.
    pub fn load(path: &Path) -> Result<Self, McpSettingsError> {
        let text = std::fs::read_to_string(path).map_err(|source| McpSettingsError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Like `load`, but a file that does not exist gives no servers.
    pub fn load_optional(path: &Path) -> Result<Self, McpSettingsError> {
        if !path.exists() {
            return Ok(Self::default());
        }
        Self::load(path)
    }

    /// Parses settings text; `path` is only used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, McpSettingsError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let raw: RawFile = serde_json::from_str(text).map_err(|e| McpSettingsError::Json {
            path: path.to_owned(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let mut servers = BTreeMap::new();
        for (name, server) in raw.mcp_servers {
            let problem = |problem: String| McpSettingsError::Server {
                path: path.to_owned(),
                server: name.clone(),
                problem,
            };
            let config = convert(server).map_err(problem)?;
            servers.insert(name, config);
        }
        Ok(Self { servers })
    }
}

fn convert(raw: RawServer) -> Result<McpServerConfig, String> {
    let timeout = match raw.timeout {
        None => Duration::from_secs(DEFAULT_MCP_TIMEOUT_SECONDS),
        Some(t) if t.is_finite() && t > 0.0 => Duration::from_secs_f64(t.min(86_400.0)),
        Some(t) => return Err(format!("has timeout {t}; give a number of seconds above 0")),
    };
    // Without a type, a server with `command` is stdio and one with `url` streamable HTTP.
    let kind = raw.kind.as_deref().map(str::trim);
    let need_url = |url: Option<String>| {
        url.filter(|u| !u.trim().is_empty())
            .ok_or_else(|| "needs a \"url\" for its HTTP transport".to_owned())
    };
    let transport = match kind {
        Some("stdio") => stdio(raw.command, raw.args, raw.env, raw.cwd)?,
        Some("streamableHttp" | "http" | "streamable-http" | "streamable_http") => {
            McpTransport::StreamableHttp {
                url: need_url(raw.url)?,
                headers: raw.headers,
            }
        }
        Some("sse") => McpTransport::Sse {
            url: need_url(raw.url)?,
            headers: raw.headers,
        },
        Some(other) => {
            return Err(format!(
                "has type \"{other}\"; use \"stdio\", \"streamableHttp\" or \"sse\""
            ));
        }
        None if raw.command.is_some() => stdio(raw.command, raw.args, raw.env, raw.cwd)?,
        None if raw.url.is_some() => McpTransport::StreamableHttp {
            url: need_url(raw.url)?,
            headers: raw.headers,
        },
        None => return Err("has neither \"command\" nor \"url\"; give one".to_owned()),
    };
    Ok(McpServerConfig {
        transport,
        disabled: raw.disabled,
        timeout,
        auto_approve: raw.auto_approve,
    })
}

fn stdio(
    command: Option<String>,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
) -> Result<McpTransport, String> {
    let command = command
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| "needs a \"command\" for its stdio transport".to_owned())?;
    Ok(McpTransport::Stdio {
        command,
        args,
        env,
        cwd,
    })
}
