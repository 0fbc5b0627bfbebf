//! The system prompt and the tools array of one request (SPEC R6.2).
//!
//! SPEC R6.2: gather one [`SystemPromptContext`] — cwd, OS and shell, provider and mode, rules
//! files (`.clinerules` global and local, `AGENTS.md`), `.clineignore`, MCP servers and their
//! tools, preferred language, native tool calling — and build `(system_prompt, tools)` from it in
//! one place. The request step calls the builder again for every run (SPEC R6.10), so a rule
//! edited mid-task is seen on the next request.
//!
//! The pieces:
//!
//! - [`SystemPromptContext`] (in `context.rs`) is everything the prompt is built from.
//! - [`SystemPromptContext::gather`] (in `gather.rs`) reads the machine and the workspace. It
//!   never fails: a rules file that cannot be read, is not UTF-8, or is larger than
//!   [`MAX_RULE_FILE_BYTES`] is skipped with a `tracing` warning naming it. MCP servers, the
//!   preferred language and the tool-calling flag come from the caller through the `with_*`
//!   setters.
//! - [`get_system_prompt`] (in `text.rs`) is the one place that turns a context into the prompt
//!   text and the tools array. It is a pure function: the same context gives the same output,
//!   byte for byte (servers and tools are sorted by name, rules keep the gathered order).
//! - [`mcp_tool_bindings`] (in `tools.rs`) names each MCP tool for native tool calling —
//!   `{server}__{tool}`, sanitised to `[A-Za-z0-9_-]`, at most 64 characters, unique — and maps
//!   a name the model calls back to its server and tool.
//!
//! Where the rules come from (as in Cline, `src/core/context/instructions/user-instructions/`):
//! the global rules directory (Cline's is `~/Documents/Cline/Rules`, see
//! [`default_global_rules_dir`]), then the workspace's `.clinerules` — a single file, or a
//! directory whose `.md`/`.txt` files are read in name order — then the workspace's
//! `AGENTS.md`. Unlike Cline we do not walk sub-directories of `.clinerules` or look for
//! `AGENTS.md` files below the workspace root, and we do not read `.cursorrules` or
//! `.windsurfrules`.

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
