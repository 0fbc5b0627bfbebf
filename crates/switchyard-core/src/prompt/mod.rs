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

mod gather;
mod text;
mod tools;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

use switchyard_api::{Mode, ToolSpec};

pub use gather::{
    AGENTS_MD, CLINEIGNORE, CLINERULES, MAX_RULE_FILE_BYTES, default_global_rules_dir,
};
pub use text::get_system_prompt;
pub use tools::{MAX_TOOL_NAME_LEN, MCP_TOOL_SEPARATOR, McpToolBinding, mcp_tool_bindings};

/// Everything the system prompt is built from (SPEC R6.2).
///
/// Build one with [`SystemPromptContext::gather`] and the `with_*` setters; tests may fill the
/// fields directly (`Default` gives an empty context in ACT mode).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SystemPromptContext {
    /// The workspace root: where `.clinerules`, `AGENTS.md` and `.clineignore` are looked up.
    pub cwd: PathBuf,
    /// A readable name plus the raw `std::env::consts` values, e.g. `macOS (macos, aarch64)`.
    pub os: String,
    /// The default shell's file name, e.g. `zsh`; `sh` when `$SHELL` is unset (`COMSPEC` on
    /// Windows, `cmd.exe` when unset).
    pub shell: String,
    /// The provider serving this request. Not shown in the prompt today; kept so wording can
    /// depend on the provider later without changing the shape.
    pub provider_id: String,
    /// The model serving this request; like `provider_id`, not shown in the prompt today.
    pub model_id: String,
    /// PLAN (discuss and plan, change nothing) or ACT (carry out the task).
    pub mode: Mode,
    /// The rules files, in the order they are shown: global, local `.clinerules`, `AGENTS.md`.
    pub rules: Vec<RuleFile>,
    /// The workspace's `.clineignore` (gitignore syntax), when present and not blank.
    pub clineignore: Option<String>,
    /// Connected MCP servers and their tools.
    pub mcp_servers: Vec<McpServerInfo>,
    /// The language the assistant answers in; `None` leaves it to the model.
    pub preferred_language: Option<String>,
    /// True: MCP tools go in the tools array as functions. False: they are described in the
    /// prompt text (with a `<use_mcp_tool>` call format) and the tools array is empty.
    pub native_tool_calling: bool,
}

/// One rules file: where it was read from and its content (trimmed, BOM removed, never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text.
    pub content: String,
}

/// A connected MCP server: its configured name and the tools it offers (names as the server
/// gives them; input schemas are JSON Schema objects).
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerInfo {
    /// The server's name in the settings file.
    pub name: String,
    /// Its tools.
    pub tools: Vec<ToolSpec>,
}

impl SystemPromptContext {
    /// Sets the connected MCP servers.
    pub fn with_mcp_servers(mut self, servers: Vec<McpServerInfo>) -> Self {
        self.mcp_servers = servers;
        self
    }

    /// Sets the preferred language (e.g. `German`); a blank value leaves it unset.
    pub fn with_preferred_language(mut self, language: impl Into<String>) -> Self {
        let language = language.into().trim().to_owned();
        self.preferred_language = (!language.is_empty()).then_some(language);
        self
    }

    /// Chooses between native tool calling (tools array) and tools described in the text.
    pub fn with_native_tool_calling(mut self, enabled: bool) -> Self {
        self.native_tool_calling = enabled;
        self
    }
}
