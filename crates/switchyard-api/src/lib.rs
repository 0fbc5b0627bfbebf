//! Switchyard's provider layer (SPEC R1–R5, R7): one streaming [`ApiHandler`] per LLM provider,
//! every answer normalised into the same four [`ApiStreamChunk`] kinds — text, reasoning, usage
//! and tool calls.
//!
//! # Streaming a completion
//!
//! A configuration (TOML, with keys from environment variables) names a provider and model;
//! [`build_api_handler`] turns it into a handler; [`ApiHandler::create_message`] starts one
//! request and returns its stream. This example streams from an OpenAI-compatible server (a
//! local one it starts itself, so it runs as it is):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let base_url = local_server().await;
//! use futures_util::StreamExt;
//! use switchyard_api::{
//!     ApiConfiguration, ApiStreamChunk, Message, Mode, RequestOptions, build_api_handler,
//! };
//!
//! let toml = format!(
//!     r#"
//!     [act]
//!     provider = "openai"          # OpenAI-compatible; `anthropic`, `gemini`, `ollama`, …
//!     model = "my-model"
//!
//!     [providers.openai]
//!     base_url = "{base_url}"      # e.g. http://127.0.0.1:8089/v1
//!     "#
//! );
//! // Keys are read from the environment (OPENAI_API_KEY here); a local server needs none.
//! let config = ApiConfiguration::from_toml(&toml, "config.toml", |var| std::env::var(var).ok())?;
//! let handler = build_api_handler(&config, Mode::Act)?;
//!
//! let mut stream = handler.create_message(
//!     "You are terse.",
//!     &[Message::user_text("Say hello.")],
//!     &[], // no tools
//!     RequestOptions::default(),
//! );
//! let mut answer = String::new();
//! while let Some(chunk) = stream.next().await {
//!     match chunk? {
//!         ApiStreamChunk::Text { text, .. } => answer.push_str(&text),
//!         ApiStreamChunk::Usage(usage) => {
//!             println!("{} tokens in, {} out", usage.input_tokens, usage.output_tokens)
//!         }
//!         _ => {} // reasoning, tool-call fragments, how a cut answer ended
//!     }
//! }
//! assert_eq!(answer, "Hello there!");
//! # Ok(())
//! # }
//! #
//! # /// A one-request OpenAI-compatible server on 127.0.0.1 (for the example only).
//! # async fn local_server() -> String {
//! #     use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! #     let url = format!("http://{}/v1", listener.local_addr().unwrap());
//! #     tokio::spawn(async move {
//! #         let (mut socket, _) = listener.accept().await.unwrap();
//! #         let mut request = Vec::new();
//! #         let mut piece = [0u8; 4096];
//! #         loop {
//! #             let n = socket.read(&mut piece).await.unwrap();
//! #             request.extend_from_slice(&piece[..n]);
//! #             let text = String::from_utf8_lossy(&request).to_lowercase();
//! #             if let Some(end) = text.find("\r\n\r\n") {
//! #                 let length: usize = text.lines().find_map(|l| l.strip_prefix("content-length:"))
//! #                     .map_or(0, |v| v.trim().parse().unwrap());
//! #                 if request.len() >= end + 4 + length { break; }
//! #             }
//! #         }
//! #         let body = concat!(
//! #             "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n",
//! #             "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there!\"},\"finish_reason\":\"stop\"}]}\n\n",
//! #             "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\n",
//! #             "data: [DONE]\n\n");
//! #         let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
//! #         socket.write_all(head.as_bytes()).await.unwrap();
//! #         socket.write_all(body.as_bytes()).await.unwrap();
//! #     });
//! #     url
//! # }
//! ```
//!
//! Add `switchyard-api`, `tokio` (with `macros` and `rt`) and `futures-util` to your
//! dependencies. `examples/` holds runnable programs: `stream_completion.rs`,
//! `openai_compatible.rs` (a configuration built in code) and `concurrent_requests.rs`.
//!
//! # One handler, many requests
//!
//! A handler holds configuration only. Everything that belongs to one request travels in its
//! [`RequestOptions`]: a [`CancellationToken`] that ends it (its stream yields one
//! [`ErrorKind::Cancelled`] error and closes the connection), an observer of its provider-level
//! retries ([`RetryStatus`]), extra headers, and [`Deadlines`] (first content, idle). Share one
//! handler (behind an `Arc` or a reference) between any number of concurrent requests.
//!
//! # Errors
//!
//! Failures before and during a stream arrive as `Err(`[`ApiError`]`)` items, each classified
//! by [`ErrorKind`] (rate limited, context window exceeded, auth, …) with the provider's
//! status, code, request id and retry-after hint; the stream ends after the first error.
//! Rate limits are retried here before the stream starts (3 attempts by default); the other
//! kinds are for the caller to handle (switchyard-core's task does). Configuration problems
//! are [`ConfigError`]s, one clear sentence each. No error, `Debug` or log line shows a key.
//!
//! # Cargo features
//!
//! | feature | adds | default |
//! |---|---|---|
//! | `bedrock` | Amazon Bedrock (AWS crates: SigV4, the credential chain) | off |
//! | `vertex` | Google Vertex AI (Google Cloud credentials) | off |
//!
//! Every other provider (Anthropic, OpenAI and the OpenAI-compatible presets, OpenRouter,
//! DeepSeek, Gemini, Ollama, …) is always there.
//!
//! This crate knows nothing of tasks, files or terminals (that is switchyard-core).

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
