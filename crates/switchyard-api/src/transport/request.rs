//! What a provider hands the transport: where its requests go, one request as data and its mapping
//! from decoded items to chunks.
//! Spec: R4.0.

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

/// The settings all of a provider's requests share.
pub(crate) struct Endpoint {
    pub(crate) client: Arc<HttpClient>,
    pub(crate) origin: Origin,
    /// `[providers.ID] headers`, added to every request after the provider's own.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) retry: RetryPolicy,
    pub(crate) deadlines: ResolvedDeadlines,
}

/// One HTTP POST as a provider builds it. Header values may hold the key, so this type has no
/// `Debug` to print them by accident.
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

    pub(crate) fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// Adds the header when there is a value, such as a key that may be missing.
    pub(crate) fn header_opt(self, name: &str, value: Option<&str>) -> Self {
        match value {
            Some(v) => self.header(name, v),
            None => self,
        }
    }

    pub(crate) fn bearer(self, key: Option<&str>) -> Self {
        match key {
            Some(k) => self.header("authorization", format!("Bearer {k}")),
            None => self,
        }
    }
}

/// A provider's mapping from decoded items to chunks: pure, no I/O.
pub(crate) trait EventParser: Send + Unpin + 'static {
    /// The item the body decodes into, which decides the decoder and the content types accepted.
    type Event: Framing;
    fn on_event(
        &mut self,
        event: <Self::Event as Framing>::Item<'_>,
        out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
    );
    /// Handles the clean end of the body: flushes what is pending, or reports a stream that
    /// ended before the provider said it was complete.
    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>);
    /// After the body failed, appends what the parser holds back that is already final, such as
    /// usage the provider bills, to be yielded before the error.
    fn on_error(&mut self, _out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {}
    /// Whether the answer already failed, the failure held until the stream ends as Chat's named
    /// finish reasons wait for the usage. A forwarding gateway then gives no more of the provider's
    /// events, which would tell its client the answer ended well.
    /// Spec: R7.5, R14.2.
    fn failing(&self) -> bool {
        false
    }
    /// Whether the stream gives the provider's own events as [`ApiStreamChunk::Wire`], which the
    /// stream's guard then guards too.
    /// Spec: R14.2.
    fn forwards_events(&self) -> bool {
        false
    }
    /// Takes the request's size bounds before the first item, for a parser that holds content back,
    /// such as Chat's tool-call arguments that arrive before the call's name.
    /// Spec: R4.0b.
    fn set_bounds(&mut self, _bounds: crate::stream_guard::StreamBounds) {}
    /// Whether the parser holds content it has not given as chunks yet; a forwarded stream's events
    /// wait with it, marked `WireEvent::held`.
    /// Spec: R10.5.
    fn holds_content(&self) -> bool {
        false
    }
}

/// A future that finishes a [`WireRequest`], such as by fetching a token or adding a signature.
pub(crate) type PendingRequest =
    std::pin::Pin<Box<dyn Future<Output = Result<WireRequest, ApiError>> + Send>>;

/// The request to send instead after a `401`, with a freshly refreshed sign-in.
pub(crate) type Reauthorize = Option<PendingRequest>;
