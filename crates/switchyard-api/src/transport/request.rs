//! What a provider hands the transport (SPEC R4.0): where its requests go ([`Endpoint`],
//! [`Origin`]), one request as pure data ([`WireRequest`]), and its pure mapping from decoded
//! items to chunks ([`EventParser`]).

use std::future::Future;
use std::sync::Arc;

use super::client::HttpClient;
use crate::error::ApiError;
use crate::handler::ResolvedDeadlines;
use crate::retry::RetryPolicy;
use crate::stream::ApiStreamChunk;
use crate::wire::Framing;

/// Who a request goes to, for error messages.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    pub(crate) provider_id: String,
    pub(crate) model_id: String,
    pub(crate) base_url: String,
}

/// Everything about a provider's requests that is the same for all of them: the client, where
/// they go, the configured extra headers, the retry policy and the deadlines.
pub(crate) struct Endpoint {
    pub(crate) client: Arc<HttpClient>,
    pub(crate) origin: Origin,
    /// `[providers.ID] headers`, added to every request after the provider's own.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) retry: RetryPolicy,
    pub(crate) deadlines: ResolvedDeadlines,
}

/// One HTTP POST as a provider builds it: pure data. Header values may hold the key; this type
/// has no `Debug` so they cannot be printed by accident.
#[derive(Clone)]
pub(crate) struct WireRequest {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl WireRequest {
    /// A POST of the JSON `body` to `url`.
    pub(crate) fn json(url: String, body: &serde_json::Value) -> Self {
        Self {
            url,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    /// [`WireRequest::json`] answered with server-sent events.
    pub(crate) fn sse(url: String, body: &serde_json::Value) -> Self {
        Self::json(url, body).header("accept", "text/event-stream")
    }

    /// Adds a header.
    pub(crate) fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// Adds the header `name: value` when there is a value (a key that may be missing).
    pub(crate) fn header_opt(self, name: &str, value: Option<&str>) -> Self {
        match value {
            Some(v) => self.header(name, v),
            None => self,
        }
    }

    /// Adds `authorization: Bearer {key}` when there is a key.
    pub(crate) fn bearer(self, key: Option<&str>) -> Self {
        match key {
            Some(k) => self.header("authorization", format!("Bearer {k}")),
            None => self,
        }
    }
}

/// A provider's mapping from decoded items to chunks: pure, no I/O.
pub(crate) trait EventParser: Send + Unpin + 'static {
    /// The item the body decodes into (an SSE event, an NDJSON line, an event-stream frame);
    /// it decides the decoder and the content types accepted.
    type Event: Framing;
    /// Handles one item (for SSE a borrowed [`SseEventRef`](crate::wire::sse::SseEventRef),
    /// valid for the call), appending chunks or an error to `out`.
    fn on_event(
        &mut self,
        event: <Self::Event as Framing>::Item<'_>,
        out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
    );
    /// Handles the clean end of the body: flushes what is pending, or reports a stream that
    /// ended before the provider said it was complete.
    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>);
    /// The body failed (a broken connection, a deadline, bytes that do not decode, a
    /// cancellation): appends what the parser holds back that is already final — usage the
    /// provider reported, which it bills — to be yielded before the error. Default: nothing.
    fn on_error(&mut self, _out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {}
    /// Whether the answer has already failed and the failure is held until the stream ends
    /// (Chat's named finish reasons wait for the usage that may follow, SPEC R7.5): a
    /// forwarding gateway gives no more of the provider's events (SPEC R14.2), which would
    /// tell its client the answer ended well. Default: no.
    fn failing(&self) -> bool {
        false
    }
    /// Whether the stream gives the provider's own events ([`ApiStreamChunk::Wire`]: a
    /// forwarded request, SPEC R14.2), which the stream's guard then guards too. Default: no.
    fn forwards_events(&self) -> bool {
        false
    }
    /// Takes the request's size bounds (SPEC R4.0b) before the first item: a parser that
    /// holds content back before it can give it as chunks (Chat's tool-call arguments that
    /// arrive before the call's name) bounds what it holds with them. Default: nothing.
    fn set_bounds(&mut self, _bounds: crate::stream_guard::StreamBounds) {}
    /// Whether the parser holds content of the items so far that it has not given as chunks
    /// yet (Chat's arguments before a call's name): a forwarded stream's events wait with it
    /// ([`WireEvent::held`](crate::stream::WireEvent), SPEC R10.5). Default: no.
    fn holds_content(&self) -> bool {
        false
    }
}

/// A future that finishes a [`WireRequest`] (a token fetched, a signature added).
pub(crate) type PendingRequest =
    std::pin::Pin<Box<dyn Future<Output = Result<WireRequest, ApiError>> + Send>>;

/// The request to send instead after a `401`, made with a freshly refreshed sign-in (the OAuth
/// providers', [`Provider::reauthorize`](crate::providers::provider)); polled only then.
pub(crate) type Reauthorize = Option<PendingRequest>;
