//! Where the task store is, and opening it.
//! Spec: R13.1.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchyard_api::{ApiConfiguration, ConfigError};
use switchyard_core::store::{PgStore, SqliteStore, StoreError, TaskStore};

use super::paths::{data_dir, default_config_path};

/// Where the task store is, as the command line gave it: `--store`, else the configuration's
/// `store`, else the SQLite file in the data directory.
#[derive(Debug, Clone, Copy, Default)]
pub struct StorePlace<'a> {
    /// `--config`; else the default file when it exists.
    pub config: Option<&'a Path>,
    pub data_dir: Option<&'a Path>,
    pub store: Option<&'a str>,
}

#[derive(Clone, PartialEq, Eq)]
pub enum StoreSpec {
    Sqlite(PathBuf),
    /// A PostgreSQL server URL, which may hold a password: print only `describe`.
    Postgres(String),
}

impl std::fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl StoreSpec {
    /// `text` as written in `--store`, `store =` or `store copy`: `postgres://…` or
    /// `sqlite:PATH`, a database file or a directory holding `switchyard.db`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if switchyard_core::store::is_postgres_url(text) {
            return Ok(Self::Postgres(text.to_owned()));
        }
        match text.strip_prefix("sqlite:") {
            Some(path) if !path.is_empty() => {
                let path = PathBuf::from(path.strip_prefix("//").unwrap_or(path));
                Ok(Self::Sqlite(if path.is_dir() {
                    path.join(switchyard_core::store::DB_FILE)
                } else {
                    path
                }))
            }
            _ => Err(format!(
                "the task store `{}` is not one Switchyard knows: write postgres://USER@HOST:PORT/DATABASE or sqlite:PATH",
                redact_store(text)
            )),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite:{}", path.display()),
            Self::Postgres(url) => switchyard_core::store::redact_url(url),
        }
    }

    pub async fn open(&self) -> Result<Arc<dyn TaskStore>, StoreError> {
        Ok(match self {
            Self::Sqlite(path) => Arc::new(SqliteStore::open_file(path)?),
            Self::Postgres(url) => Arc::new(PgStore::connect(url).await?),
        })
    }
}

fn redact_store(text: &str) -> String {
    switchyard_api::StoreUrl::new(text).to_string()
}

/// The configuration file's `store` setting for `place`; `None` without a file or setting.
pub fn configured_store(
    place: StorePlace<'_>,
) -> Result<Option<switchyard_api::StoreUrl>, ConfigError> {
    let file = match place.config {
        Some(p) => Some(p.to_owned()),
        None => default_config_path().filter(|p| p.exists()),
    };
    match file {
        // No key is read for the `store` setting alone.
        Some(file) => Ok(ApiConfiguration::load(&file, |_| None)?.store),
        None => Ok(None),
    }
}

pub fn store_spec(place: StorePlace<'_>) -> Result<StoreSpec, String> {
    if place.store.is_some_and(|s| !s.trim().is_empty()) {
        return store_spec_with(place, None);
    }
    let configured = configured_store(place).map_err(|e| e.to_string())?;
    store_spec_with(place, configured.as_ref())
}

/// `store_spec` with the configuration file's `store` already read.
pub fn store_spec_with(
    place: StorePlace<'_>,
    configured: Option<&switchyard_api::StoreUrl>,
) -> Result<StoreSpec, String> {
    if let Some(store) = place.store.filter(|s| !s.trim().is_empty()) {
        return StoreSpec::parse(store);
    }
    if let Some(store) = configured {
        return StoreSpec::parse(store.expose());
    }
    Ok(StoreSpec::Sqlite(
        data_dir(place.data_dir)?.join(switchyard_core::store::DB_FILE),
    ))
}

pub async fn open_store(place: StorePlace<'_>) -> Result<Arc<dyn TaskStore>, String> {
    open_spec(&store_spec(place)?).await
}

/// Opens, creating or migrating, the store `spec`.
pub async fn open_spec(spec: &StoreSpec) -> Result<Arc<dyn TaskStore>, String> {
    let mut made_dir = None;
    if let StoreSpec::Sqlite(path) = spec
        && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        // Conversations can hold code and secrets pasted by the user, so the directory is
        // private, as `SqliteStore::open` makes it.
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::StorageFull => StoreError::DiskFull {
                location: dir.display().to_string(),
            }
            .to_string(),
            _ => format!("cannot use the data directory {}: {e}", dir.display()),
        })?;
        made_dir = Some(dir);
    }
    let opened = spec.open().await;
    if let (Err(StoreError::DiskFull { .. }), Some(dir)) = (&opened, made_dir) {
        // The store removed the file it could not finish; an empty directory made for it goes
        // too, so a full disk is left as it was found.
        let _ = std::fs::remove_dir(dir);
    }
    opened.map_err(|e| e.to_string())
}

/// Opens the task store for `place` to read it; `None` for a SQLite file not made yet, so a
/// command that only shows creates nothing. A file that cannot be written opens read-only.
pub async fn open_existing_store(
    place: StorePlace<'_>,
) -> Result<Option<Arc<dyn TaskStore>>, String> {
    let spec = store_spec(place)?;
    let StoreSpec::Sqlite(path) = &spec else {
        return open_spec(&spec).await.map(Some);
    };
    if !path.exists() {
        return Ok(None);
    }
    match SqliteStore::open_file(path) {
        Ok(store) => Ok(Some(Arc::new(store))),
        Err(StoreError::ReadOnly { .. }) => match SqliteStore::open_read_only(path) {
            Ok(store) => Ok(Some(Arc::new(store))),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    }
}
