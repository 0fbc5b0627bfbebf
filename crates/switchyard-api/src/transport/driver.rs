//! The driver of one provider request: it finishes, sends and maps one request under the
//! provider-level retry and the request's cancellation and deadlines.
//! Spec: R1.4, R5, R6.4.

use std::sync::Arc;

use reqwest::header::HeaderMap;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::chunk_stream::{ChunkStream, Opened};
use super::client::HttpClient;
use super::deadline::{before, cancelled, deadline_after, first_content_timeout};
use super::request::{Endpoint, EventParser, Origin, PendingRequest, Reauthorize, WireRequest};
use super::send::{Sending, extra_headers};
use super::streaming::Response;
use crate::error::{ApiError, ErrorKind};
use crate::handler::{RequestOptions, ResolvedDeadlines, ResponseObserver, RetryObserver};
use crate::retry::RetryPolicy;
use crate::stream::ApiStream;
use crate::wire::Framing;

/// The stream of one request to `endpoint`: `pending` finished, opened under the retry and mapped
/// by `parser`, ending after the first error. Configured headers come after `pending`, so they are
/// never signed; a `401` is sent once more with `reauthorize`'s request.
/// Spec: R1.4, R2.1, R4.0b, R5.3, R6.4, R10.5, R12.1.
pub(crate) fn stream<P: EventParser>(
    endpoint: &Endpoint,
    pending: PendingRequest,
    reauthorize: Reauthorize,
    parser: P,
    options: RequestOptions,
) -> ApiStream {
    let policy = if options.fail_fast {
        // The caller fails over instead: one attempt, no provider-level wait.
        RetryPolicy {
            max_attempts: 1,
            ..endpoint.retry
        }
    } else {
        endpoint.retry
    };
    let deadlines = endpoint.deadlines.with(options.deadlines);
    let RequestOptions {
        cancel,
        on_retry,
        on_response,
        headers: extra,
        bounds,
        ..
    } = options;
    let opening = Opening {
        client: Arc::clone(&endpoint.client),
        origin: endpoint.origin.clone(),
        configured: endpoint.headers.clone(),
        policy,
        on_retry,
        on_response,
        deadlines,
    };
    let opened = opening.open::<P::Event>(extra, pending, reauthorize, cancel.clone());
    let mut parser = parser;
    parser.set_bounds(bounds);
    let forwarding = parser.forwards_events();
    let chunks = Box::pin(ChunkStream::new(
        Box::pin(opened),
        parser,
        cancel,
        endpoint.origin.clone(),
        deadlines,
        bounds.max_line_bytes,
    ));
    // Secrets scrubbed and the answer's size bounded here, once for every provider.
    let origin = &endpoint.origin;
    let origin = Some((origin.provider_id.clone(), origin.model_id.clone()));
    crate::stream_guard::guard_stream_of(chunks, bounds, origin, forwarding)
}

struct Opening {
    client: Arc<HttpClient>,
    origin: Origin,
    configured: Vec<(String, String)>,
    policy: RetryPolicy,
    on_retry: Option<RetryObserver>,
    on_response: Option<ResponseObserver>,
    deadlines: ResolvedDeadlines,
}

impl Opening {
    /// Opens the request: the stream's response with its first-content deadline; a cancellation
    /// ends it.
    async fn open<F: Framing>(
        self,
        extra: Vec<(String, String)>,
        pending: PendingRequest,
        reauthorize: Reauthorize,
        cancel: CancellationToken,
    ) -> Result<Opened, ApiError> {
        let extra = extra_headers(&extra).map_err(|name| {
            ApiError::new(
                ErrorKind::InvalidRequest,
                format!(
                    "the extra request header `{name}` is not a valid HTTP header name and value; fix it in the request options"
                ),
            )
            .with_origin(&self.origin.provider_id, &self.origin.model_id)
        })?;
        let mut deadline = deadline_after(self.deadlines.first_content);
        let response = tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(cancelled(&self.origin)),
            r = self.send::<F>(&extra, pending, reauthorize, &mut deadline) => r,
        }?;
        Ok(Opened { response, deadline })
    }

    /// Finishes `pending` and sends it; a `401` is sent once more with `reauthorize`'s request.
    async fn send<F: Framing>(
        &self,
        extra: &HeaderMap,
        pending: PendingRequest,
        reauthorize: Reauthorize,
        deadline: &mut Option<Instant>,
    ) -> Result<Response, ApiError> {
        let streaming = self.client.streaming().map_err(|message| {
            ApiError::new(ErrorKind::InvalidRequest, message)
                .with_origin(&self.origin.provider_id, &self.origin.model_id)
        })?;
        let wire = self.finish(pending, *deadline).await?;
        let sending = Sending {
            http: &self.client,
            client: streaming,
            configured: &self.configured,
            extra,
            origin: &self.origin,
            policy: self.policy,
            on_retry: self.on_retry.as_ref(),
            on_response: self.on_response.as_ref(),
            first_content: self.deadlines.first_content,
        };
        match (sending.send::<F>(&wire, deadline).await, reauthorize) {
            (Err(e), Some(fresh)) if e.status == Some(401) => {
                let wire = self.finish(fresh, *deadline).await?;
                sending.send::<F>(&wire, deadline).await
            }
            (sent, _) => sent,
        }
    }

    /// The request `pending` makes, such as with a token or signature, before `deadline`.
    async fn finish(
        &self,
        pending: PendingRequest,
        deadline: Option<Instant>,
    ) -> Result<WireRequest, ApiError> {
        match before(deadline, pending).await {
            Some(built) => {
                built.map_err(|e| e.with_origin(&self.origin.provider_id, &self.origin.model_id))
            }
            None => Err(first_content_timeout(
                self.deadlines.first_content,
                &self.origin,
            )),
        }
    }
}
