//! Where the configuration comes from: the file, the built-in local default, and the
//! command-line overrides (SPEC R3.6, DESIGN.md "Configuration").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchyard_api::model::Catalogue;
use switchyard_api::model::lookup::{closest, suggest};
use switchyard_api::providers::presets::{PRESETS, preset};
use switchyard_api::{
    ApiConfiguration, ConfigError, Mode, ModeSettings, ModelInfoOrigin, ProviderEndpoint,
    resolve_mode,
};

use switchyard_core::store::{PgStore, SqliteStore, StoreError, TaskStore};

use crate::cli::SelectionArgs;

/// The model id the local server (`scripts/local-model.sh`) serves.
pub const LOCAL_MODEL_ID: &str = "smollm2-135m-instruct";

/// The provider id of the built-in local default: the OpenAI-compatible server of
/// `scripts/local-model.sh`.
const LOCAL_PROVIDER: &str = "openai";
/// The local server's default port.
pub const LOCAL_MODEL_PORT: u16 = 8089;

/// Where the configuration in effect came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// A configuration file.
    File(PathBuf),
    /// No file exists and no provider was named: the local model server, no key needed.
    BuiltInLocal,
    /// No file exists; a provider was named on the command line.
    Flags,
}

impl ConfigSource {
    /// A short description for messages.
    pub fn describe(&self) -> String {
        match self {
            Self::File(p) => format!("file {}", p.display()),
            Self::BuiltInLocal => {
                "built-in default: the local model server of scripts/local-model.sh (no configuration file found)".to_owned()
            }
            Self::Flags => "command-line flags (no configuration file found)".to_owned(),
        }
    }
}

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

/// The local model server's base URL (`SWITCHYARD_LOCAL_MODEL_PORT` overrides the port).
pub fn local_model_base_url() -> String {
    let port = std::env::var("SWITCHYARD_LOCAL_MODEL_PORT")
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or(LOCAL_MODEL_PORT);
    format!("http://127.0.0.1:{port}/v1")
}

/// With no configuration file, requests go to the local model server: when nothing listens
/// on its port, say so at once, with how to start it or pick a provider, instead of retrying
/// a refused connection for seconds (issue 14). Only a refused or unreachable port counts; a
/// slow server is the request's business.
pub async fn check_local_model_server() -> Result<(), String> {
    let url = local_model_base_url();
    let Some(host) = switchyard_api::providers::url_host(&url) else {
        return Ok(());
    };
    let connect = tokio::net::TcpStream::connect(host.as_str());
    match tokio::time::timeout(std::time::Duration::from_secs(2), connect).await {
        Ok(Ok(_)) | Err(_) => Ok(()),
        Ok(Err(e)) => Err(format!(
            "no local model server is listening at {url} ({e}), Switchyard's default when there is no configuration file; start one with `scripts/local-model.sh start` in a Switchyard checkout (or run scripts/quickstart.sh), or choose a provider, e.g. `switchyard task --provider anthropic \"…\"` with ANTHROPIC_API_KEY set"
        )),
    }
}

/// The built-in configuration used when there is no file: the OpenAI-compatible local server.
///
/// Keys are read only when `read_keys` (the user gave `--base-url`, so chose where requests
/// go): the built-in server needs none, and a user's `OPENAI_API_KEY` must not go to whatever
/// listens on the local port.
fn built_in_local(env: impl Fn(&str) -> Option<String>, read_keys: bool) -> ApiConfiguration {
    let act = ModeSettings {
        provider: Some(LOCAL_PROVIDER.into()),
        // Its limits and price ($0) are the catalogue's (models/switchyard/openai.toml).
        model_id: Some(LOCAL_MODEL_ID.into()),
        ..ModeSettings::default()
    };
    let mut config = ApiConfiguration {
        plan: act.clone(),
        act,
        ..ApiConfiguration::default()
    };
    config.providers.endpoints.insert(
        LOCAL_PROVIDER.into(),
        ProviderEndpoint {
            base_url: Some(local_model_base_url()),
            ..ProviderEndpoint::default()
        },
    );
    if read_keys {
        config.read_keys(env);
    }
    config
}

