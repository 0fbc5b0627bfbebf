//! `sapaicore`: models deployed on SAP AI Core, called at their deployments' inference URLs with a
//! client-credentials token, each model family with its own path, body and stream. SAP bills in
//! capacity units, not tokens, so no cost is reported.
//! Spec: R4.2, R1.3.

mod body;
mod route;
pub(crate) mod stream;

use std::sync::Arc;

use serde_json::Value;

use crate::auth::sap::{SapAuth, ServiceKey};
use crate::config::ConfigError;
use crate::error::{ApiError, ErrorKind};
use crate::providers::anthropic::AnthropicParser;
use crate::providers::gemini::GeminiParser;
use crate::providers::openai_chat::ChatParser;
use crate::providers::presets::ChatDialect;
use crate::providers::provider::{Prompt, Provider, http_client};
use crate::providers::resolve::ResolvedMode;
use crate::providers::routed::FamilyParser;
use crate::providers::think_tags::ThinkTags;
use crate::transport::{PendingRequest, WireRequest};
use body::path_and_body;
use route::{Route, route};
use stream::{CohereParser, ConverseParser};

pub(crate) struct SapAiCore {
    auth: Arc<SapAuth>,
}

impl SapAiCore {
    /// Fills in the base URL from the service key unless configured; makes no request.
    pub(crate) fn new(mode: &mut ResolvedMode) -> Result<Self, ConfigError> {
        let Some(key) = mode.api_key.as_ref() else {
            return Err(ConfigError::MissingApiKey {
                provider: mode.provider_id.clone(),
                var: mode.api_key_env.clone(),
            });
        };
        let key = ServiceKey::parse(key, &mode.api_key_env)?;
        if !mode.cloud.base_url_overridden {
            mode.base_url.clone_from(&key.ai_api_url);
        }
        if !(mode.base_url.starts_with("http://") || mode.base_url.starts_with("https://")) {
            return Err(ConfigError::BaseUrl {
                provider: mode.provider_id.clone(),
                url: mode.base_url.clone(),
            });
        }
        let token_url = mode.options.token_url.clone();
        let client = http_client(mode, token_url.as_deref().unwrap_or(&key.auth_url))?;
        Ok(Self {
            auth: Arc::new(SapAuth::new(key, token_url.as_deref(), client)),
        })
    }
}

impl Provider for SapAiCore {
    type Parser = FamilyParser;

    /// The body and the path below the deployment; [`Provider::authorize`] adds the rest.
    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        match route(&mode.model_id) {
            Some(route) => {
                let (path, body) = path_and_body(route, mode, prompt);
                WireRequest::sse(path, &body)
            }
            // Reported by `authorize`, before anything is sent.
            None => WireRequest::sse(String::new(), &Value::Null),
        }
    }

    fn parser(&self, mode: &ResolvedMode) -> FamilyParser {
        match route(&mode.model_id) {
            Some(Route::Converse) | None => FamilyParser::Converse(ConverseParser::default()),
            Some(Route::Invoke) => FamilyParser::Anthropic(AnthropicParser::default()),
            Some(Route::OpenAi | Route::Hosted) => {
                FamilyParser::Chat(ChatParser::new(ChatDialect::Generic, ThinkTags::Opening))
            }
            Some(Route::Cohere) => FamilyParser::Cohere(CohereParser::default()),
            Some(Route::Gemini) => FamilyParser::Gemini(GeminiParser::default()),
        }
    }

    fn authorize(&self, mode: &ResolvedMode, mut request: WireRequest) -> PendingRequest {
        let auth = Arc::clone(&self.auth);
        let base = mode.base_url.clone();
        let model = mode.model_id.clone();
        let configured = mode.options.deployment_id.clone();
        let group = mode
            .options
            .resource_group
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        Box::pin(async move {
            if route(&model).is_none() {
                return Err(ApiError::new(
                    ErrorKind::InvalidRequest,
                    format!(
                        "`{model}` is not an SAP AI Core model family Switchyard can call (Claude, Nova, OpenAI, Gemini, Perplexity, Mistral or Cohere); check the model id against `switchyard models --provider sapaicore`"
                    ),
                ));
            }
            let deployment = match configured {
                Some(d) => d,
                None => auth.deployment_for(&base, &group, &model).await?,
            };
            let token = auth.token().await?;
            request.url = format!(
                "{base}/v2/inference/deployments/{deployment}/{}",
                request.url
            );
            Ok(request
                .bearer(Some(&token))
                .header("AI-Resource-Group", group)
                .header("AI-Client-Type", "Switchyard"))
        })
    }
}
