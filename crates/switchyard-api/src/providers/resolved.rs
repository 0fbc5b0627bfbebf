//! What a resolved mode holds: what a handler is built from, and whether its key is needed and set.
//! Spec: R3.2, R3.3, R3.6.

use std::collections::BTreeMap;

use crate::config::{ApiKey, ConfigError, HttpSettings, Mode, ProviderEndpoint, ReasoningEffort};
use crate::handler::Deadlines;
use crate::model::ModelInfo;
use crate::providers::cloud::CloudSettings;
use crate::providers::endpoint::is_loopback;
use crate::providers::model_choice::ModelInfoOrigin;
use crate::providers::presets::ProviderPreset;

/// A mode's choices resolved: what a handler is built from and `switchyard config check` prints.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedMode {
    pub mode: Mode,
    /// The provider id in effect, after the Anthropic fallback.
    pub provider_id: String,
    pub preset: &'static ProviderPreset,
    /// The model id sent, as typed, else the catalogue's default for the provider.
    pub model_id: String,
    /// What is known of the model, `[MODE.model_info]` overrides applied.
    pub model_info: ModelInfo,
    /// Where `model_info` came from before any overrides.
    pub model_origin: ModelInfoOrigin,
    /// The catalogue's ids nearest to `model_id`, named when the provider says it has no such
    /// model.
    pub nearest_models: Vec<String>,
    /// `international` or `china` for the providers with regional endpoints.
    pub region: Option<String>,
    /// Base URL without a trailing slash.
    pub base_url: String,
    /// The variable the key is read from, and the key when set.
    pub api_key_env: String,
    pub api_key: Option<ApiKey>,
    pub headers: BTreeMap<String, String>,
    /// Region, project, profile and credentials for Bedrock and Vertex.
    pub cloud: CloudSettings,
    /// The HTTP client's connect timeout, proxy and CA bundle.
    pub http: HttpSettings,
    /// The provider's first-content and idle deadlines, 120 s and 300 s when unset.
    pub deadlines: Deadlines,
    pub reasoning_effort: Option<ReasoningEffort>,
    /// The thinking budget in tokens, already clipped.
    pub thinking_budget_tokens: u64,
    /// The provider's own settings, such as OpenRouter routing or the `claude` executable.
    pub options: ProviderOptions,
    /// Warnings and notes for the user, such as an unknown model or a clipped budget.
    pub notices: Vec<String>,
}

/// Settings of `[providers.ID]` that only some providers read, trimmed; none is secret.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderOptions {
    /// The credentials file of `qwen-code` and `openai-codex`.
    pub credentials_file: Option<String>,
    /// An OAuth token endpoint: SAP AI Core's, or an override for `qwen-code` and `openai-codex`.
    pub token_url: Option<String>,
    /// SAP AI Core's deployment id.
    pub deployment_id: Option<String>,
    /// SAP AI Core's resource group.
    pub resource_group: Option<String>,
    /// OpenRouter's `provider.sort`.
    pub provider_sorting: Option<String>,
    /// OpenRouter's `parallel_tool_calls`; `None` is the reference's default, true.
    pub parallel_tool_calls: Option<bool>,
    /// AIhubmix's `APP-Code`.
    pub app_code: Option<String>,
    /// The `claude` executable.
    pub command: Option<String>,
}

impl ProviderOptions {
    /// The options of `endpoint`, trimmed, empty ones unset, a token URL without a trailing slash.
    pub(crate) fn from_endpoint(endpoint: &ProviderEndpoint) -> Self {
        let text = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        Self {
            credentials_file: text(&endpoint.credentials_file),
            token_url: text(&endpoint.token_url).map(|u| u.trim_end_matches('/').to_owned()),
            deployment_id: text(&endpoint.deployment_id),
            resource_group: text(&endpoint.resource_group),
            provider_sorting: text(&endpoint.provider_sorting),
            parallel_tool_calls: endpoint.parallel_tool_calls,
            app_code: text(&endpoint.app_code),
            command: text(&endpoint.command),
        }
    }
}

impl ResolvedMode {
    /// The model id, info and thinking budget a handler built from this reports.
    pub fn handler_model(&self) -> crate::handler::ApiHandlerModel {
        crate::handler::ApiHandlerModel {
            id: self.model_id.clone(),
            info: self.model_info.clone(),
            thinking_budget_tokens: self.thinking_budget_tokens,
        }
    }

    /// Whether a key is needed: the provider requires one and the base URL is not on this machine.
    pub fn needs_key(&self) -> bool {
        self.preset.key_required && !is_loopback(&self.base_url)
    }

    /// Fails with `MissingApiKey` naming the variable when a needed key is not set.
    pub fn check_key(&self) -> Result<(), ConfigError> {
        if self.api_key.is_none() && self.needs_key() {
            return Err(ConfigError::MissingApiKey {
                provider: self.provider_id.clone(),
                var: self.api_key_env.clone(),
            });
        }
        Ok(())
    }
}