/// Loads the configuration: `explicit` must exist; the default path is used when present;
/// otherwise the built-in local default (or, when `--provider` is given, the presets alone).
/// Then applies `selection` to `mode`.
pub fn load(
    explicit: Option<&Path>,
    selection: &SelectionArgs,
    mode: Option<Mode>,
) -> Result<(ApiConfiguration, ConfigSource, Mode), ConfigError> {
    let env = |k: &str| std::env::var(k).ok();
    let overrides = crate::overrides::get();
    let (mut config, source) = if overrides.is_empty() {
        load_plain(explicit, selection, env)?
    } else {
        load_overridden(explicit, selection, overrides, env)?
    };
    config.catalogue = user_catalogue()?;
    let mode = mode.unwrap_or(config.default_mode);
    apply_selection(&mut config, mode, selection);
    Ok((config, source, mode))
}

/// The file, else the presets (with `--provider`), else the built-in local default.
fn load_plain(
    explicit: Option<&Path>,
    selection: &SelectionArgs,
    env: impl Fn(&str) -> Option<String> + Copy,
) -> Result<(ApiConfiguration, ConfigSource), ConfigError> {
    Ok(match explicit {
        Some(p) => (
            ApiConfiguration::load(p, env)?,
            ConfigSource::File(p.to_owned()),
        ),
        None => match default_config_path().filter(|p| p.exists()) {
            Some(p) => (ApiConfiguration::load(&p, env)?, ConfigSource::File(p)),
            None if selection.provider.is_some() => {
                let mut c = ApiConfiguration::default();
                c.read_keys(env);
                (c, ConfigSource::Flags)
            }
            None => (
                built_in_local(env, selection.base_url.is_some()),
                ConfigSource::BuiltInLocal,
            ),
        },
    })
}

/// [`load_plain`]'s sources as TOML text, with the `-c` overrides applied before parsing (so
/// any field can be set, and a wrong one is reported like the file's). The built-in local
/// default reads no key unless the user chose where requests go (`--base-url`, a
/// `providers.ID.base_url` override, or an override giving a mode another provider), as
/// without overrides.
fn load_overridden(
    explicit: Option<&Path>,
    selection: &SelectionArgs,
    overrides: &[crate::overrides::Override],
    env: impl Fn(&str) -> Option<String> + Copy,
) -> Result<(ApiConfiguration, ConfigSource), ConfigError> {
    let file = explicit
        .map(Path::to_owned)
        .or_else(|| default_config_path().filter(|p| p.exists()));
    let (text, label, source, read_keys) = match file {
        Some(p) => {
            let text = std::fs::read_to_string(&p).map_err(|e| ConfigError::Read {
                file: p.display().to_string(),
                message: e.to_string(),
            })?;
            // Errors of the file itself first, with its own lines.
            ApiConfiguration::from_toml(&text, &p.display().to_string(), |_| None)?;
            let label = format!("{} (with -c overrides)", p.display());
            (text, label, ConfigSource::File(p), true)
        }
        None if selection.provider.is_some() => (
            String::new(),
            "-c overrides".to_owned(),
            ConfigSource::Flags,
            true,
        ),
        None => (
            format!(
                "[act]\nprovider = \"{LOCAL_PROVIDER}\"\nmodel = \"{LOCAL_MODEL_ID}\"\n[providers.{LOCAL_PROVIDER}]\nbase_url = \"{}\"\n",
                local_model_base_url()
            ),
            "the built-in default (with -c overrides)".to_owned(),
            ConfigSource::BuiltInLocal,
            selection.base_url.is_some() || crate::overrides::sets_base_url(overrides),
        ),
    };
    let mut table: toml::Table = toml::from_str(&text).unwrap_or_default();
    crate::overrides::apply(&mut table, overrides).map_err(|message| ConfigError::Parse {
        file: label.clone(),
        line: 0,
        column: 0,
        message,
    })?;
    let text = toml::to_string(&table).map_err(|e| ConfigError::Parse {
        file: label.clone(),
        line: 0,
        column: 0,
        message: e.to_string(),
    })?;
    let mut config = ApiConfiguration::from_toml(&text, &label, |_| None)?;
    // An override that names another provider for a mode (`act.provider=anthropic`, or
    // `act={provider="anthropic"}`) moves requests off the local default too: read from the
    // configuration it made, not from the override's spelling.
    let elsewhere = [&config.act, &config.plan]
        .iter()
        .any(|m| m.provider.as_deref().is_some_and(|p| p != LOCAL_PROVIDER));
    if read_keys || elsewhere {
        config.read_keys(env);
    }
    if let ConfigSource::File(p) = &source {
        let folder = p.parent().unwrap_or(Path::new(""));
        for endpoint in config.providers.endpoints.values_mut() {
            if let Some(bundle) = endpoint.ca_bundle.as_mut().filter(|b| b.is_relative()) {
                *bundle = folder.join(&*bundle);
            }
        }
    }
    Ok((config, source))
}

