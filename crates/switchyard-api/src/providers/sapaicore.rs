//! `sapaicore`: models deployed on SAP AI Core (SPEC R4.2, R1.3), called through their
//! deployments' inference URLs (the reference's `providers/sapaicore.ts`, its deployment
//! mode), with the client-credentials token of [`crate::auth::sap`]. Here: the routes and the
//! provider; the routes are in `route.rs`,
//! the bodies in `body.rs`, the two mappers of its own in `stream.rs`.
//!
//! Every request goes to `{AI_API_URL}/v2/inference/deployments/{deployment}/…` with
//! `Authorization: Bearer {token}`, `AI-Resource-Group` (default `default`) and
//! `AI-Client-Type: Switchyard`; the deployment is the configured `deployment_id`, else the
//! running deployment serving the model. The path and body follow the model family:
//!
//! | models | path | body | stream |
//! |---|---|---|---|
//! | Claude 3.7 and later, Amazon Nova | `converse-stream` | Bedrock Converse (`inferenceConfig` with `maxTokens` and temperature 0 (none for Opus 4.7), `system`, `messages`, cache points on the system prompt and the last two user messages when the model caches) | Converse events as SSE `data:` lines |
//! | older Claude (3, 3.5) | `invoke-with-response-stream` | Anthropic Messages with `anthropic_version: "bedrock-2023-05-31"` | Anthropic events as SSE |
//! | OpenAI (`gpt-…`, `o1`, `o3`, `o4-mini`) | `chat/completions?api-version=2024-12-01-preview` | Chat Completions (`max_tokens`, temperature 0, penalties 0; reasoning models: neither, `reasoning_effort` when set) | Chat Completions SSE |
//! | Perplexity (`sonar…`), hosted Mistral | `chat/completions` | Chat Completions with `model` | Chat Completions SSE |
//! | Cohere (`cohere--…`) | `chat` | Chat Completions shape with `model` | Cohere v2 events (`content-delta`, `message-end`) |
//! | Gemini | `models/{id}:streamGenerateContent` | Gemini (`contents`, `systemInstruction`, `generationConfig` with `maxOutputTokens` and temperature 0; no thinking: SAP's Gemini deployments take none) | Gemini SSE |
//!
//! A model id outside the reference's lists goes by its family's prefix (`anthropic--`,
//! `amazon--nova`, `gpt`/`o`, `gemini`, `sonar`, `mistralai--`, `cohere--`), so a newly
//! deployed model works without a rebuild; the reference refuses it. Differences from the
//! reference: `o3-mini` streams like the other reasoning models (the reference sends it
//! unstreamed, an Azure limit since lifted); the orchestration mode (`sapAiCoreUseOrchestrationMode`,
//! SAP's own SDK protocol) is not offered; tools are not sent (the reference sends none), and
//! tool calls and results in the conversation are sent as text.
//!
//! Usage rules (SPEC R1.3): Converse's `inputTokens` is already uncached; cache reads and
//! writes from `cacheReadInputTokens` / `cacheWriteInputTokens`. The others follow their
//! families. SAP bills in capacity units, not per token: no cost is reported.

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

/// The SAP AI Core provider: its credentials and deployment cache.
pub(crate) struct SapAiCore {
    auth: Arc<SapAuth>,
}

impl SapAiCore {
    /// Fills in the base URL from the service key (unless configured) and checks the key's
    /// shape; no request is made (SPEC R3.5).
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

    /// The body, and the path below the deployment in place of the URL; the deployment, the
    /// token and the headers are added by [`Provider::authorize`].
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
