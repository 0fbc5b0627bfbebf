//! One entry of a mode's failover chain: `fallbacks` in the file, or `--fallback` on the
//! command line.
//! Spec: R12.1.

use serde::{Deserialize, Serialize};

/// One entry of a mode's `fallbacks`: any mode setting, plus the endpoint and key variable
/// when they differ from the provider's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FallbackSettings {
    pub provider: Option<String>,
    #[serde(rename = "model")]
    pub model_id: Option<String>,
    pub model_info: Option<toml::Table>,
    pub reasoning_effort: Option<String>,
    pub thinking_budget_tokens: u64,
    pub base_url: Option<String>,
    /// The environment variable holding this entry's key, else the provider's.
    pub api_key_env: Option<String>,
}

impl FallbackSettings {
    /// `provider:model` as the entry was written, as `--fallback` takes it and messages show it.
    pub fn label(&self) -> String {
        format!(
            "{}:{}",
            self.provider.as_deref().unwrap_or("").trim(),
            self.model_id.as_deref().unwrap_or("(default model)")
        )
    }

    /// Parses the `--fallback` flag's `PROVIDER:MODEL[@BASE_URL]`. Models hold `@` too, so only an
    /// `@` before `http://` or `https://` starts a base URL.
    pub fn parse_flag(text: &str) -> Option<Self> {
        let (provider, rest) = text.split_once(':')?;
        let at = ["@http://", "@https://"]
            .iter()
            .filter_map(|p| rest.find(p))
            .min();
        let (model, base_url) = match at {
            Some(at) => (&rest[..at], Some(rest[at + 1..].trim())),
            None => (rest, None),
        };
        let (provider, model) = (provider.trim(), model.trim());
        let url_ok = base_url.is_none_or(|u| {
            let host = u.split_once("://").map_or("", |(_, host)| host);
            !host.is_empty()
        });
        (!provider.is_empty() && !model.is_empty() && url_ok).then(|| Self {
            provider: Some(provider.to_owned()),
            model_id: Some(model.to_owned()),
            base_url: base_url.map(str::to_owned),
            ..Self::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::FallbackSettings;

    #[test]
    fn a_fallback_flag_may_carry_a_base_url_after_the_model() {
        let f = FallbackSettings::parse_flag("openai:qwen2.5@http://127.0.0.1:8080/v1").unwrap();
        assert_eq!(f.provider.as_deref(), Some("openai"));
        assert_eq!(f.model_id.as_deref(), Some("qwen2.5"));
        assert_eq!(f.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
        let f = FallbackSettings::parse_flag("vertex:claude-sonnet-4@20250514").unwrap();
        assert_eq!(f.model_id.as_deref(), Some("claude-sonnet-4@20250514"));
        assert_eq!(f.base_url, None);
        let f = FallbackSettings::parse_flag("ollama:qwen3:8b@https://h.example").unwrap();
        assert_eq!(f.model_id.as_deref(), Some("qwen3:8b"));
        assert_eq!(f.base_url.as_deref(), Some("https://h.example"));
        assert!(FallbackSettings::parse_flag("openai:m@https://").is_none());
        assert!(FallbackSettings::parse_flag("openai:@https://h").is_none());
    }
}