/// Checks what the user typed on the command line, once `config` (loaded with `selection`
/// for `mode`) is in effect: an unknown `--provider` is an error naming the nearest id (a
/// configuration file keeps SPEC R3.4's fallback instead), and so is a `--model` that the
/// catalogue lacks and that is one edit away from an id it has, most likely a typo (SPEC
/// R2.3). Any other unknown model id is sent as typed, with the resolver's warning.
///
/// # Errors
///
/// [`ConfigError::UnknownProvider`], [`ConfigError::UnknownModel`].
pub fn check_typed(
    config: &ApiConfiguration,
    mode: Mode,
    selection: &SelectionArgs,
) -> Result<(), ConfigError> {
    check_provider(config, selection)?;
    if selection.model.is_some() {
        check_model(config, mode)?;
    }
    Ok(())
}

fn check_provider(config: &ApiConfiguration, selection: &SelectionArgs) -> Result<(), ConfigError> {
    let Some(typed) = selection.provider.as_deref().map(str::trim) else {
        return Ok(());
    };
    if preset(typed).is_some() {
        return Ok(());
    }
    let known = PRESETS
        .iter()
        .map(|p| p.id)
        .chain(config.catalogue().providers());
    Err(ConfigError::UnknownProvider {
        provider: typed.to_owned(),
        suggestion: closest(known, typed).map(str::to_owned),
    })
}

