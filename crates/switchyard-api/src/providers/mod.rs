//! The provider registry: every provider id as data ([`presets`]: id → wire family, base URL,
//! key variables, default model, retry policy; SPEC R4.2), a mode resolved against it
//! ([`resolve`]), and the handler built for it ([`build_api_handler`]; SPEC R3.2, R3.5) or for
//! each entry of its failover chain ([`build_failover_chain`]; SPEC R12.1).
//!
//! This file holds only the map and the re-exports; each idea has its own file:
//!
//! | concern | file |
//! |---|---|
//! | building a mode's handler (SPEC R3.2, R3.5) | `build.rs` |
//! | a mode's failover chain (SPEC R12.1) | `chain.rs` |
//! | the provider presets (SPEC R4.2) | `presets.rs` |
//! | a mode resolved, step by step: provider, endpoint, model, budget, key (SPEC R3.1–R3.4) | `resolve.rs` |
//! | what a resolved mode holds | `resolved.rs` |
//! | the model id and its info (SPEC R2.3) | `model_choice.rs` |
//! | regional endpoints, cloud hosts, loopback URLs (SPEC R4.8) | `endpoint.rs` |
//! | Bedrock and Vertex settings (SPEC R4.8) | `cloud.rs` |
//! | what a provider is, and the one handler that runs any | `provider.rs` |
//! | Chat Completions bodies per provider (SPEC R4.5) | `chat_body.rs`, its table `chat_style.rs` |
//! | Chat Completions bodies of the model routers OpenRouter and the Vercel AI Gateway | `router_body.rs` |
//! | the messages, cache marks and tools all Chat Completions bodies share (SPEC R4.3's placement) | `chat_messages.rs` |
//! | what a model id says of its reasoning family (SPEC R4.5) | `model_family.rs` |
//! | a caller's own parameters in each family's fields, and what a body drops (SPEC R14.1, R14.2) | `overrides.rs` |
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
//! and building its handler is
//! [`ConfigError::FeatureDisabled`](crate::config::ConfigError::FeatureDisabled).

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
