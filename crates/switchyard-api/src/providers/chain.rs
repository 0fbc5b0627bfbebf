//! A mode's failover chain: its own provider and model, then each of its `fallbacks`, resolved and
//! built as a mode is.
//! Spec: R12.1.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::build::{handler_for, resolve_checked};
use super::presets::preset;
use crate::config::{ApiConfiguration, ConfigError, FallbackSettings, Mode};
use crate::error::ErrorKind;
use crate::handler::ApiHandler;

/// Whether a failure of `kind` before any content moves the request to the next entry: the
/// provider's limits and outages, and the entry's auth, spend-limit and entitlement failures.
pub fn fails_over(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::RateLimited
            | ErrorKind::Overloaded
            | ErrorKind::QuotaExceeded
            | ErrorKind::Server
            | ErrorKind::Timeout
            | ErrorKind::Network
            | ErrorKind::Auth
            | ErrorKind::SpendLimit
            | ErrorKind::Entitlement
    )
}

/// One entry of a failover chain, ready to send.
#[derive(Clone)]
pub struct ChainEntry {
    pub handler: Arc<dyn ApiHandler>,
    pub provider_id: String,
    /// The model id as typed, or the provider's default.
    pub model_id: String,
    pub base_url: String,
    /// The rate-limit state's key, `provider@base_url#fingerprint`, the fingerprint being 12 hex
    /// digits of the key's SHA-256 or `none`: two keys get separate windows, and no key is stored.
    /// Spec: R12.3.
    pub rate_key: String,
    /// `[providers.ID] requests_per_minute`.
    pub requests_per_minute: Option<u64>,
    /// `[providers.ID] input_tokens_per_minute`.
    pub input_tokens_per_minute: Option<u64>,
}

impl std::fmt::Debug for ChainEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainEntry")
            .field("provider_id", &self.provider_id)
            .field("model_id", &self.model_id)
            .field("base_url", &self.base_url)
            .field("rate_key", &self.rate_key)
            .finish_non_exhaustive()
    }
}

/// Builds `mode`'s chain: its own entry, then its `fallbacks` in order, each resolved with its
/// settings as the mode's and its `base_url` and `api_key_env` over its provider's section. A
/// fallback that cannot be built is left out with a warning saying what to set, so a working mode
/// still runs.
pub fn build_failover_chain(
    config: &ApiConfiguration,
    mode: Mode,
) -> Result<Vec<ChainEntry>, ConfigError> {
    let mut chain = vec![entry(config, mode)?];
    for fallback in &config.mode_settings(mode).fallbacks {
        match fallback_entry(config, mode, fallback) {
            Ok(entry) => chain.push(entry),
            Err(why) => tracing::warn!(
                "the fallback {} is left out of the chain: {why}",
                fallback.label()
            ),
        }
    }
    Ok(chain)
}

/// What keeps each of `mode`'s fallbacks out of its chain, for `switchyard config check`.
pub fn failover_problems(config: &ApiConfiguration, mode: Mode) -> Vec<String> {
    config
        .mode_settings(mode)
        .fallbacks
        .iter()
        .filter_map(|f| {
            fallback_entry(config, mode, f)
                .err()
                .map(|why| format!("the fallback {} is left out: {why}", f.label()))
        })
        .collect()
}

/// One fallback resolved against a copy of `config`. An id that is no provider is refused here: a
/// fallback that silently became the default provider would spend where the user did not ask.
fn fallback_entry(
    config: &ApiConfiguration,
    mode: Mode,
    fallback: &FallbackSettings,
) -> Result<ChainEntry, String> {
    let provider = fallback.provider.as_deref().unwrap_or("").trim().to_owned();
    if preset(&provider).is_none() {
        return Err(format!(
            "`{provider}` is not a provider id; `switchyard models` lists them"
        ));
    }
    let mut entry_config = config.clone();
    *entry_config.mode_settings_mut(mode) = fallback.mode_settings();
    let endpoint = entry_config
        .providers
        .endpoints
        .entry(provider)
        .or_default();
    if let Some(url) = &fallback.base_url {
        endpoint.base_url = Some(url.clone());
    }
    if let Some(var) = &fallback.api_key_env {
        endpoint.api_key_env = Some(var.clone());
    }
    entry(&entry_config, mode).map_err(|e| e.to_string())
}

