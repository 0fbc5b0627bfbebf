//! Where the MCP servers come from, and the hub a task starts from them.
//! Spec: R11.1, R11.2.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchyard_core::mcp::{McpServerHub, McpSettings};

use super::paths::default_config_path;

pub const MCP_SETTINGS_FILE: &str = "mcp_settings.json";
/// Cline's file name, read from the configuration directory when ours is absent.
pub const CLINE_MCP_SETTINGS_FILE: &str = "cline_mcp_settings.json";

/// The default settings file in the configuration directory, ours before Cline's.
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

/// The settings in effect and their file: the file given, which must exist, else the default.
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

pub fn start_hub(flag: Option<&Path>) -> Result<Arc<McpServerHub>, String> {
    load_settings(flag).map(|(settings, _)| McpServerHub::start(settings))
}
