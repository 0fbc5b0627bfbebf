//! The whole configuration: the TOML file plus the keys and cloud settings of the environment.
//! Spec: R3.1, R3.6, R12.2, R12.3.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::endpoint::ProviderEndpoint;
use super::error::{ConfigError, toml_parse_error};
use super::keys::{ApiKey, ProviderSettings};
use super::mode::{Mode, ModeSettings};
use super::serve::ServeSettings;
use super::store::{LimitsSettings, StoreUrl};
use super::telemetry::TelemetrySettings;
use crate::model::{Catalogue, ModelTable};

/// Everything `build_api_handler` needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiConfiguration {
    pub default_mode: Mode,
    pub plan: ModeSettings,
    pub act: ModeSettings,
    pub providers: ProviderSettings,
    /// The model catalogue models are looked up in; `None` for the built-in one.
    pub catalogue: Option<Arc<Catalogue>>,
    /// Where tasks are kept, for the task layer; `None` for the data directory's SQLite file.
    pub store: Option<StoreUrl>,
    pub limits: LimitsSettings,
    pub serve: ServeSettings,
    pub telemetry: TelemetrySettings,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ConfigFile {
    mode: Option<Mode>,
    act: Option<ModeSettings>,
    plan: Option<ModeSettings>,
    providers: BTreeMap<String, ProviderEndpoint>,
    store: Option<StoreUrl>,
    limits: LimitsSettings,
    serve: ServeSettings,
    telemetry: TelemetrySettings,
}

impl ApiConfiguration {
    /// Parses a configuration file's text; `file` names it in errors, `env` reads key variables.
    pub fn from_toml(
        text: &str,
        file: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let parsed: ConfigFile =
            toml::from_str(text).map_err(|e| toml_parse_error(text, file, &e))?;
        check_limits(&parsed, file)?;
        let act = parsed.act.unwrap_or_default();
        // Without a [plan] section both modes use the same settings, as the reference does
        // when "use different models for plan and act" is off.
        let plan = parsed.plan.unwrap_or_else(|| act.clone());
        let mut config = Self {
            default_mode: parsed.mode.unwrap_or_default(),
            plan,
            act,
            providers: ProviderSettings {
                endpoints: parsed.providers,
                api_keys: BTreeMap::new(),
                env: BTreeMap::new(),
            },
            catalogue: None,
            store: parsed.store,
            limits: parsed.limits,
            serve: parsed.serve,
            telemetry: parsed.telemetry,
        };
        config.read_keys(env);
        Ok(config)
    }

    /// Reads the configuration file at `path`; a relative `ca_bundle` is relative to its folder.
    pub fn load(path: &Path, env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            file: file.clone(),
            message: e.to_string(),
        })?;
        let mut config = Self::from_toml(&text, &file, env)?;
        let folder = path.parent().unwrap_or(Path::new(""));
        for endpoint in config.providers.endpoints.values_mut() {
            if let Some(bundle) = endpoint.ca_bundle.as_mut().filter(|b| b.is_relative()) {
                *bundle = folder.join(&*bundle);
            }
        }
        Ok(config)
    }

    /// Rereads every key variable that any preset or `api_key_env` names, fallbacks and routes
    /// included, and the cloud settings of the environment.
    pub fn read_keys(&mut self, env: impl Fn(&str) -> Option<String>) {
        use crate::providers::presets::{CLOUD_SETTING_VARS, secret_variables};
        let mut vars: Vec<String> = secret_variables().map(str::to_owned).collect();
        vars.extend(
            self.providers
                .endpoints
                .values()
                .filter_map(|e| e.api_key_env.clone()),
        );
        vars.extend(
            self.act
                .fallbacks
                .iter()
                .chain(&self.plan.fallbacks)
                .chain(self.serve.routes.values().flat_map(|r| &r.fallbacks))
                .filter_map(|f| f.api_key_env.clone()),
        );
        vars.extend((self.serve.oidc.iter()).filter_map(|o| o.client_secret_env.clone()));
        for var in CLOUD_SETTING_VARS {
            if let Some(value) = env(var).filter(|v| !v.trim().is_empty()) {
                self.providers
                    .env
                    .insert((*var).to_owned(), value.trim().to_owned());
            }
        }
        for var in vars {
            if let Some(value) = env(&var).filter(|v| !v.trim().is_empty()) {
                self.providers
                    .api_keys
                    .insert(var, ApiKey::new(value.trim()));
            }
        }
    }

    pub fn catalogue(&self) -> &Catalogue {
        self.catalogue
            .as_deref()
            .unwrap_or_else(|| Catalogue::builtin())
    }

    pub fn model_table(&self, provider: &str, region: Option<&str>) -> Option<&ModelTable> {
        match &self.catalogue {
            Some(catalogue) => catalogue.table(provider, region),
            None => Catalogue::builtin_table(provider, region),
        }
    }

    pub fn mode_settings(&self, mode: Mode) -> &ModeSettings {
        match mode {
            Mode::Plan => &self.plan,
            Mode::Act => &self.act,
        }
    }

    /// The settings of `mode`, mutable for command-line overrides.
    pub fn mode_settings_mut(&mut self, mode: Mode) -> &mut ModeSettings {
        match mode {
            Mode::Plan => &mut self.plan,
            Mode::Act => &mut self.act,
        }
    }
}

