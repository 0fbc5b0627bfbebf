//! Where the MCP servers come from (SPEC R11.1): the settings file given, else
//! `mcp_settings.json` (or Cline's `cline_mcp_settings.json`) in the configuration directory,
//! and the hub a task starts from them (R11.2).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchyard_core::mcp::{McpServerHub, McpSettings};

use super::paths::default_config_path;

/// The settings file's name in the configuration directory.
pub const MCP_SETTINGS_FILE: &str = "mcp_settings.json";
/// Cline's file name, read from the configuration directory when ours is absent.
pub const CLINE_MCP_SETTINGS_FILE: &str = "cline_mcp_settings.json";

/// The default settings file: `mcp_settings.json` next to `config.toml` (`$SWITCHYARD_HOME`, else
/// `~/.config/switchyard/`), or `cline_mcp_settings.json` there when only that one exists.
pub fn default_mcp_settings_path() -> Option<PathBuf> {
    let dir = default_config_path()?.parent()?.to_path_buf();
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