fn check_model(config: &ApiConfiguration, mode: Mode) -> Result<(), ConfigError> {
    let Ok(resolved) = resolve_mode(config, mode) else {
        // The task reports this problem itself.
        return Ok(());
    };
    if resolved.model_origin != ModelInfoOrigin::Defaults {
        return Ok(());
    }
    let suggestion = config
        .model_table(&resolved.provider_id, resolved.region.as_deref())
        .and_then(|t| suggest(t, &resolved.model_id));
    match suggestion {
        Some(s) => Err(ConfigError::UnknownModel {
            provider: resolved.provider_id,
            model: resolved.model_id,
            suggestion: s.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Applies `--provider`, `--model` and `--base-url` to `mode`'s settings.
pub fn apply_selection(config: &mut ApiConfiguration, mode: Mode, selection: &SelectionArgs) {
    let settings = config.mode_settings_mut(mode);
    if let Some(p) = &selection.provider {
        if settings.provider.as_deref() != Some(p.as_str()) {
            // A different provider: the file's model and model overrides were for the old one.
            settings.model_id = None;
            settings.model_info = None;
        }
        settings.provider = Some(p.clone());
    }
    if let Some(m) = &selection.model {
        settings.model_id = Some(m.clone());
    }
    if let Some(url) = &selection.base_url {
        // The provider in effect after the unknown-id fallback (SPEC R3.4), so the URL is
        // never lost and the key never goes to the default host by surprise.
        let provider = settings
            .provider
            .as_deref()
            .map(str::trim)
            .and_then(switchyard_api::providers::presets::preset)
            .map_or("anthropic", |p| p.id);
        config
            .providers
            .endpoints
            .entry(provider.to_owned())
            .or_default()
            .base_url = Some(url.clone());
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

/// Where the task store is (SPEC R13.1), as the command line gave it: `--store` (or
/// `SWITCHYARD_STORE`), else the configuration file's `store`, else the SQLite file in the data
/// directory (`--data-dir`, see [`data_dir`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct StorePlace<'a> {
    /// `--config` (or `SWITCHYARD_CONFIG`); else the default file when it exists.
    pub config: Option<&'a Path>,
    /// `--data-dir` (or `SWITCHYARD_DATA_DIR`).
    pub data_dir: Option<&'a Path>,
    /// `--store` (or `SWITCHYARD_STORE`).
    pub store: Option<&'a str>,
}

/// A task store location, parsed.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// A SQLite database file.
    Sqlite(PathBuf),
    /// A PostgreSQL server URL (may hold a password: print [`StoreSpec::describe`] only).
    Postgres(String),
}

impl std::fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl StoreSpec {
    /// `text` as written in `--store`, `SWITCHYARD_STORE`, `store =` or `store copy`:
    /// `postgres://…` / `postgresql://…`, or `sqlite:PATH` (a database file, or a directory
    /// holding `switchyard.db`).
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

    /// The location without a password, for messages.
    pub fn describe(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite:{}", path.display()),
            Self::Postgres(url) => switchyard_core::store::redact_url(url),
        }
    }

    /// Opens (creating or migrating) the store.
    pub async fn open(&self) -> Result<Arc<dyn TaskStore>, StoreError> {
        Ok(match self {
            Self::Sqlite(path) => Arc::new(SqliteStore::open_file(path)?),
            Self::Postgres(url) => Arc::new(PgStore::connect(url).await?),
        })
    }
}

/// `text` with anything that may be a password left out.
fn redact_store(text: &str) -> String {
    switchyard_api::StoreUrl::new(text).to_string()
}

/// The configuration file's `store` setting for `place` (`--config`, else the default file
/// when it exists); `None` without a file or setting. A file that does not load is the
/// [`ConfigError`] every command reports for it.
pub fn configured_store(
    place: StorePlace<'_>,
) -> Result<Option<switchyard_api::StoreUrl>, ConfigError> {
    let file = match place.config {
        Some(p) => Some(p.to_owned()),
        None => default_config_path().filter(|p| p.exists()),
    };
    match file {
        // Only the `store` setting is wanted here: no key is read.
        Some(file) => Ok(ApiConfiguration::load(&file, |_| None)?.store),
        None => Ok(None),
    }
}

/// Where the task store is for `place` (see [`StorePlace`]).
pub fn store_spec(place: StorePlace<'_>) -> Result<StoreSpec, String> {
    if place.store.is_some_and(|s| !s.trim().is_empty()) {
        return store_spec_with(place, None);
    }
    let configured = configured_store(place).map_err(|e| e.to_string())?;
    store_spec_with(place, configured.as_ref())
}

/// [`store_spec`] with the configuration file's `store` already read (`configured`, from
/// [`configured_store`]): `--store`, else `configured`, else the SQLite file in the data
/// directory.
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

/// Opens the task store for `place` (see [`store_spec`]); a SQLite file's directory is
/// created (private to the user) when missing.
pub async fn open_store(place: StorePlace<'_>) -> Result<Arc<dyn TaskStore>, String> {
    open_spec(&store_spec(place)?).await
}

/// Opens (creating or migrating) the store `spec`; a SQLite file's directory is created
/// (private to the user) when missing.
pub async fn open_spec(spec: &StoreSpec) -> Result<Arc<dyn TaskStore>, String> {
    if let StoreSpec::Sqlite(path) = spec
        && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
    {
        // Conversations can hold code and secrets pasted by the user: a directory made here
        // is private to the user, as SqliteStore::open makes it.
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(dir)
            .map_err(|e| format!("cannot use the data directory {}: {e}", dir.display()))?;
    }
    spec.open().await.map_err(|e| e.to_string())
}
