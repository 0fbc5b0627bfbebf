//! One model's entry: what Switchyard knows of a model, and the checks serde cannot make.
//! Spec: R2.2, R2.3, R9.2.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The context window assumed when a model's is unknown, in tokens.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

pub const API_FORMATS: &[&str] = &[
    "anthropic",
    "gemini",
    "openai_chat",
    "r1",
    "responses",
    "responses_websocket",
];

/// What we know of a model: limits in tokens, prices in USD per million tokens. A price of
/// `None` is unknown, so a request's cost is unknown too, never $0; an unknown cache price
/// bills cache tokens at $0, as the reference does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Maximum output tokens; 0 when unknown, and then APIs that require a limit get a default.
    pub max_tokens: u64,
    pub context_window: u64,
    pub supports_images: bool,
    pub supports_prompt_cache: bool,
    pub supports_reasoning: bool,
    /// The model accepts a reasoning effort, as OpenAI's GPT-5 family does.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub supports_reasoning_effort: bool,
    #[serde(skip_serializing_if = "is_true")]
    pub supports_streaming: bool,
    #[serde(skip_serializing_if = "is_true")]
    pub supports_tools: bool,
    /// USD per million non-cached input tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_writes_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_reads_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_config: Option<ThinkingConfig>,
    /// Prices by prompt size, in any order: the cost takes the smallest tier the prompt fits.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<PriceTier>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The wire format the model needs when a provider offers several, one of [`API_FORMATS`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_format: Option<String>,
    /// The role the system prompt is sent with when it is not `system`, such as `developer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_role: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Bedrock: the model has a `global.` inference profile; Vertex: it is served at `global`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub supports_global_endpoint: bool,
    /// Bedrock: the model has a `jp.` cross-region inference profile.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub supports_jp_endpoint: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

impl ModelInfo {
    /// `max_tokens`, or `default` when the model's is unknown, for APIs that require a limit.
    pub fn max_tokens_or(&self, default: u64) -> u64 {
        if self.max_tokens > 0 {
            self.max_tokens
        } else {
            default
        }
    }

    pub fn uses_responses_api(&self) -> bool {
        matches!(
            self.api_format.as_deref(),
            Some("responses" | "responses_websocket")
        )
    }

    pub fn has_prices(&self) -> bool {
        self.input_price.is_some() && self.output_price.is_some()
    }

    /// Checks what serde cannot: `api_format` is one of [`API_FORMATS`], prices are not
    /// negative, and the context window is not 0. Returns the offending field and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if let Some(f) = self
            .api_format
            .as_deref()
            .filter(|f| !API_FORMATS.contains(f))
        {
            return Err((
                "api_format",
                format!("`{f}` is not one of {}", API_FORMATS.join(", ")),
            ));
        }
        if self.context_window == 0 {
            return Err(("context_window", "must be more than 0 tokens".to_owned()));
        }
        let prices = [
            ("input_price", self.input_price),
            ("output_price", self.output_price),
            ("cache_writes_price", self.cache_writes_price),
            ("cache_reads_price", self.cache_reads_price),
        ];
        let tier_prices = self.tiers.iter().flat_map(|t| {
            [
                ("tiers.input_price", t.input_price),
                ("tiers.output_price", t.output_price),
                ("tiers.cache_writes_price", t.cache_writes_price),
                ("tiers.cache_reads_price", t.cache_reads_price),
            ]
        });
        let thinking = [(
            "thinking_config.output_price",
            self.thinking_config.as_ref().and_then(|t| t.output_price),
        )];
        for (field, price) in prices.into_iter().chain(tier_prices).chain(thinking) {
            if let Some(p) = price.filter(|p| !p.is_finite() || *p < 0.0) {
                return Err((
                    field,
                    format!("{p} is not a price (USD per million tokens, 0 or more)"),
                ));
            }
        }
        Ok(())
    }
}

impl Default for ModelInfo {
    /// The defaults for a model id we have no data on: 128k context, nothing else known.
    fn default() -> Self {
        Self {
            name: None,
            max_tokens: 0,
            context_window: DEFAULT_CONTEXT_WINDOW,
            supports_images: true,
            supports_prompt_cache: false,
            supports_reasoning: false,
            supports_reasoning_effort: false,
            supports_streaming: true,
            supports_tools: true,
            input_price: None,
            output_price: None,
            cache_writes_price: None,
            cache_reads_price: None,
            thinking_config: None,
            tiers: Vec::new(),
            temperature: None,
            api_format: None,
            system_role: None,
            description: None,
            supports_global_endpoint: false,
            supports_jp_endpoint: false,
        }
    }
}

/// Thinking limits, as the reference's `thinkingConfig`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_budget: Option<u64>,
    /// USD per million output tokens when a thinking budget is set, in place of `output_price`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_price: Option<f64>,
    /// Gemini 3: the `thinkingLevel` sent by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gemini_thinking_level: Option<String>,
    /// Gemini 3: the model takes a `thinkingLevel` instead of a budget.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub supports_thinking_level: bool,
}

/// Prices that apply while the prompt is at most `context_window` tokens.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PriceTier {
    /// The largest prompt this tier prices, in tokens; `"Infinity"` in data files is `u64::MAX`.
    #[serde(
        serialize_with = "serialize_tier_bound",
        deserialize_with = "deserialize_tier_bound"
    )]
    pub context_window: u64,
    /// USD per million tokens; `None` takes the model's own price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_writes_price: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_reads_price: Option<f64>,
}

fn serialize_tier_bound<S: Serializer>(bound: &u64, s: S) -> Result<S::Ok, S::Error> {
    match i64::try_from(*bound) {
        Ok(n) if *bound != u64::MAX => s.serialize_i64(n),
        _ => s.serialize_str("Infinity"),
    }
}

fn deserialize_tier_bound<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Bound {
        Tokens(u64),
        Text(String),
    }
    match Bound::deserialize(d)? {
        Bound::Tokens(n) => Ok(n),
        Bound::Text(s) if s == "Infinity" => Ok(u64::MAX),
        Bound::Text(s) => Err(serde::de::Error::custom(format!(
            "`{s}` is not a tier bound: write a number of tokens or \"Infinity\""
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tier_bounds_read_and_write_infinity() {
        let info: ModelInfo = toml::from_str(
            "tiers = [{ context_window = 200000, input_price = 1.0 }, { context_window = \"Infinity\", input_price = 2.0 }]",
        )
        .unwrap();
        assert_eq!(info.tiers[1].context_window, u64::MAX);
        let table = toml::Table::try_from(&info).unwrap();
        let back: ModelInfo = toml::Value::Table(table).try_into().unwrap();
        assert_eq!(back, info);
        let bad = toml::from_str::<ModelInfo>("tiers = [{ context_window = \"lots\" }]");
        assert!(bad.unwrap_err().to_string().contains("Infinity"));
    }

    #[test]
    fn validation_names_the_field() {
        let info = ModelInfo {
            api_format: Some("websocket".into()),
            ..ModelInfo::default()
        };
        assert_eq!(info.validate().unwrap_err().0, "api_format");
        let info = ModelInfo {
            output_price: Some(-1.0),
            ..ModelInfo::default()
        };
        assert_eq!(info.validate().unwrap_err().0, "output_price");
        assert!(ModelInfo::default().validate().is_ok());
    }
}
