//! `switchyard mcp list`: every configured MCP server connected, with its state, tools and error.
//! Spec: R11.2.

use std::process::ExitCode;

use switchyard_core::mcp::{McpServerHub, McpServerState, McpServerStatus};

use crate::cli::McpListArgs;
use crate::settings::mcp::load_settings;

/// Connects every server and prints each; 1 when one failed, 2 for an unusable settings file.
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
            print_json(s);
        } else {
            print_text(s);
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn print_json(s: &McpServerState) {
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
}

/// One server as text: its tools when connected, else its state and error.
fn print_text(s: &McpServerState) {
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