/// [`ConfigError::Limit`] for a spend cap that is not a positive amount or a rate or
/// connection limit of 0, each of which would stop every request.
fn check_limits(parsed: &ConfigFile, file: &str) -> Result<(), ConfigError> {
    let error = |setting: String, value: String, what: &str| ConfigError::Limit {
        file: file.to_owned(),
        setting,
        value,
        what: what.to_owned(),
    };
    for (name, cap) in [
        ("max_cost_usd", parsed.limits.max_cost_usd),
        ("max_cost_usd_per_day", parsed.limits.max_cost_usd_per_day),
    ] {
        if let Some(usd) = cap.filter(|c| !(c.is_finite() && *c > 0.0)) {
            return Err(error(
                format!("[limits] {name}"),
                usd.to_string(),
                "write a positive amount of US dollars (e.g. 2.50), or leave it out for no cap",
            ));
        }
    }
    for (name, bytes) in [
        (
            "max_tool_arguments_bytes",
            parsed.limits.max_tool_arguments_bytes,
        ),
        ("max_answer_bytes", parsed.limits.max_answer_bytes),
        ("max_line_bytes", parsed.limits.max_line_bytes),
    ] {
        if bytes == Some(0) {
            return Err(error(
                format!("[limits] {name}"),
                "0".to_owned(),
                "write a number of bytes above 0 (e.g. 8388608 for 8 MiB), or leave it out for the default",
            ));
        }
    }
    for (provider, endpoint) in &parsed.providers {
        for (name, limit) in [
            ("requests_per_minute", endpoint.requests_per_minute),
            ("input_tokens_per_minute", endpoint.input_tokens_per_minute),
        ] {
            if limit == Some(0) {
                return Err(error(
                    format!("[providers.{provider}] {name}"),
                    "0".to_owned(),
                    "write at least 1, or leave it out for no limit",
                ));
            }
        }
    }
    parsed.serve.check(file)?;
    parsed.telemetry.check(file)
}

/// An environment of `pairs`, for tests of configurations.
#[cfg(test)]
pub(crate) fn test_env(
    pairs: &'static [(&'static str, &'static str)],
) -> impl Fn(&str) -> Option<String> {
    move |k| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| (*v).to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_env as env;

    #[test]
    fn a_key_written_into_the_file_is_never_echoed_in_the_error() {
        let text = "[act]\nprovider = \"openai\"\napi_key = \"sk-inline-SECRET123\"\n";
        let e = ApiConfiguration::from_toml(text, "c.toml", |_| None)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("SECRET123"), "{e}");
        assert!(
            e.contains("api_key = …") && e.contains("environment variables only"),
            "{e}"
        );
        // A type error on a secret-looking value drops it from toml's own message too.
        let text = "[act]\nmax_tokens = \"sk-ant-SECRET456\"\n";
        let e = ApiConfiguration::from_toml(text, "c.toml", |_| None)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("SECRET456"), "{e}");
        // Ordinary lines are still quoted.
        let text = "[act]\nprovider = 7\n";
        let e = ApiConfiguration::from_toml(text, "c.toml", |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("provider = 7"), "{e}");
    }

    #[test]
    fn limits_that_would_stop_every_request_are_refused() {
        for (text, named) in [
            (
                "[limits]\nmax_cost_usd = -1.0\n",
                "[limits] max_cost_usd = -1",
            ),
            (
                "[limits]\nmax_cost_usd_per_day = 0.0\n",
                "max_cost_usd_per_day = 0",
            ),
            (
                "[providers.openai]\nrequests_per_minute = 0\n",
                "[providers.openai] requests_per_minute = 0",
            ),
        ] {
            let e = ApiConfiguration::from_toml(text, "c.toml", env(&[]))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("c.toml: ") && e.contains(named), "{e}");
        }
        let ok = "[limits]\nmax_cost_usd = 2.5\n[providers.openai]\nrequests_per_minute = 1\n";
        let config = ApiConfiguration::from_toml(ok, "c.toml", env(&[])).unwrap();
        assert_eq!(config.limits.max_cost_usd, Some(2.5));
    }

    #[test]
    fn parse_errors_name_file_line_and_field() {
        let text = "[act]\nprovider = \"anthropic\"\nmodle = \"x\"\n";
        let e = ApiConfiguration::from_toml(text, "/tmp/c.toml", env(&[])).unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("/tmp/c.toml:3:"), "{s}");
        assert!(s.contains("modle"), "{s}");
    }
}
