//! The system prompt and the tools array of one request, built from one `SystemPromptContext`.
//!
//! The request step builds them again for every run, so a rule edited mid-task is seen on the
//! next request. Unlike Cline, sub-directories of `.clinerules`, nested `AGENTS.md` files,
//! `.cursorrules` and `.windsurfrules` are not read.
//! Spec: R6.2, R6.10.

mod context;
mod gather;
mod text;
mod tools;

#[cfg(test)]
mod tests;

pub use context::{McpServerInfo, RuleFile, SystemPromptContext};
pub use gather::{
    AGENTS_MD, CLINEIGNORE, CLINERULES, MAX_RULE_FILE_BYTES, default_global_rules_dir,
};
pub use text::get_system_prompt;
pub use tools::{MAX_TOOL_NAME_LEN, MCP_TOOL_SEPARATOR, McpToolBinding, mcp_tool_bindings};
