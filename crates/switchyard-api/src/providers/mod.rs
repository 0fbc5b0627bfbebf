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
//! | Claude Code, the `claude` CLI | `claude_code.rs` | a child process's NDJSON (`process.rs`) |
//! | Qwen Code, the Qwen CLI's sign-in | `qwen_code.rs` | SSE, OAuth file (`auth/qwen.rs`) |
//! | AIhubmix: Anthropic, Gemini, Responses or Chat by model id | `aihubmix.rs` | SSE |
//! | A Dify app's `chat-messages` | `dify.rs` | SSE |
//! | AskSage `/query` | `asksage.rs` | one JSON document |
//! | SAP AI Core deployments | `sapaicore.rs` | SSE by model family, OAuth client credentials (`auth/sap.rs`) |
//! | ChatGPT's Codex backend, the Codex CLI's sign-in | `openai_codex.rs` | SSE, OAuth file (`auth/codex.rs`) |
//!
//! Without its feature, `bedrock` or `vertex` still resolves (so `config check` can show it),
//! and building its handler is [`ConfigError::FeatureDisabled`].

#[cfg(test)]
mod agreement;
mod aihubmix;
mod anthropic;
mod asksage;
#[cfg(feature = "bedrock")]
mod bedrock;
mod chain;
mod chat_body;
mod claude_code;
mod dify;
mod fast_json;
mod gateway_body;
mod gemini;
mod ollama;
mod openai_chat;
mod openai_codex;
mod openai_responses;
pub mod presets;
mod provider;
mod qwen_code;
pub mod resolve;
mod sapaicore;
mod think_tags;
#[cfg(feature = "vertex")]
mod vertex;
// house-mappers
mod mapper;
mod routed;
mod signin;

pub use chain::{ChainEntry, build_failover_chain, failover_problems};
pub use presets::{ChatDialect, PRESETS, ProviderPreset, WireFamily, preset};
pub use resolve::{
    CloudSettings, ModelInfoOrigin, REGIONAL_ENDPOINTS, ResolvedMode, is_loopback, resolve_mode,
    url_host,
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
        WireFamily::ClaudeCode => Ok(claude_code::ClaudeCode::boxed(resolved)),
        WireFamily::QwenCode => {
            let provider = qwen_code::QwenCode::new(&resolved)?;
            ProviderHandler::boxed(resolved, provider)
        }
        WireFamily::OpenAiCodex => {
            let provider = openai_codex::OpenAiCodex::new(&resolved)?;
            ProviderHandler::boxed(resolved, provider)
        }
        WireFamily::Unavailable(reason) => Err(ConfigError::ProviderUnavailable {
            provider: resolved.provider_id,
            reason: reason.to_owned(),
        }),
        WireFamily::Aihubmix => ProviderHandler::boxed(resolved, aihubmix::Aihubmix),
        WireFamily::Dify => ProviderHandler::boxed(resolved, dify::Dify),
        WireFamily::AskSage => {
            // The whole answer arrives at once: wait longer for it unless configured.
            resolved.deadlines.first_content = resolved
                .deadlines
                .first_content
                .or(Some(std::time::Duration::from_secs(600)));
            ProviderHandler::boxed(resolved, asksage::AskSage)
        }
        WireFamily::SapAiCore => {
            let provider = sapaicore::SapAiCore::new(&mut resolved)?;
            ProviderHandler::boxed(resolved, provider)
        }
    }
}
