//! The trait every provider implements, and the options that travel with one request.
//! Spec: R2.1, R1.4, R5.3, R6.4.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

pub use tokio_util::sync::CancellationToken;

use crate::message::{Message, ToolSpec};
use crate::model::ModelInfo;
pub use crate::retry::{RetryObserver, RetryStatus};
use crate::stream::{ApiStream, Usage};

/// The model a handler talks to: its wire id, what we know of it, and its thinking budget.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiHandlerModel {
    pub id: String,
    pub info: ModelInfo,
    /// Thinking budget per request, in tokens; with one, output bills at the thinking price.
    pub thinking_budget_tokens: u64,
}

pub type UsageFuture<'a> = Pin<Box<dyn Future<Output = Option<Usage>> + Send + 'a>>;

/// The deadlines of one request: `None` takes the provider's value, [`Duration::MAX`] none.
/// Spec: R6.4, R12.4.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deadlines {
    /// Longest wait from the first poll to the first content chunk, retry waits excepted.
    pub first_content: Option<Duration>,
    /// Longest gap between chunks once content flows, timed only while the stream is polled.
    pub idle: Option<Duration>,
}

pub(crate) const DEFAULT_DEADLINES: ResolvedDeadlines = ResolvedDeadlines {
    first_content: Duration::from_secs(120),
    idle: Duration::from_secs(300),
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResolvedDeadlines {
    pub(crate) first_content: Duration,
    pub(crate) idle: Duration,
}

impl ResolvedDeadlines {
    pub(crate) fn with(self, overrides: Deadlines) -> Self {
        Self {
            first_content: overrides.first_content.unwrap_or(self.first_content),
            idle: overrides.idle.unwrap_or(self.idle),
        }
    }
}

impl Default for ResolvedDeadlines {
    fn default() -> Self {
        DEFAULT_DEADLINES
    }
}

/// Everything that belongs to one request; clones share the token and the observers.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// Cancels this request: its stream yields one `Cancelled` error and closes its connection.
    pub cancel: CancellationToken,
    /// Hears each provider-level retry of this request before its wait.
    pub on_retry: Option<RetryObserver>,
    /// Extra HTTP headers, replacing the provider's of the same name; values are never logged.
    pub headers: Vec<(String, String)>,
    pub deadlines: Deadlines,
    /// Skips the provider-level retries, for a caller with a failover entry to try instead.
    pub fail_fast: bool,
    /// Hears the status and headers of each attempt's response before its body is read.
    pub on_response: Option<ResponseObserver>,
    pub overrides: RequestOverrides,
    /// Size limits of the answer; past one the stream ends with a `too_large` error.
    pub bounds: crate::stream_guard::StreamBounds,
}

/// Request parameters a caller sets in place of the handler's; one a provider cannot carry is
/// named by [`ApiHandler::dropped_overrides`].
/// Spec: R14.1, R14.2.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestOverrides {
    pub max_tokens: Option<u64>,
    /// Sampling temperature on the dialect's scale: 0–2 for OpenAI, 0–1 for Anthropic.
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub stop: Vec<String>,
    pub tool_choice: Option<ToolChoice>,
    pub reasoning_effort: Option<crate::config::ReasoningEffort>,
    /// Thinking budget in tokens for models that take one; `Some(0)` turns thinking off.
    pub thinking_budget_tokens: Option<u64>,
    /// The client's own cache breakpoints and cache key, for the providers that take them.
    pub cache: crate::cache_hints::CacheHints,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
    /// Some tool: OpenAI's `required`, Anthropic's `any`.
    Required,
    Tool(String),
}

/// A dialect in which a client's own request body can be sent as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ForwardDialect {
    AnthropicMessages,
    ChatCompletions,
    /// Google's Gemini API `generateContent`, which Vertex AI also takes for Gemini models.
    Gemini,
}

pub type ResponseObserver = Arc<dyn Fn(u16, &reqwest::header::HeaderMap) + Send + Sync>;

impl fmt::Debug for RequestOptions {
    /// Header values are not shown: they may carry credentials.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("RequestOptions")
            .field("cancelled", &self.cancel.is_cancelled())
            .field("on_retry", &self.on_retry.is_some())
            .field("header_names", &names)
            .field("deadlines", &self.deadlines)
            .field("fail_fast", &self.fail_fast)
            .field("on_response", &self.on_response.is_some())
            .field("overrides", &self.overrides)
            .field("bounds", &self.bounds)
            .finish()
    }
}

impl RequestOptions {
    pub fn with_cancel(cancel: CancellationToken) -> Self {
        Self {
            cancel,
            ..Self::default()
        }
    }
}

/// One configured provider and model, ready to stream. Building one sends nothing, and it
/// keeps no per-request state, so one serves any number of concurrent requests.
pub trait ApiHandler: Send + Sync {
    /// Starts one streaming request; `messages` are Anthropic-shaped, oldest first. Failures
    /// before and during the stream arrive as `Err(ApiError)` items, and the first one ends it.
    fn create_message(
        &self,
        system_prompt: &str,
        messages: &[Message],
        tools: &[ToolSpec],
        options: RequestOptions,
    ) -> ApiStream;

    fn get_model(&self) -> ApiHandlerModel;

    fn provider_id(&self) -> &str;

    /// The parameters of `overrides` this provider drops, spelled as in the client's dialect.
    fn dropped_overrides(&self, _overrides: &RequestOverrides) -> Vec<&'static str> {
        Vec::new()
    }

    /// The dialect in which this handler can send a client's own body as it is.
    fn forwards(&self) -> Option<ForwardDialect> {
        None
    }

    /// Sends a client's own `body` in [`ApiHandler::forwards`]'s dialect, keeping every field but
    /// `model`, `stream` and what `options`' overrides set; each provider event also comes as it
    /// arrived, after its chunks. A handler that does not forward yields an `InvalidRequest` error.
    fn forward(
        &self,
        dialect: ForwardDialect,
        _body: serde_json::Map<String, serde_json::Value>,
        _options: RequestOptions,
    ) -> ApiStream {
        refused_forward(self.provider_id(), dialect)
    }

    /// Usage reported out of band, asked when a stream ended without a usage chunk.
    fn get_api_stream_usage(&self) -> UsageFuture<'_> {
        Box::pin(std::future::ready(None))
    }
}

pub(crate) fn refused_forward(provider_id: &str, dialect: ForwardDialect) -> ApiStream {
    let error = crate::ApiError::new(
        crate::ErrorKind::InvalidRequest,
        format!(
            "the {provider_id} provider cannot take a request body of {dialect:?} as it is; send it to be translated"
        ),
    );
    Box::pin(futures_util::stream::once(std::future::ready(Err(error))))
}
