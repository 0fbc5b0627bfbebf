//! The plan and act modes, what each chooses, and the failover entries tried after it.
//! Spec: R3.1, R12.1.

use serde::{Deserialize, Serialize};

/// The task's mode, each with its own provider and model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Plan,
    #[default]
    Act,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Act => "act",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "plan" => Ok(Self::Plan),
            "act" => Ok(Self::Act),
            other => Err(format!("unknown mode `{other}`: use `plan` or `act`")),
        }
    }
}

/// How hard a reasoning model thinks; unknown values read as `medium`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    None,
    Low,
    #[default]
    Medium,
    High,
    Xhigh,
}

impl ReasoningEffort {
    pub fn parse_lenient(s: &str) -> Self {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Self::None,
            "low" => Self::Low,
            "high" => Self::High,
            "xhigh" => Self::Xhigh,
            _ => Self::Medium,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
        }
    }
}

impl<'de> Deserialize<'de> for ReasoningEffort {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Self::parse_lenient(&s))
    }
}

/// One mode's choices.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModeSettings {
    /// Provider id; missing or unknown reads as Anthropic.
    pub provider: Option<String>,
    #[serde(rename = "model")]
    pub model_id: Option<String>,
    pub model_info: Option<toml::Table>,
    /// `none|low|medium|high|xhigh`; anything else reads as `medium`, with a warning.
    pub reasoning_effort: Option<String>,
    /// Thinking budget in tokens; 0 disables extended thinking.
    pub thinking_budget_tokens: u64,
    /// The failover chain, tried in order when this mode's provider fails before any content.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<FallbackSettings>,
}

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

    /// The entry as mode settings, without fallbacks of its own.
    pub fn mode_settings(&self) -> ModeSettings {
        ModeSettings {
            provider: self.provider.clone(),
            model_id: self.model_id.clone(),
            model_info: self.model_info.clone(),
            reasoning_effort: self.reasoning_effort.clone(),
            thinking_budget_tokens: self.thinking_budget_tokens,
            fallbacks: Vec::new(),
        }
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