fn entry(config: &ApiConfiguration, mode: Mode) -> Result<ChainEntry, ConfigError> {
    let resolved = resolve_checked(config, mode)?;
    let endpoint = config
        .providers
        .endpoints
        .get(&resolved.provider_id)
        .cloned()
        .unwrap_or_default();
    let fingerprint = match &resolved.api_key {
        Some(key) => {
            let digest = Sha256::digest(key.expose().as_bytes());
            digest[..6].iter().map(|b| format!("{b:02x}")).collect()
        }
        None => "none".to_owned(),
    };
    let (provider_id, model_id, base_url) = (
        resolved.provider_id.clone(),
        resolved.model_id.clone(),
        resolved.base_url.clone(),
    );
    Ok(ChainEntry {
        handler: Arc::from(handler_for(resolved)?),
        rate_key: format!("{provider_id}@{base_url}#{fingerprint}"),
        provider_id,
        model_id,
        base_url,
        requests_per_minute: endpoint.requests_per_minute,
        input_tokens_per_minute: endpoint.input_tokens_per_minute,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_env;

    #[test]
    fn fallbacks_take_their_own_endpoint_key_and_the_providers_limits() {
        let text = r#"
[act]
provider = "anthropic"
model = "claude-sonnet-4-5"
fallbacks = [
  { provider = "openrouter", model = "anthropic/claude-sonnet-4.5" },
  { provider = "openai", model = "my-model", base_url = "http://127.0.0.1:8089/v1", api_key_env = "LOCAL_KEY" },
]
[providers.anthropic]
requests_per_minute = 2
input_tokens_per_minute = 1000
"#;
        let config = ApiConfiguration::from_toml(
            text,
            "c.toml",
            test_env(&[
                ("ANTHROPIC_API_KEY", "sk-ant-one"),
                ("OPENROUTER_API_KEY", "sk-or-two"),
                ("LOCAL_KEY", "sk-local-three"),
            ]),
        )
        .unwrap();
        let chain = build_failover_chain(&config, Mode::Act).unwrap();
        let ids: Vec<_> = chain
            .iter()
            .map(|e| format!("{}:{}", e.provider_id, e.model_id))
            .collect();
        assert_eq!(
            ids,
            [
                "anthropic:claude-sonnet-4-5",
                "openrouter:anthropic/claude-sonnet-4.5",
                "openai:my-model"
            ]
        );
        assert_eq!(chain[0].requests_per_minute, Some(2));
        assert_eq!(chain[0].input_tokens_per_minute, Some(1000));
        assert_eq!(chain[1].requests_per_minute, None);
        assert_eq!(chain[2].base_url, "http://127.0.0.1:8089/v1");
        assert_eq!(chain[2].handler.get_model().id, "my-model");
        for e in &chain {
            assert!(!e.rate_key.contains("sk-"), "{}", e.rate_key);
            assert!(!format!("{e:?}").contains("sk-"));
        }
        assert!(
            chain[2]
                .rate_key
                .starts_with("openai@http://127.0.0.1:8089/v1#")
        );
        // A fallback whose key is not set is left out (with a warning); the mode's own
        // entry and the other fallbacks still run.
        let chain = build_failover_chain(
            &ApiConfiguration::from_toml(
                text,
                "c.toml",
                test_env(&[
                    ("ANTHROPIC_API_KEY", "sk-ant-one"),
                    ("LOCAL_KEY", "sk-local-three"),
                ]),
            )
            .unwrap(),
            Mode::Act,
        )
        .unwrap();
        let ids: Vec<_> = chain.iter().map(|e| e.provider_id.as_str()).collect();
        assert_eq!(ids, ["anthropic", "openai"]);
        // The mode's own missing key is still an error that names the variable.
        let e = build_failover_chain(
            &ApiConfiguration::from_toml(
                text,
                "c.toml",
                test_env(&[("OPENROUTER_API_KEY", "sk-or-two")]),
            )
            .unwrap(),
            Mode::Act,
        )
        .unwrap_err();
        assert!(e.to_string().contains("ANTHROPIC_API_KEY"), "{e}");
        // What config check reports: an id that is no provider (the `openai` entry needs no
        // key for its local base URL, so it stays).
        let typo = text.replace("\"openrouter\"", "\"opnrouter\"");
        let config = ApiConfiguration::from_toml(
            &typo,
            "c.toml",
            test_env(&[("ANTHROPIC_API_KEY", "sk-ant-one")]),
        )
        .unwrap();
        let problems = failover_problems(&config, Mode::Act);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("`opnrouter` is not a provider id"),
            "{problems:?}"
        );
        let chain = build_failover_chain(&config, Mode::Act).unwrap();
        let ids: Vec<_> = chain.iter().map(|e| e.provider_id.as_str()).collect();
        assert_eq!(ids, ["anthropic", "openai"]);
    }

    #[test]
    fn the_flag_form_is_provider_colon_model() {
        let f = crate::config::FallbackSettings::parse_flag("ollama:qwen3:8b").unwrap();
        assert_eq!(f.provider.as_deref(), Some("ollama"));
        assert_eq!(f.model_id.as_deref(), Some("qwen3:8b"));
        assert!(crate::config::FallbackSettings::parse_flag("openai").is_none());
        assert!(crate::config::FallbackSettings::parse_flag(":m").is_none());
    }
}
