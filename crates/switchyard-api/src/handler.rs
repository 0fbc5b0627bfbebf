//! The narrow trait every provider implements (SPEC R2.1).

use std::future::Future;
use std::pin::Pin;

use crate::message::{Message, ToolSpec};
use crate::model::ModelInfo;
use crate::stream::{ApiStream, Usage};
pub use crate::transport::{RetryObserver, RetryStatus};

/// The model a handler talks to: its id as sent to the provider and what we know of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiHandlerModel {
    /// The model id sent on the wire (e.g. `claude-sonnet-4-5-20250929`).
    pub id: String,
    /// Limits and prices (SPEC R2.2).
    pub info: ModelInfo,
}

/// A future returned by [`ApiHandler::get_api_stream_usage`].
pub type UsageFuture<'a> = Pin<Box<dyn Future<Output = Option<Usage>> + Send + 'a>>;

/// One configured provider and model, ready to stream (SPEC R2.1).
///
/// Construction makes no network request (SPEC R3.5); the HTTP request starts when the
/// returned [`ApiStream`] is first polled, and dropping the stream closes the connection.
pub trait ApiHandler: Send + Sync {
    /// Starts one streaming request with `system_prompt`, the conversation `messages`
    /// (Anthropic-shaped, oldest first) and the `tools` the model may call.
    ///
    /// Failures before and during the stream arrive as `Err(ApiError)` items; the stream ends
    /// after the first error.
    fn create_message(
        &self,
        system_prompt: &str,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> ApiStream;

    /// The model this handler uses.
    fn get_model(&self) -> ApiHandlerModel;

    /// The provider id this handler was built for (e.g. `openrouter`), used in messages.
    fn provider_id(&self) -> &str;

    /// Late usage lookup for providers that report usage out of band (OpenRouter's generation
    /// endpoint). Called when a stream ended without a usage chunk. Default: none.
    fn get_api_stream_usage(&self) -> UsageFuture<'_> {
        Box::pin(std::future::ready(None))
    }

    /// Sets (or clears) the receiver of provider-level retry reports (SPEC R5.3): each retry
    /// of a rate-limited request before its stream starts is reported before the wait.
    fn set_retry_observer(&self, _observer: Option<RetryObserver>) {}

    /// Aborts every stream this handler has open: each yields `ErrorKind::Cancelled` once
    /// and closes its connection (SPEC R1.4). Streams started afterwards are unaffected.
    fn abort(&self) {}
}
