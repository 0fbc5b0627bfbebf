//! `SystemPromptContext`: everything the system prompt is built from, in one value.
//! Spec: R6.2.

use std::path::{Path, PathBuf};

use switchyard_api::{Mode, ToolSpec};

use super::gather::{self, RuleFile};

/// Everything the system prompt is built from; `Default` is an empty context in ACT mode.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SystemPromptContext {
    /// The workspace root, where `.clinerules`, `AGENTS.md` and `.clineignore` are looked up.
    pub cwd: PathBuf,
    /// A readable name and the raw `std::env::consts` values, such as `macOS (macos, aarch64)`.
    pub os: String,
    /// The default shell's file name, such as `zsh`.
    pub shell: String,
    /// The provider serving this request, kept for wording that may depend on it later.
    pub provider_id: String,
    /// The model serving this request, not shown in the prompt today.
    pub model_id: String,
    /// PLAN to discuss and plan, ACT to carry out the task.
    pub mode: Mode,
    /// The rules files in the order shown: global, local `.clinerules`, `AGENTS.md`.
    pub rules: Vec<RuleFile>,
    /// The workspace's `.clineignore`, in gitignore syntax, when present and not blank.
    pub clineignore: Option<String>,
    /// Connected MCP servers and their tools.
    pub mcp_servers: Vec<McpServerInfo>,
    /// The language the assistant answers in; `None` leaves it to the model.
    pub preferred_language: Option<String>,
    /// True: MCP tools go in the tools array as functions. False: the prompt describes them.
    pub native_tool_calling: bool,
}

/// A connected MCP server: its configured name and the tools it offers.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerInfo {
    /// The server's name in the settings file.
    pub name: String,
    /// Its tools.
    pub tools: Vec<ToolSpec>,
}

impl SystemPromptContext {
    /// Gathers the context for a request in `cwd` from the machine and the workspace.
    pub fn gather(
        cwd: &Path,
        global_rules_dir: Option<&Path>,
        provider_id: &str,
        model_id: &str,
        mode: Mode,
    ) -> Self {
        let found = gather::read(cwd, global_rules_dir);
        Self {
            cwd: cwd.to_path_buf(),
            os: found.os,
            shell: found.shell,
            provider_id: provider_id.to_owned(),
            model_id: model_id.to_owned(),
            mode,
            rules: found.rules,
            clineignore: found.clineignore,
            mcp_servers: Vec::new(),
            preferred_language: None,
            native_tool_calling: false,
        }
    }

    /// Sets the connected MCP servers.
    pub fn with_mcp_servers(mut self, servers: Vec<McpServerInfo>) -> Self {
        self.mcp_servers = servers;
        self
    }

    /// Sets the preferred language, such as `German`; a blank value leaves it unset.
    pub fn with_preferred_language(mut self, language: impl Into<String>) -> Self {
        let language = language.into().trim().to_owned();
        self.preferred_language = (!language.is_empty()).then_some(language);
        self
    }

    /// Chooses native tool calling, or tools described in the prompt text.
    pub fn with_native_tool_calling(mut self, enabled: bool) -> Self {
        self.native_tool_calling = enabled;
        self
    }
}
