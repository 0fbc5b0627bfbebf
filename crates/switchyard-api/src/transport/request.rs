//! What a provider hands the transport: its endpoint, a request as data and its item mapping.
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

/// One HTTP POST as a provider builds it; no `Debug`, since header values may hold the key.
#[derive(Clone)]
pub(crate) struct WireRequest {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl WireRequest {
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
    /// Handles the clean end of the body, reporting a stream the provider did not say was complete.
    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>);
    /// After a body failure, appends what is held back but final, such as billed usage.
    fn on_error(&mut self, _out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {}
    /// Whether the answer already failed and the failure waits for the end, as Chat's named finish
    /// reasons wait for the usage; a forwarding gateway then passes no more events.
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
    /// Takes the size bounds before the first item, for a parser holding content back, such as
    /// Chat's nameless tool arguments.
    /// Spec: R4.0b.
    fn set_bounds(&mut self, _bounds: crate::stream_guard::StreamBounds) {}
    /// Whether content not yet given as chunks is held; a forwarded stream's events wait with it.
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
