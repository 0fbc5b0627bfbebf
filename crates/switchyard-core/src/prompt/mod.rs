//! The system prompt and tools of one request, built again for every run to see edited rules.
//! Spec: R6.2, R6.10.

mod context;
mod gather;
mod text;
mod tools;

#[cfg(test)]
mod tests;

pub use context::{McpServerInfo, SystemPromptContext};
pub use gather::{
    AGENTS_MD, CLINEIGNORE, CLINERULES, MAX_RULE_FILE_BYTES, RuleFile, default_global_rules_dir,
};
pub use text::get_system_prompt;
pub use tools::{MAX_TOOL_NAME_LEN, MCP_TOOL_SEPARATOR, McpToolBinding, mcp_tool_bindings};
