//! Where Switchyard keeps its files: the configuration directory, its `config.toml` and
//! `models.toml`, and the data directory of the task database.
//! Spec: R2.5.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchyard_api::ConfigError;
use switchyard_api::model::Catalogue;

/// The configuration directory: `$SWITCHYARD_HOME`, else the platform's.
pub fn config_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("SWITCHYARD_HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home));
    }
    directories::ProjectDirs::from("", "", "switchyard").map(|d| d.config_dir().to_owned())
}

pub fn default_config_path() -> Option<PathBuf> {
    config_dir().map(|d| d.join("config.toml"))
}

/// The user's model catalogue, `models.toml` in the configuration directory.
pub fn user_models_path() -> Option<PathBuf> {
    config_dir().map(|d| d.join("models.toml"))
}

/// The built-in catalogue with the user's `models.toml` applied; `None` without that file.
pub fn user_catalogue() -> Result<Option<Arc<Catalogue>>, ConfigError> {
    match user_models_path().filter(|p| p.exists()) {
        Some(path) => Ok(Some(Arc::new(Catalogue::with_user_file(&path)?))),
        None => Ok(None),
    }
}

/// The data directory of the task database: `explicit`, else `$SWITCHYARD_HOME/data`, so one
/// variable relocates everything Switchyard keeps, else the platform's.
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
