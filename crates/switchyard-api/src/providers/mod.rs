//! The provider registry: every provider id as data ([`presets`]: id → wire family, base URL,
//! key variables, default model, retry policy; SPEC R4.2), a mode resolved against it
//! ([`resolve`]), and the handler built for it ([`build_api_handler`]).
//!
//! One file per wire family (SPEC R4.1), each a pure request builder plus a stream mapper
//! (`provider::Provider`) run over the one shared transport:
//!
//! | family | file | wire |
//! |---|---|---|
//! | Anthropic Messages (and MiniMax) | `anthropic.rs` | SSE |
//! | OpenAI Chat Completions and the OpenAI-compatible presets | `openai_chat.rs` | SSE |
//! | OpenAI Responses (models whose `api_format` is `responses` or `responses_websocket`) | `openai_responses.rs` | SSE |
//! | Gemini `streamGenerateContent` | `gemini.rs` | SSE |
//! | Ollama `/api/chat` | `ollama.rs` | NDJSON |
//! | Bedrock ConverseStream (feature `bedrock`) | `bedrock.rs` | AWS event-stream, SigV4 |
//! | Vertex AI, Claude and Gemini (feature `vertex`) | `vertex.rs` | SSE, Google OAuth |
//!
//! Without its feature, `bedrock` or `vertex` still resolves (so `config check` can show it),
//! and building its handler is [`ConfigError::FeatureDisabled`].

mod anthropic;
#[cfg(feature = "bedrock")]
mod bedrock;
mod fast_json;
mod gemini;
mod ollama;
mod openai_chat;
mod openai_responses;
pub mod presets;
mod provider;
pub mod resolve;
#[cfg(feature = "vertex")]
mod vertex;

pub use presets::{ChatDialect, PRESETS, ProviderPreset, WireFamily, preset};
pub use resolve::{
    CloudSettings, ModelInfoOrigin, REGIONAL_ENDPOINTS, ResolvedMode, is_loopback, resolve_mode,
};

use crate::config::{ApiConfiguration, ConfigError, Mode};
use crate::handler::ApiHandler;
use provider::ProviderHandler;

/// Builds the handler for `mode` (SPEC R3.2): resolves the mode, applies the thinking-budget
/// clip, checks the key ([`ConfigError::MissingApiKey`] names the variable), and constructs
/// the provider's handler without any network request (R3.5). Notices (unknown provider →
/// Anthropic, a model id not in the catalogue, clipped budget) are logged as warnings (R3.4).
///
/// # Errors
///
/// Any [`ConfigError`] of [`resolve_mode`], a missing key, an unreadable `ca_bundle`
/// ([`ConfigError::Http`]), or a provider left out of this build
/// ([`ConfigError::FeatureDisabled`]).
pub fn build_api_handler(
    config: &ApiConfiguration,
    mode: Mode,
) -> Result<Box<dyn ApiHandler>, ConfigError> {
    let resolved = resolve_mode(config, mode)?;
    for notice in &resolved.notices {
        tracing::warn!("{notice}");
    }
    resolved.check_key()?;
    handler_for(resolved)
}

/// Builds the handler for an already resolved mode: the preset's wire family, and for the
/// OpenAI family the Responses API when the model's `api_format` says so
/// ([`ModelInfo::uses_responses_api`](crate::ModelInfo::uses_responses_api)).
///
/// # Errors
///
/// [`ConfigError::Http`] when the `ca_bundle` cannot be read, [`ConfigError::FeatureDisabled`]
/// for a family this build leaves out. The key is not checked here
/// ([`ResolvedMode::check_key`]).
pub fn handler_for(mut resolved: ResolvedMode) -> Result<Box<dyn ApiHandler>, ConfigError> {
    match resolved.preset.family {
        WireFamily::Anthropic => ProviderHandler::boxed(resolved, anthropic::Anthropic),
        WireFamily::Ollama => {
            ollama::prepare(&mut resolved);
            ProviderHandler::boxed(resolved, ollama::Ollama)
        }
        WireFamily::Gemini => ProviderHandler::boxed(resolved, gemini::Gemini),
        #[cfg(feature = "bedrock")]
        WireFamily::Bedrock => {
            let provider = bedrock::Bedrock::new(&resolved);
            ProviderHandler::boxed(resolved, provider)
        }
        #[cfg(feature = "vertex")]
        WireFamily::Vertex => {
            let provider = vertex::Vertex::new(&resolved);
            ProviderHandler::boxed(resolved, provider)
        }
        #[cfg(not(feature = "bedrock"))]
        WireFamily::Bedrock => Err(ConfigError::FeatureDisabled {
            provider: resolved.provider_id,
            feature: "bedrock",
        }),
        #[cfg(not(feature = "vertex"))]
        WireFamily::Vertex => Err(ConfigError::FeatureDisabled {
            provider: resolved.provider_id,
            feature: "vertex",
        }),
        WireFamily::OpenAiChat if resolved.model_info.uses_responses_api() => {
            ProviderHandler::boxed(resolved, openai_responses::OpenAiResponses)
        }
        WireFamily::OpenAiChat | WireFamily::NotYetSupported(_) => {
            ProviderHandler::boxed(resolved, openai_chat::OpenAiChat)
        }
    }
}
