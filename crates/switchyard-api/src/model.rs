//! `ModelInfo`, price tiers and the model tables (SPEC R2.2–R2.4).
//!
//! The tables are data: one TOML file per provider under `crates/switchyard-api/models/`,
//! compiled in with `include_str!` and parsed once. Adding a model is a data change.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

/// The context window assumed when a model's is unknown, in tokens (SPEC R2.3, R8.1).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// What we know of a model: limits in tokens, prices in USD per million tokens (SPEC R2.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelInfo {
    /// Maximum output tokens; 0 when unknown (then no limit is sent where the API allows).
    pub max_tokens: u64,
    /// Context window in tokens.
    pub context_window: u64,
    pub supports_images: bool,
    pub supports_prompt_cache: bool,
    /// The model accepts a thinking budget or reasoning effort.
    pub supports_reasoning: bool,
    /// USD per million input tokens (non-cached).
    pub input_price: f64,
    /// USD per million output tokens.
    pub output_price: f64,
    /// USD per million tokens written to the prompt cache.
    pub cache_writes_price: f64,
    /// USD per million tokens read from the prompt cache.
    pub cache_reads_price: f64,
    /// Thinking limits and the output price while thinking, when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_config: Option<ThinkingConfig>,
    /// Prices by context size, ascending by `context_window` (SPEC R9.2).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<PriceTier>,
    /// The temperature to send, when the model needs a specific one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The wire format the model needs when a provider offers several (e.g. `responses`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_format: Option<String>,
    /// Bedrock: the model has a `global.` cross-region inference profile (SPEC R4.8).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub supports_global_endpoint: bool,
    /// Bedrock: the model has a `jp.` cross-region inference profile (Tokyo, Osaka).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub supports_jp_endpoint: bool,
}

impl ModelInfo {
    /// `max_tokens`, or `default` when the model's is unknown (0), in tokens: for APIs that
    /// require a limit (Anthropic Messages, Bedrock Converse).
    pub fn max_tokens_or(&self, default: u64) -> u64 {
        if self.max_tokens > 0 {
            self.max_tokens
        } else {
            default
        }
    }
}

impl Default for ModelInfo {
    /// The sane defaults for a model id we have no data on (SPEC R2.3): 128k context,
    /// unknown max output, images allowed, no caching, no prices.
    fn default() -> Self {
        Self {
            max_tokens: 0,
            context_window: DEFAULT_CONTEXT_WINDOW,
            supports_images: true,
            supports_prompt_cache: false,
            supports_reasoning: false,
            input_price: 0.0,
            output_price: 0.0,
            cache_writes_price: 0.0,
            cache_reads_price: 0.0,
            thinking_config: None,
            tiers: Vec::new(),
            temperature: None,
            api_format: None,
            supports_global_endpoint: false,
            supports_jp_endpoint: false,
        }
    }
}

/// Thinking limits (SPEC R2.2).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ThinkingConfig {
    /// The largest thinking budget the model accepts, in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_budget: Option<u64>,
    /// USD per million output tokens when a thinking budget is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_price: Option<f64>,
}

/// Prices that apply while the prompt is at most `context_window` tokens.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PriceTier {
    pub context_window: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_writes_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_reads_price: Option<f64>,
}

/// One provider's model table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelTable {
    /// The model used when none is configured or the configured id is unknown.
    pub default: String,
    /// Models by id, sorted.
    pub models: BTreeMap<String, ModelInfo>,
}

impl ModelTable {
    /// The default model's id and info.
    pub fn default_model(&self) -> (String, ModelInfo) {
        let info = self.models.get(&self.default).cloned().unwrap_or_default();
        (self.default.clone(), info)
    }
}

/// Every table's source, by provider id: one TOML file per provider under `models/`.
const SOURCES: &[(&str, &str)] = &[
    ("anthropic", include_str!("../models/anthropic.toml")),
    ("asksage", include_str!("../models/asksage.toml")),
    ("baseten", include_str!("../models/baseten.toml")),
    ("bedrock", include_str!("../models/bedrock.toml")),
    ("cerebras", include_str!("../models/cerebras.toml")),
    ("claude-code", include_str!("../models/claude-code.toml")),
    ("deepseek", include_str!("../models/deepseek.toml")),
    ("dify", include_str!("../models/dify.toml")),
    ("doubao", include_str!("../models/doubao.toml")),
    ("fireworks", include_str!("../models/fireworks.toml")),
    ("gemini", include_str!("../models/gemini.toml")),
    ("groq", include_str!("../models/groq.toml")),
    ("minimax", include_str!("../models/minimax.toml")),
    ("mistral", include_str!("../models/mistral.toml")),
    ("moonshot", include_str!("../models/moonshot.toml")),
    ("nebius", include_str!("../models/nebius.toml")),
    ("nousResearch", include_str!("../models/nousResearch.toml")),
    (
        "openai-native",
        include_str!("../models/openai-native.toml"),
    ),
    ("openai-codex", include_str!("../models/openai-codex.toml")),
    ("openrouter", include_str!("../models/openrouter.toml")),
    ("qwen", include_str!("../models/qwen.toml")),
    ("qwen-code", include_str!("../models/qwen-code.toml")),
    ("sambanova", include_str!("../models/sambanova.toml")),
    ("sapaicore", include_str!("../models/sapaicore.toml")),
    ("together", include_str!("../models/together.toml")),
    ("vertex", include_str!("../models/vertex.toml")),
    ("xai", include_str!("../models/xai.toml")),
    ("zai", include_str!("../models/zai.toml")),
];

/// The embedded tables, by provider id. A parse failure is a bug in a data file and is caught
/// by the tests (`every_table_parses`); at run time such a table is treated as absent.
static TABLES: LazyLock<BTreeMap<&'static str, ModelTable>> = LazyLock::new(|| {
    let mut tables = BTreeMap::new();
    for (id, src) in SOURCES {
        match toml::from_str::<ModelTable>(src) {
            Ok(t) => {
                tables.insert(*id, t);
            }
            Err(e) => tracing::error!("model table for {id} is invalid: {e}"),
        }
    }
    tables
});

/// The model table of `provider_id`, if it has one.
pub fn model_table(provider_id: &str) -> Option<&'static ModelTable> {
    TABLES.get(provider_id)
}

/// Every provider id that has a model table.
pub fn providers_with_tables() -> impl Iterator<Item = &'static str> {
    TABLES.keys().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_parses_and_has_its_default() {
        for (provider, src) in SOURCES {
            let t: ModelTable =
                toml::from_str(src).unwrap_or_else(|e| panic!("models/{provider}.toml: {e}"));
            assert!(
                t.models.contains_key(&t.default),
                "default {} missing",
                t.default
            );
            // The table's default is the preset's, so "no model configured" means one model.
            let preset = crate::providers::presets::preset(provider)
                .unwrap_or_else(|| panic!("models/{provider}.toml names no known provider"));
            assert_eq!(preset.default_model, t.default, "{provider}");
            for (id, m) in &t.models {
                assert!(m.context_window > 0, "{provider} {id}");
                assert!(m.max_tokens <= m.context_window, "{provider} {id}");
                assert!(
                    m.input_price >= 0.0 && m.output_price >= 0.0,
                    "{provider} {id}"
                );
                let mut last = 0;
                for tier in &m.tiers {
                    assert!(tier.context_window > last, "{provider} {id}: tiers ascend");
                    last = tier.context_window;
                }
            }
        }
        assert_eq!(providers_with_tables().count(), SOURCES.len());
    }
}
