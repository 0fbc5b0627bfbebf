//! Building a mode's handler: the mode resolved and its key checked, then the handler of its
//! preset's wire family, made without any network request.
//! Spec: R3.2, R3.5.

#[cfg(feature = "bedrock")]
use super::bedrock;
use super::presets::WireFamily;
use super::provider::ProviderHandler;
use super::resolve::{ResolvedMode, resolve_mode};
#[cfg(feature = "vertex")]
use super::vertex;
use super::{
    aihubmix, anthropic, asksage, claude_code, dify, gemini, ollama, openai_chat, openai_codex,
    openai_responses, qwen_code, sapaicore,
};
use crate::config::{ApiConfiguration, ConfigError, Mode};
use crate::handler::ApiHandler;

/// Builds the handler for `mode`: resolves it, checks the key and constructs the provider's handler
/// without any network request, logging notices such as an unknown model as warnings. Fails with
/// any [`ConfigError`] of [`resolve_mode`], a missing key or an unreadable `ca_bundle`.
/// Spec: R3.4.
pub fn build_api_handler(
    config: &ApiConfiguration,
    mode: Mode,
) -> Result<Box<dyn ApiHandler>, ConfigError> {
    handler_for(resolve_checked(config, mode)?)
}

/// `mode` resolved, its notices logged as warnings and its key checked, for [`build_api_handler`]
/// and each failover entry.
pub(crate) fn resolve_checked(
    config: &ApiConfiguration,
    mode: Mode,
) -> Result<ResolvedMode, ConfigError> {
    let resolved = resolve_mode(config, mode)?;
    for notice in &resolved.notices {
        tracing::warn!("{notice}");
    }
    resolved.check_key()?;
    Ok(resolved)
}

/// Builds the handler for an already resolved mode: its preset's family, or Responses for an OpenAI
/// model whose `api_format` says so. The key is not checked here.
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
