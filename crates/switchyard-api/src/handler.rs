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
    /// Thinking budget sent with each request, in tokens; 0 when none. With a budget, output is
    /// billed at the model's thinking output price where it has one.
    pub thinking_budget_tokens: u64,
}

/// A future returned by [`ApiHandler::get_api_stream_usage`].
pub type UsageFuture<'a> = Pin<Box<dyn Future<Output = Option<Usage>> + Send + 'a>>;

/// The deadlines of one request: `None` takes the provider's configured value, 120 s and
/// 300 s by default, and [`Duration::MAX`] means none. One that passes ends the stream with
/// one `ErrorKind::Timeout` error.
/// Spec: R6.4, R12.4.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deadlines {
    /// Longest wait from the stream's first poll to its first text, reasoning or tool-call chunk.
    /// Waits between retries do not count.
    pub first_content: Option<Duration>,
    /// Longest gap between chunks once content flows, timed only while the stream is polled.
    pub idle: Option<Duration>,
}

/// The deadlines used when neither the request nor the configuration sets one.
pub(crate) const DEFAULT_DEADLINES: ResolvedDeadlines = ResolvedDeadlines {
    first_content: Duration::from_secs(120),
    idle: Duration::from_secs(300),
};

/// Deadlines with every value decided, in effect for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResolvedDeadlines {
    pub(crate) first_content: Duration,
    pub(crate) idle: Duration,
}

impl ResolvedDeadlines {
    /// These deadlines with the values `overrides` sets replacing them.
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

/// Everything that belongs to one request rather than to the handler; the default is a plain
/// request. Cloning shares the token and the observers, so cancelling a clone cancels both.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// Cancels this request: its stream yields one `ErrorKind::Cancelled` error at the next poll
    /// and closes its connection. A token cancelled before the first poll sends nothing.
    pub cancel: CancellationToken,
    /// Hears each provider-level retry of this request before its wait.
    pub on_retry: Option<RetryObserver>,
    /// Extra HTTP headers that replace the provider's headers of the same name. An invalid name
    /// or value fails the stream before anything is sent; values are never logged.
    pub headers: Vec<(String, String)>,
    pub deadlines: Deadlines,
    /// Skips the provider-level retries, for a caller with a failover entry to try instead.
    pub fail_fast: bool,
    /// Hears the status and headers of each attempt's response before its body is read.
    pub on_response: Option<ResponseObserver>,
    /// Parameters the caller sets in place of the handler's configuration; all unset by default.
    pub overrides: RequestOverrides,
    /// Size limits of the answer; past one the stream ends with a `too_large` error.
    pub bounds: crate::stream_guard::StreamBounds,
}

/// Request parameters a caller sets for one request; `None` or empty keeps the handler's own
/// value. A provider that cannot carry one names it in [`ApiHandler::dropped_overrides`].
/// Spec: R14.1, R14.2.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestOverrides {
    pub max_tokens: Option<u64>,
    /// Sampling temperature on the dialect's scale: 0–2 for OpenAI, 0–1 for Anthropic.
    pub temperature: Option<f64>,
    /// Nucleus sampling probability mass, 0–1.
    pub top_p: Option<f64>,
    /// Sequences that end the answer when generated; empty for none.
    pub stop: Vec<String>,
    pub tool_choice: Option<ToolChoice>,
    pub reasoning_effort: Option<crate::config::ReasoningEffort>,
    /// Thinking budget in tokens for models that take one; `Some(0)` turns thinking off.
    pub thinking_budget_tokens: Option<u64>,
}

/// Which tool the model must call.
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
    /// Anthropic Messages: `POST /v1/messages`.
    AnthropicMessages,
    /// OpenAI Chat Completions: `POST /chat/completions`.
    ChatCompletions,
}

/// Receives each HTTP response's status and headers; see [`RequestOptions::on_response`].
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
    /// Options cancelled by `cancel`, with nothing else set.
    pub fn with_cancel(cancel: CancellationToken) -> Self {
        Self {
            cancel,
            ..Self::default()
        }
    }
}

/// One configured provider and model, ready to stream.
///
/// Building one sends nothing: the request starts at the stream's first poll, and dropping the
/// stream closes the connection. A handler keeps no per-request state, so share one freely.
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

    /// The provider id this handler was built for, such as `openrouter`.
    fn provider_id(&self) -> &str;

    /// The parameters of `overrides` this provider cannot carry and drops, spelled as in the
    /// client's dialect; none by default.
    fn dropped_overrides(&self, _overrides: &RequestOverrides) -> Vec<&'static str> {
        Vec::new()
    }

    /// The dialect in which this handler can send a client's own body as it is; `None` means a
    /// gateway translates every request for it.
    fn forwards(&self) -> Option<ForwardDialect> {
        None
    }

    /// Sends a client's own `body`, a JSON object in [`ApiHandler::forwards`]'s dialect, keeping
    /// every field but `model`, `stream` and what `options`' overrides set. URL, key, headers,
    /// retries and deadlines apply as to `create_message`, and each provider event also comes as
    /// it arrived, an `ApiStreamChunk::Wire` after its chunks. A handler that does not forward,
    /// or a body of another dialect, yields one `ErrorKind::InvalidRequest` error.
    fn forward(
        &self,
        dialect: ForwardDialect,
        _body: serde_json::Map<String, serde_json::Value>,
        _options: RequestOptions,
    ) -> ApiStream {
        refused_forward(self.provider_id(), dialect)
    }

    /// Usage for providers that report it out of band, such as OpenRouter's generation endpoint,
    /// asked when a stream ended without a usage chunk; none by default.
    fn get_api_stream_usage(&self) -> UsageFuture<'_> {
        Box::pin(std::future::ready(None))
    }
}

/// The one-error stream of a forward this provider cannot take.
pub(crate) fn refused_forward(provider_id: &str, dialect: ForwardDialect) -> ApiStream {
    let error = crate::ApiError::new(
        crate::ErrorKind::InvalidRequest,
        format!(
            "the {provider_id} provider cannot take a request body of {dialect:?} as it is; send it to be translated"
        ),
    );
    Box::pin(futures_util::stream::once(std::future::ready(Err(error))))
}
