//! The handler (SPEC R2.1, R1.4, R5.3, R6.4): the narrow trait every provider implements, and
//! what travels with one request.
//!
//! A handler holds only configuration: the provider, model, endpoint and key. Everything that
//! belongs to one request — its cancellation, who hears about its retries, extra headers, its
//! deadlines — is in the [`RequestOptions`] passed to [`ApiHandler::create_message`], so one
//! handler serves any number of concurrent requests and none of them can disturb another.

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

/// The model a handler talks to: its id as sent to the provider, what we know of it, and the
/// thinking budget its requests carry (which prices output at the model's thinking price).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiHandlerModel {
    /// The model id sent on the wire (e.g. `claude-sonnet-4-5-20250929`).
    pub id: String,
    /// Limits and prices (SPEC R2.2).
    pub info: ModelInfo,
    /// The thinking budget sent with each request, in tokens (after the clip of SPEC R3.3);
    /// 0 when none. With a budget, output is billed at `info.thinking_config.output_price`
    /// where the model has one (the reference's `calculateApiCost`).
    pub thinking_budget_tokens: u64,
}

/// A future returned by [`ApiHandler::get_api_stream_usage`].
pub type UsageFuture<'a> = Pin<Box<dyn Future<Output = Option<Usage>> + Send + 'a>>;

/// The deadlines of one request (SPEC R6.4, R12.4). `None` takes the provider's configured
/// value (`first_content_timeout_seconds`, `idle_timeout_seconds` under `[providers.ID]`;
/// 120 s and 300 s unless configured); [`Duration::MAX`] means no deadline.
///
/// A deadline that passes ends the stream with one [`ErrorKind::Timeout`] error.
///
/// [`ErrorKind::Timeout`]: crate::ErrorKind::Timeout
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deadlines {
    /// Longest time from the start of the request (the first poll of its stream) to its first
    /// content chunk — text, reasoning or a tool call; usage chunks do not count. Waits between
    /// provider-level retries are not counted against it.
    pub first_content: Option<Duration>,
    /// Longest time without a chunk once content is flowing, measured while the stream is
    /// being polled (a slow consumer does not trip it).
    pub idle: Option<Duration>,
}

/// The first-content and idle deadlines used when neither the request nor the provider's
/// configuration sets one: 120 s and 300 s (SPEC R6.4).
pub(crate) const DEFAULT_DEADLINES: ResolvedDeadlines = ResolvedDeadlines {
    first_content: Duration::from_secs(120),
    idle: Duration::from_secs(300),
};

/// Deadlines with every value decided, in effect for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResolvedDeadlines {
    /// See [`Deadlines::first_content`].
    pub(crate) first_content: Duration,
    /// See [`Deadlines::idle`].
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

/// Everything that belongs to one request rather than to the handler (SPEC R2.1 **Improve**).
/// `RequestOptions::default()` is a plain request: never cancelled from outside, retries
/// unobserved, no extra headers, the provider's deadlines.
///
/// Cloning shares the cancellation token and the observer: cancelling a clone cancels the
/// original. Give each request its own token (or a [`CancellationToken::child_token`] of a
/// task-wide one) to cancel them one by one.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// Cancels this request: its stream yields one [`ErrorKind::Cancelled`] error at the next
    /// poll, sends no further request, and closes its connection (SPEC R1.4). A token already
    /// cancelled when the stream is first polled sends nothing.
    ///
    /// [`ErrorKind::Cancelled`]: crate::ErrorKind::Cancelled
    pub cancel: CancellationToken,
    /// Hears each provider-level retry of this request before its wait (SPEC R5.3).
    pub on_retry: Option<RetryObserver>,
    /// Extra HTTP headers for this request only, as `(name, value)`. They replace headers of
    /// the same name set by the provider or under `[providers.ID] headers`. A name or value
    /// that is not valid in HTTP makes the stream fail with `ErrorKind::InvalidRequest`
    /// before anything is sent. Values are never logged or shown in errors.
    pub headers: Vec<(String, String)>,
    /// Deadlines overriding the provider's configured ones.
    pub deadlines: Deadlines,
    /// Skip the provider-level retries of SPEC R5: a failure before the stream is returned at
    /// once, because the caller has somewhere else to send the request (a failover entry,
    /// R12.1) and waiting here would only delay it.
    pub fail_fast: bool,
    /// Hears the status and headers of every HTTP response of this request (each
    /// provider-level attempt, success or failure), before its body is read: the task layer
    /// learns the provider's rate limits from them (R12.3). Keep it short.
    pub on_response: Option<ResponseObserver>,
    /// What the caller sets for this request in place of the handler's configuration: output
    /// limit, sampling, stop sequences, tool choice, reasoning (a gateway's client, SPEC R14.1).
    /// All unset by default: a task's requests are as the configuration makes them.
    pub overrides: RequestOverrides,
    /// Size bounds of the answer (SPEC R4.0b): one line of the body, one tool call's
    /// arguments, the whole answer; past one the stream ends with a `too_large` error that is
    /// never retried. Defaults: 16 MiB, 4 MiB, 64 MiB.
    pub bounds: crate::stream_guard::StreamBounds,
}

