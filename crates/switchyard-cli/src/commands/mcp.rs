//! MCP servers from the command line: where the settings file is, the hub a task uses, the
//! terminal approval of tool calls, and `switchyard mcp list`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use switchyard_core::mcp::{McpServerHub, McpServerStatus, McpSettings};
use switchyard_core::task::{BoxFuture, ToolApprover, ToolCallRequest};

use crate::cli::McpListArgs;
use crate::settings;

/// The settings file's name in the configuration directory.
pub const MCP_SETTINGS_FILE: &str = "mcp_settings.json";
/// Cline's file name, read from the configuration directory when ours is absent.
pub const CLINE_MCP_SETTINGS_FILE: &str = "cline_mcp_settings.json";

/// The default settings file: `mcp_settings.json` next to `config.toml` (`$SWITCHYARD_HOME`, else
/// `~/.config/switchyard/`), or `cline_mcp_settings.json` there when only that one exists.
pub fn default_mcp_settings_path() -> Option<PathBuf> {
    let dir = settings::default_config_path()?.parent()?.to_path_buf();
    let ours = dir.join(MCP_SETTINGS_FILE);
    let cline = dir.join(CLINE_MCP_SETTINGS_FILE);
    Some(if !ours.exists() && cline.exists() {
        cline
    } else {
        ours
    })
}

/// The settings in effect and the file they came from: the file given (which must exist), else
/// the default file (none there means no servers).
pub fn load_settings(flag: Option<&Path>) -> Result<(McpSettings, Option<PathBuf>), String> {
    match flag {
        Some(path) => McpSettings::load(path)
            .map(|s| (s, Some(path.to_owned())))
            .map_err(|e| e.to_string()),
        None => match default_mcp_settings_path() {
            Some(path) => McpSettings::load_optional(&path)
                .map(|s| (s, Some(path)))
                .map_err(|e| e.to_string()),
            None => Ok((McpSettings::default(), None)),
        },
    }
}

/// Loads the settings and starts connecting every enabled server in the background.
pub fn start_hub(flag: Option<&Path>) -> Result<Arc<McpServerHub>, String> {
    load_settings(flag).map(|(settings, _)| McpServerHub::start(settings))
}

/// Approves the model's tool calls: all of them with `--yes`; else asks on the terminal; with no
/// terminal to ask, denies (with a warning saying how to allow them).
#[derive(Debug, Clone, Copy)]
pub struct TerminalApprover {
    pub yes: bool,
}

impl ToolApprover for TerminalApprover {
    fn approve<'a>(&'a self, call: &'a ToolCallRequest) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            if self.yes {
                return true;
            }
            if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
                tracing::warn!(
                    "the tool call {} (MCP server \"{}\") was not run: there is no terminal to ask \
                     for approval; pass --yes or add \"{}\" to the server's autoApprove list",
                    call.tool,
                    call.server,
                    call.tool
                );
                return false;
            }
            let prompt = format!(
                "Run the tool {} of MCP server \"{}\" with {}? [y/N]: ",
                call.tool, call.server, call.arguments
            );
            tokio::task::spawn_blocking(move || ask(&prompt))
                .await
                .unwrap_or(false)
        })
    }
}

fn ask(prompt: &str) -> bool {
    // The stderr lock is released before waiting for the answer: a Ctrl-C meanwhile is
    // reported on stderr, and holding the lock would deadlock it.
    {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\n{prompt}");
        let _ = err.flush();
    }
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        return false;
    }
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// `switchyard mcp list`: connects every server (each bounded by its timeout) and prints its
/// state, tools and error. Exit 0 when every enabled server connected, 1 when one failed, 2 for
/// an unusable settings file.
pub async fn list(args: &McpListArgs) -> ExitCode {
    let (settings, path) = match load_settings(args.mcp_config.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let where_ = path.as_deref().map_or_else(
        || "(no configuration directory)".to_owned(),
        |p| p.display().to_string(),
    );
    if settings.servers.is_empty() {
        if !args.json {
            say!(
                "No MCP servers configured in {where_}. Add them in the \"mcpServers\" shape \
                 (see README, \"MCP servers\") or pass --mcp-config FILE."
            );
        }
        return ExitCode::SUCCESS;
    }
    let hub = McpServerHub::start(settings);
    hub.wait_until_settled().await;
    let states = hub.states();
    hub.shutdown().await;
    if !args.json {
        say!("MCP settings: {where_}");
    }
    let mut failed = false;
    for s in &states {
        failed |= s.status == McpServerStatus::Failed;
        if args.json {
            let tools: Vec<_> = s
                .tools
                .iter()
                .map(|t| serde_json::json!({"name": t.name, "description": t.description}))
                .collect();
            say!(
                "{}",
                serde_json::json!({
                    "name": s.name, "transport": s.transport, "status": s.status,
                    "tools": tools, "error": s.error,
                })
            );
            continue;
        }
        match s.status {
            McpServerStatus::Connected => {
                say!(
                    "{} ({}): connected, {} tool{}",
                    s.name,
                    s.transport,
                    s.tools.len(),
                    if s.tools.len() == 1 { "" } else { "s" }
                );
                for t in &s.tools {
                    let first = t.description.lines().next().unwrap_or("").trim();
                    if first.is_empty() {
                        say!("  {}", t.name);
                    } else {
                        say!("  {} — {}", t.name, first);
                    }
                }
            }
            status => say!(
                "{} ({}): {}{}",
                s.name,
                s.transport,
                status.as_str(),
                s.error
                    .as_deref()
                    .map(|e| format!(" — {e}"))
                    .unwrap_or_default()
            ),
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
