//! [`SystemPromptContext`]: everything the system prompt is built from, in one value (SPEC
//! R6.2); `gather.rs` fills it from the machine, `text.rs` turns it into the prompt.

use std::path::PathBuf;

use switchyard_api::{Mode, ToolSpec};

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
