//! Switchyard's provider layer: one streaming [`ApiHandler`] per LLM provider, every answer
//! normalised into the same [`ApiStreamChunk`] kinds. It knows nothing of tasks or files.
//!
//! A configuration names a provider and model, [`build_api_handler`] turns it into a handler,
//! and [`ApiHandler::create_message`] starts one request and returns its stream:
//!
//! ```
//! # use switchyard_testkit::{AgentTurn, AgentUpstream, UpstreamDialect};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let reply = |_: &switchyard_testkit::AgentTurnRequest| AgentTurn::text("Hello there!");
//! # let upstream = AgentUpstream::start(UpstreamDialect::ChatCompletions, reply).await;
//! # let base_url = upstream.base_url();
//! use futures_util::StreamExt;
//! use switchyard_api::{ApiConfiguration, ApiStreamChunk, Message, Mode, RequestOptions};
//!
//! let toml = format!(
//!     r#"
//!     [act]
//!     provider = "openai"
//!     model = "my-model"
//!     [providers.openai]
//!     base_url = "{base_url}"
//!     "#
//! );
//! let config = ApiConfiguration::from_toml(&toml, "config.toml", |var| std::env::var(var).ok())?;
//! let handler = switchyard_api::build_api_handler(&config, Mode::Act)?;
//! let hello = [Message::user_text("Say hello.")];
//! let mut stream = handler.create_message("Be terse.", &hello, &[], RequestOptions::default());
//! let mut answer = String::new();
//! while let Some(chunk) = stream.next().await {
//!     if let ApiStreamChunk::Text { text, .. } = chunk? {
//!         answer.push_str(&text);
//!     }
//! }
//! assert_eq!(answer, "Hello there!");
//! # Ok(())
//! # }
//! ```
//!
//! [`handler`], [`message`] and [`stream`] are the trait and what goes in and out of it;
//! [`config`] parses the configuration and [`providers`] builds handlers from it; [`error`],
//! [`retry`] and [`rate_limit`] deal with failures; [`model`] knows limits and prices; [`auth`],
//! [`secrets`], [`stream_guard`], [`wire`] and [`time`] serve them. The `bedrock` and `vertex`
//! features add Amazon Bedrock and Google Vertex AI.

pub mod auth;
pub mod cache_hints;
pub mod config;
pub mod error;
pub mod estimate;
pub mod handler;
pub mod message;
pub mod model;
mod private_file;
mod process;
pub mod providers;
pub mod rate_limit;
pub mod retry;
mod retry_after;
pub mod secrets;
pub mod stream;
pub mod stream_guard;
pub mod time;
mod transport;
pub use transport::served_models;
pub mod wire;

pub use cache_hints::{CacheAt, CacheHints, CacheMark};
pub use config::{
    ApiConfiguration, ApiKey, ConfigError, FallbackSettings, HttpSettings, LimitsSettings, Mode,
    ModeSettings, ProviderEndpoint, ProviderSettings, Proxy, ReasoningEffort, StoreUrl,
};
pub use error::{ApiError, ErrorKind, NOT_SENT, classify};
pub use handler::{
    ApiHandler, ApiHandlerModel, CancellationToken, Deadlines, ForwardDialect, RequestOptions,
    RequestOverrides, ResponseObserver, RetryObserver, RetryStatus, ToolChoice,
};
pub use message::{ContentBlock, Message, Role, ToolSpec};
pub use model::ModelInfo;
pub use providers::{
    ChainEntry, CloudSettings, ModelInfoOrigin, ResolvedMode, build_api_handler,
    build_failover_chain, failover_problems, fails_over, handler_for, resolve_mode,
};
pub use rate_limit::{RateLimitHeaders, rate_limit_headers};
pub use secrets::Scrubber;
pub use stream::{
    ApiStream, ApiStreamChunk, FinishReason, ToolCall, ToolCallAccumulator, Usage, WireEvent,
    generated_tool_call_id,
};
pub use stream_guard::{StreamBounds, StreamGuard, guard_stream};
