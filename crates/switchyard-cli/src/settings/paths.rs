//! Where Switchyard keeps its files: the configuration directory (`$SWITCHYARD_HOME`, else the
//! platform's), its `config.toml` and `models.toml` (the user's catalogue, SPEC R2.5), and the
//! data directory of the task database (DESIGN.md "Configuration").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchyard_api::ConfigError;
use switchyard_api::model::Catalogue;

/// The configuration directory: `$SWITCHYARD_HOME`, else `~/.config/switchyard/` (the
/// platform's config directory).
pub fn config_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("SWITCHYARD_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home));
    }
    directories::ProjectDirs::from("", "", "switchyard").map(|d| d.config_dir().to_owned())
}

/// The default configuration file: `config.toml` in the [`config_dir`].
pub fn default_config_path() -> Option<PathBuf> {
    config_dir().map(|d| d.join("config.toml"))
}

/// The user's model catalogue, `models.toml` in the [`config_dir`] (SPEC R2.5).
pub fn user_models_path() -> Option<PathBuf> {
    config_dir().map(|d| d.join("models.toml"))
}

/// The built-in catalogue with the user's `models.toml` applied, or `None` when there is no
/// such file (the built-in one is used).
///
/// # Errors
///
/// The file cannot be read, or is not valid: the error names the file, line and field.
pub fn user_catalogue() -> Result<Option<Arc<Catalogue>>, ConfigError> {
    match user_models_path().filter(|p| p.exists()) {
        Some(path) => Ok(Some(Arc::new(Catalogue::with_user_file(&path)?))),
        None => Ok(None),
    }
}

/// The data directory holding the task database (DESIGN.md "Configuration"): `--data-dir` or
/// `$SWITCHYARD_DATA_DIR` (`explicit`), else `$SWITCHYARD_HOME/data` when `SWITCHYARD_HOME` is
/// set (so one variable relocates everything Switchyard keeps), else the platform's data
/// directory (`~/.local/share/switchyard` on Linux).
pub fn data_dir(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(dir) = explicit.filter(|d| !d.as_os_str().is_empty()) {
        return Ok(dir.to_owned());
    }
    if let Some(home) = std::env::var_os("SWITCHYARD_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home).join("data"));
    }
    directories::ProjectDirs::from("", "", "switchyard")
        .map(|d| d.data_dir().to_owned())
        .ok_or_else(|| {
            "cannot find a home directory for the task database; pass --data-dir DIR or set SWITCHYARD_DATA_DIR".to_owned()
        })
}
