//! Naming MCP tools `{server}__{tool}`; calls map back through bindings, not by splitting.
//! Spec: R6.2.

use std::collections::HashSet;

use switchyard_api::ToolSpec;

use super::context::McpServerInfo;

/// The longest function name providers accept, matching `^[A-Za-z0-9_-]{1,64}$`.
pub const MAX_TOOL_NAME_LEN: usize = 64;
/// Joins the server and tool names in a function name.
pub const MCP_TOOL_SEPARATOR: &str = "__";

/// One MCP tool as offered to the model, and the server and tool its calls route to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpToolBinding {
    /// The function name the model calls, sanitised.
    pub function_name: String,
    /// The server's name in the settings file.
    pub server: String,
    /// The tool's name as the server gives it.
    pub tool: String,
}

/// The binding of every MCP tool in prompt order: servers by name, then tools by name.
pub fn mcp_tool_bindings(servers: &[McpServerInfo]) -> Vec<McpToolBinding> {
    bind_mcp_tools(servers)
        .into_iter()
        .flat_map(|server| server.tools)
        .map(|(binding, _)| binding)
        .collect()
}

pub(super) struct BoundServer<'a> {
    pub(super) name: &'a str,
    pub(super) tools: Vec<(McpToolBinding, &'a ToolSpec)>,
}

pub(super) fn bind_mcp_tools(servers: &[McpServerInfo]) -> Vec<BoundServer<'_>> {
    let mut sorted: Vec<&McpServerInfo> = servers.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut taken = HashSet::new();
    sorted
        .into_iter()
        .map(|server| {
            let mut tools: Vec<&ToolSpec> = server.tools.iter().collect();
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            let tools = tools
                .into_iter()
                .map(|tool| {
                    let base = sanitize_tool_name(&format!(
                        "{}{MCP_TOOL_SEPARATOR}{}",
                        server.name, tool.name
                    ));
                    let binding = McpToolBinding {
                        function_name: make_unique(base, &mut taken),
                        server: server.name.clone(),
                        tool: tool.name.clone(),
                    };
                    (binding, tool)
                })
                .collect();
            BoundServer {
                name: &server.name,
                tools,
            }
        })
        .collect()
}

pub(super) fn sanitize_tool_name(raw: &str) -> String {
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.truncate(MAX_TOOL_NAME_LEN);
    name
}

fn make_unique(base: String, taken: &mut HashSet<String>) -> String {
    if taken.insert(base.clone()) {
        return base;
    }
    let mut n: usize = 2;
    loop {
        let suffix = format!("_{n}");
        let mut candidate = base.clone();
        candidate.truncate(MAX_TOOL_NAME_LEN.saturating_sub(suffix.len()));
        candidate.push_str(&suffix);
        if taken.insert(candidate.clone()) {
            return candidate;
        }
        n += 1;
    }
}
