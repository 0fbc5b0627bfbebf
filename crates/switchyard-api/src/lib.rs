//! Switchyard's provider layer: one streaming [`ApiHandler`] per LLM provider, every answer
//! normalised into the same [`ApiStreamChunk`] kinds. It knows nothing of tasks or files.
//!
//! A configuration names a provider and model, [`build_api_handler`] turns it into a handler,
//! and [`ApiHandler::create_message`] starts one request and returns its stream:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let base_url = local_server().await;
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
//! # async fn local_server() -> String {
//! #     use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! #     let url = format!("http://{}/v1", listener.local_addr().unwrap());
//! #     tokio::spawn(async move {
//! #         let (mut socket, _) = listener.accept().await.unwrap();
//! #         let (mut request, mut piece) = (Vec::new(), [0u8; 4096]);
//! #         loop {
//! #             let n = socket.read(&mut piece).await.unwrap();
//! #             request.extend_from_slice(&piece[..n]);
//! #             let text = String::from_utf8_lossy(&request).to_lowercase();
//! #             let Some(end) = text.find("\r\n\r\n") else { continue };
//! #             let length = text.lines().find_map(|l| l.strip_prefix("content-length:"));
//! #             if request.len() >= end + 4 + length.map_or(0, |v| v.trim().parse().unwrap()) { break; }
//! #         }
//! #         let body = concat!(
//! #             "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello there!\"}}]}\n\n",
//! #             "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\n",
//! #             "data: [DONE]\n\n");
//! #         let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
//! #         socket.write_all(format!("{head}{body}").as_bytes()).await.unwrap();
//! #     });
//! #     url
//! # }
//! ```
//!
//! Modules:
//! - [`handler`], [`message`], [`stream`]: the trait, what a request sends, what it yields.
//! - [`config`]: the configuration file; [`providers`]: a handler per provider, failover chains.
//! - [`error`]: classified failures; [`retry`], [`rate_limit`]: retries and rate-limit headers.
//! - [`model`]: limits and prices; [`auth`]: sign-ins; [`secrets`]: keys kept out of output.
//! - [`stream_guard`]: an answer's size bounds; [`wire`]: stream framings; [`time`]: timestamps.
//!
//! The `bedrock` and `vertex` features add Amazon Bedrock and Google Vertex AI.

pub mod auth;
pub mod config;
pub mod error;
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
