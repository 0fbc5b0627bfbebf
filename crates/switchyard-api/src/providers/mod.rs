//! The provider registry: every provider id as data in [`presets`], modes resolved in [`resolve`],
//! and one file per wire family, a pure request builder and stream mapper. Without its feature
//! `bedrock` or `vertex` still resolves, for `config check`, but its handler is refused.
//! Spec: R3.2, R3.5, R4.1, R4.2, R12.1.

#[cfg(test)]
mod agreement;
mod aihubmix;
mod anthropic;
mod asksage;
#[cfg(feature = "bedrock")]
mod bedrock;
mod build;
mod chain;
mod chat_body;
mod chat_messages;
mod chat_style;
mod claude_code;
mod cloud;
mod dify;
mod endpoint;
mod fast_json;
mod forward;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod gemini;
mod model_choice;
mod model_family;
mod ollama;
mod openai_chat;
mod openai_codex;
mod openai_responses;
mod overrides;
pub mod presets;
mod provider;
mod qwen_code;
pub mod resolve;
mod resolved;
mod router_body;
mod sapaicore;
mod think_tags;
#[cfg(feature = "vertex")]
mod vertex;
// house-mappers
mod mapper;
mod routed;
mod signin;

pub use build::{build_api_handler, handler_for};
pub use chain::{ChainEntry, build_failover_chain, failover_problems, fails_over};
pub use presets::{ChatDialect, PRESETS, ProviderPreset, WireFamily, preset};
pub use resolve::{
    CloudSettings, ModelInfoOrigin, REGIONAL_ENDPOINTS, ResolvedMode, is_loopback, resolve_mode,
    url_host,
};
