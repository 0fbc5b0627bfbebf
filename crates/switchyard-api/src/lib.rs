//! Switchyard's provider layer: from an [`ApiConfiguration`] and a [`Mode`] to one
//! [`ApiHandler`] whose `create_message` streams [`ApiStreamChunk`]s (SPEC R1–R5, R7).
//!
//! This crate knows nothing of tasks, files or terminals. Start at [`build_api_handler`].

pub mod auth;
pub mod config;
pub mod error;
pub mod handler;
pub mod message;
pub mod model;
pub mod providers;
pub mod retry;
pub mod retry_after;
pub mod stream;
mod transport;
pub mod wire;

pub use config::{
    ApiConfiguration, ApiKey, ConfigError, HttpSettings, Mode, ModeSettings, ProviderEndpoint,
    ProviderSettings, Proxy, ReasoningEffort,
};
pub use error::{ApiError, ErrorKind, classify};
pub use handler::{
    ApiHandler, ApiHandlerModel, CancellationToken, Deadlines, RequestOptions, RetryObserver,
    RetryStatus,
};
pub use message::{ContentBlock, Message, Role, ToolSpec};
pub use model::ModelInfo;
pub use providers::{CloudSettings, ResolvedMode, build_api_handler, handler_for, resolve_mode};
pub use stream::{ApiStream, ApiStreamChunk, ToolCall, ToolCallAccumulator, Usage};
