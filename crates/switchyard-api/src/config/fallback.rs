//! Failover entries (SPEC R12.1): one entry of a mode's failover chain, `fallbacks` in the file
//! or `--fallback PROVIDER:MODEL` on the command line.

use serde::{Deserialize, Serialize};

/// One entry of a mode's `fallbacks` (SPEC R12.1): any mode setting, plus the endpoint and
/// key variable when they differ from `[providers.ID]`'s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FallbackSettings {
    /// Provider id (`openrouter`, `openai`, …); required.
    pub provider: Option<String>,
    /// Model id; missing → the provider's default model.
    #[serde(rename = "model")]
    pub model_id: Option<String>,
    /// Overrides of the model's info, as a mode's.
    pub model_info: Option<toml::Table>,
    /// As a mode's `reasoning_effort`.
    pub reasoning_effort: Option<String>,
    /// As a mode's `thinking_budget_tokens`.
    pub thinking_budget_tokens: u64,
    /// Base URL for this entry only (else `[providers.ID] base_url`, else the preset's).
    pub base_url: Option<String>,
    /// The environment variable holding this entry's key (else the provider's).
    pub api_key_env: Option<String>,
}

impl FallbackSettings {
    /// `provider:model` as the entry was written (`(default model)` when it names none), as
    /// `--fallback` takes it and messages show it.
    pub fn label(&self) -> String {
        format!(
            "{}:{}",
            self.provider.as_deref().unwrap_or("").trim(),
            self.model_id.as_deref().unwrap_or("(default model)")
        )
    }

    /// Parses `PROVIDER:MODEL` (the `--fallback` flag). The model may itself hold colons
    /// (`ollama:qwen3:8b`); `None` when either part is empty.
    pub fn parse_flag(text: &str) -> Option<Self> {
        let (provider, model) = text.split_once(':')?;
        let (provider, model) = (provider.trim(), model.trim());
        (!provider.is_empty() && !model.is_empty()).then(|| Self {
            provider: Some(provider.to_owned()),
            model_id: Some(model.to_owned()),
            ..Self::default()
        })
    }
}