/// Request parameters a caller sets for one request (SPEC R14.1, R14.2), in place of what the
/// handler's configuration and the reference's rules would send. `None` (or empty) keeps the
/// handler's own value. A provider that cannot carry one names it in
/// [`ApiHandler::dropped_overrides`] rather than failing the request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestOverrides {
    /// The most output tokens (Anthropic `max_tokens`, OpenAI `max_completion_tokens` /
    /// `max_output_tokens`, Gemini `maxOutputTokens`), in tokens.
    pub max_tokens: Option<u64>,
    /// Sampling temperature, as the dialect defines it (0–2 for OpenAI, 0–1 for Anthropic).
    pub temperature: Option<f64>,
    /// Nucleus sampling probability mass, 0–1.
    pub top_p: Option<f64>,
    /// Sequences that end the answer when generated (OpenAI `stop`, Anthropic
    /// `stop_sequences`, Gemini `stopSequences`); empty: none.
    pub stop: Vec<String>,
    /// Whether and which tool the model must call.
    pub tool_choice: Option<ToolChoice>,
    /// Reasoning effort for models that take one (OpenAI `reasoning_effort`).
    pub reasoning_effort: Option<crate::config::ReasoningEffort>,
    /// Thinking budget in tokens for models that take one (Anthropic `thinking.budget_tokens`,
    /// Gemini `thinkingBudget`); `Some(0)` turns thinking off.
    pub thinking_budget_tokens: Option<u64>,
}

/// Which tool the model must call (OpenAI `tool_choice`, Anthropic `tool_choice`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (`"auto"`; Anthropic `{"type": "auto"}`).
    Auto,
    /// No tool (`"none"`; Anthropic `{"type": "none"}`).
    None,
    /// Some tool (`"required"`; Anthropic `{"type": "any"}`).
    Required,
    /// This tool, by name (`{"type": "function", "function": {"name"}}`; Anthropic
    /// `{"type": "tool", "name"}`).
    Tool(String),
}

/// A wire dialect in which a client's own request body can be sent to a provider unchanged but
/// for the model (SPEC R14.2, [`ApiHandler::forward`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ForwardDialect {
    /// Anthropic Messages (`POST /v1/messages`).
    AnthropicMessages,
    /// OpenAI Chat Completions (`POST /chat/completions`).
    ChatCompletions,
}

/// Receives each HTTP response's status and headers ([`RequestOptions::on_response`]).
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
    /// Options cancelled by `cancel` (and nothing else set).
    pub fn with_cancel(cancel: CancellationToken) -> Self {
        Self {
            cancel,
            ..Self::default()
        }
    }
}

/// One configured provider and model, ready to stream (SPEC R2.1).
///
/// Construction makes no network request (SPEC R3.5); the HTTP request starts when the
/// returned [`ApiStream`] is first polled, and dropping the stream closes the connection.
/// A handler keeps no per-request state: share one (`Arc<dyn ApiHandler>` or a reference)
/// between any number of concurrent requests.
pub trait ApiHandler: Send + Sync {
    /// Starts one streaming request with `system_prompt`, the conversation `messages`
    /// (Anthropic-shaped, oldest first), the `tools` the model may call, and this request's
    /// `options` (cancellation, retry observer, extra headers, deadlines).
    ///
    /// Failures before and during the stream arrive as `Err(ApiError)` items; the stream ends
    /// after the first error.
    fn create_message(
        &self,
        system_prompt: &str,
        messages: &[Message],
        tools: &[ToolSpec],
        options: RequestOptions,
    ) -> ApiStream;

    /// The model this handler uses.
    fn get_model(&self) -> ApiHandlerModel;

    /// The provider id this handler was built for (e.g. `openrouter`), used in messages.
    fn provider_id(&self) -> &str;

    /// The names of the parameters of `overrides` this handler's provider cannot carry
    /// (the request is sent without them), in the client dialect's spelling (`top_p`,
    /// `stop`, `tool_choice`, …) for a gateway's `x-switchyard-dropped` header (SPEC R14.2).
    /// Default: none.
    fn dropped_overrides(&self, _overrides: &RequestOverrides) -> Vec<&'static str> {
        Vec::new()
    }

    /// The dialect this handler sends its requests in when a client's own body of it can be
    /// sent as it is ([`ApiHandler::forward`], SPEC R14.2). Default: none — a gateway
    /// translates every request for this handler.
    fn forwards(&self) -> Option<ForwardDialect> {
        None
    }

    /// Sends a client's own request `body` (a JSON object of [`ApiHandler::forwards`]'s
    /// dialect) faithfully (SPEC R14.2): every field kept but `model` (this handler's),
    /// `stream` (always `true`; Chat also asks for usage in the stream), and what `options`'
    /// overrides set — the output limit (fitted to the model by the caller) and, where the body
    /// sets none, the reasoning. The handler's URL, key, headers, retries and deadlines apply
    /// as to [`ApiHandler::create_message`], and the stream is its chunks, each provider event
    /// also given as it came ([`ApiStreamChunk::Wire`], after its chunks).
    ///
    /// A handler that does not forward, or a body of another dialect, yields one
    /// `ErrorKind::InvalidRequest` error.
    ///
    /// [`ApiStreamChunk::Wire`]: crate::ApiStreamChunk::Wire
    fn forward(
        &self,
        dialect: ForwardDialect,
        _body: serde_json::Map<String, serde_json::Value>,
        _options: RequestOptions,
    ) -> ApiStream {
        refused_forward(self.provider_id(), dialect)
    }

    /// Late usage lookup for providers that report usage out of band (OpenRouter's generation
    /// endpoint). Called when a stream ended without a usage chunk. Default: none.
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
