//! Loading the configuration in effect: the file, the presets alone or the built-in local
//! default, then the `-c` overrides and `--provider`, `--model` and `--base-url`.
//! Spec: R3.4, R3.6.

use std::path::{Path, PathBuf};

use switchyard_api::{ApiConfiguration, ConfigError, Mode};

use super::local::{LOCAL_MODEL_ID, LOCAL_PROVIDER, built_in_local, local_model_base_url};
use super::paths::{default_config_path, user_catalogue};
use crate::cli::SelectionArgs;

/// Where the configuration in effect came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    File(PathBuf),
    /// No file exists and no provider was named: the local model server, no key needed.
    BuiltInLocal,
    /// No file exists; a provider was named on the command line.
    Flags,
}

impl ConfigSource {
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

/// Loads the configuration and applies `selection` to `mode`; an `explicit` file must exist.
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

/// The sources of `load_plain` as TOML text with the `-c` overrides applied before parsing, so
/// any field can be set and a wrong one is reported like the file's.
fn load_overridden(
    explicit: Option<&Path>,
    selection: &SelectionArgs,
    overrides: &[crate::overrides::Override],
    env: impl Fn(&str) -> Option<String> + Copy,
) -> Result<(ApiConfiguration, ConfigSource), ConfigError> {
    let base = overridden_base(explicit, selection, overrides)?;
    let label = base.label;
    let mut table: toml::Table = toml::from_str(&base.text).unwrap_or_default();
    let base_table = table.clone();
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
    let mut config = ApiConfiguration::from_toml(&text, &label, |_| None)
        .map_err(|e| blame_override(e, &base_table, overrides))?;
    // An override giving a mode another provider moves requests off the local default too: read
    // the configuration it made, not the override's spelling.
    let elsewhere = [&config.act, &config.plan]
        .iter()
        .any(|m| m.provider.as_deref().is_some_and(|p| p != LOCAL_PROVIDER));
    if base.read_keys || elsewhere {
        config.read_keys(env);
    }
    if let ConfigSource::File(p) = &base.source {
        resolve_ca_bundles(&mut config, p);
    }
    Ok((config, base.source))
}

/// `e` blamed on the `-c` that caused it, not on generated text the user never wrote.
fn blame_override(
    e: ConfigError,
    base: &toml::Table,
    overrides: &[crate::overrides::Override],
) -> ConfigError {
    let valid = |t: &toml::Table| {
        toml::to_string(t)
            .is_ok_and(|text| ApiConfiguration::from_toml(&text, "", |_| None).is_ok())
    };
    let Some(o) = crate::overrides::culprit(base, overrides, valid) else {
        return e;
    };
    let message = match &e {
        // toml's message, without the line of generated text it quotes.
        ConfigError::Parse { message, .. } => {
            message.split(" (in `").next().unwrap_or(message).to_owned()
        }
        other => other.to_string(),
    };
    ConfigError::bad_override(&o.key(), &o.shown_value(), &message)
}

struct OverriddenBase {
    text: String,
    label: String,
    source: ConfigSource,
    read_keys: bool,
}

/// The file after checking its own errors first, else nothing with `--provider`, else the
/// built-in local default as TOML.
fn overridden_base(
    explicit: Option<&Path>,
    selection: &SelectionArgs,
    overrides: &[crate::overrides::Override],
) -> Result<OverriddenBase, ConfigError> {
    let file = explicit
        .map(Path::to_owned)
        .or_else(|| default_config_path().filter(|p| p.exists()));
    Ok(match file {
        Some(p) => {
            let text = std::fs::read_to_string(&p).map_err(|e| ConfigError::Read {
                file: p.display().to_string(),
                message: e.to_string(),
            })?;
            ApiConfiguration::from_toml(&text, &p.display().to_string(), |_| None)?;
            OverriddenBase {
                text,
                label: format!("{} (with -c overrides)", p.display()),
                source: ConfigSource::File(p),
                read_keys: true,
            }
        }
        None if selection.provider.is_some() => OverriddenBase {
            text: String::new(),
            label: "-c overrides".to_owned(),
            source: ConfigSource::Flags,
            read_keys: true,
        },
        None => OverriddenBase {
            text: format!(
                "[act]\nprovider = \"{LOCAL_PROVIDER}\"\nmodel = \"{LOCAL_MODEL_ID}\"\n[providers.{LOCAL_PROVIDER}]\nbase_url = \"{}\"\n",
                local_model_base_url()
            ),
            label: "the built-in default (with -c overrides)".to_owned(),
            source: ConfigSource::BuiltInLocal,
            read_keys: selection.base_url.is_some() || crate::overrides::sets_base_url(overrides),
        },
    })
}

/// A relative `ca_bundle` is relative to the configuration file's folder.
fn resolve_ca_bundles(config: &mut ApiConfiguration, file: &Path) {
    let folder = file.parent().unwrap_or(Path::new(""));
    for endpoint in config.providers.endpoints.values_mut() {
        if let Some(bundle) = endpoint.ca_bundle.as_mut().filter(|b| b.is_relative()) {
            *bundle = folder.join(&*bundle);
        }
    }
}

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
        // The provider after the unknown-id fallback, so the URL is never lost and the key
        // never goes to the default host by surprise.
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
