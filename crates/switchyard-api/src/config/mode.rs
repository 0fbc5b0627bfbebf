//! The plan and act modes, and what each chooses.
//! Spec: R3.1.

use serde::{Deserialize, Serialize};

use super::fallback::FallbackSettings;

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

impl FallbackSettings {
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
