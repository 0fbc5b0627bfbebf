//! Sending one request and opening its stream under the provider-level retry; a status or content
//! type that says no stream follows becomes the classified error.
//! Spec: R4.0, R4.0b, R5, R7.4, R7.6.

use std::future::Future;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;

use super::client::HttpClient;
use super::deadline::{before, first_content_timeout};
use super::request::{Origin, WireRequest};
use super::streaming::{self, Body, Response, SendError, Streaming};
use crate::error::body::{error_from_body, request_id};
use crate::error::{ApiError, ErrorKind};
use crate::handler::{ResponseObserver, RetryObserver};
use crate::retry::{RetryPolicy, send_with_retry};
use crate::wire::Framing;

/// Longest part of an error body we read, in bytes; the rest is never buffered.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Sends the request and returns the response once it says a stream of `F` follows. A pooled
/// connection the server closed while idle fails before any byte; the request then goes once more
/// on a new connection, uncounted, as nothing can be yielded twice.
/// Spec: R7.6.
async fn open_stream<F: Framing, S: Future<Output = Result<Response, SendError>>>(
    send: impl Fn() -> S,
    origin: &Origin,
    on_response: Option<&ResponseObserver>,
) -> Result<Response, ApiError> {
    let response = match send().await {
        Err(e) if e.died_before_response() => {
            tracing::debug!(
                "the connection to {} closed before any response ({}); sending again on a new connection",
                origin.base_url,
                e.cause()
            );
            send().await
        }
        sent => sent,
    }
    .map_err(|e| send_error(&e, origin))?;
    let status = response.status();
    tracing::info!(
        "response: HTTP {status}, content-type `{}`",
        response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default()
    );
    if let Some(observe) = on_response {
        observe(status, response.headers());
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !(200..300).contains(&status) || (!content_type.is_empty() && !F::accepts(&content_type)) {
        let headers = response.headers().clone();
        let url = response.url().to_owned();
        let body = read_limited(response.into_body()).await;
        let mut err = error_from_body(status, &content_type, &body, &headers, F::CONTENT_TYPE);
        err.request_id = request_id(&headers);
        if matches!(status, 404 | 405) && err.code.is_none() && !provider_spoke(&body) {
            // No provider error in the body, whose own 404 is about the request: usually a base URL
            // with a missing or doubled path part, so show what was asked.
            err.message = format!("{} (POST {url}; check the base URL)", err.message);
        }
        return Err(err.with_origin(&origin.provider_id, &origin.model_id));
    }
    if let Some(encoding) = unasked_encoding(response.headers()) {
        return Err(ApiError::new(
            ErrorKind::Decode,
            format!(
                "the response body is compressed (content-encoding `{encoding}`), which Switchyard \
                 did not ask for and does not decode; check the base URL, or a proxy between \
                 Switchyard and the server that compresses responses"
            ),
        )
        .permanent()
        .with_origin(&origin.provider_id, &origin.model_id));
    }
    Ok(response)
}

/// The unasked `content-encoding` of a stream response, refused at once and never retried.
/// Spec: R4.0b.
fn unasked_encoding(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(reqwest::header::CONTENT_ENCODING)?;
    let value = String::from_utf8_lossy(value.as_bytes())
        .trim()
        .to_ascii_lowercase();
    let unasked = value
        .split(',')
        .map(str::trim)
        .any(|coding| !coding.is_empty() && coding != "identity");
    // The header's value is the server's own word, not a secret; shown short.
    unasked.then(|| value.chars().take(40).collect())
}

/// `url` as a `-v` log line shows it: without the query string and fragment, where a provider may
/// carry the key, and without any `user:password@`.
fn shown_url(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..end];
    match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if at > scheme && !url[scheme + 3..at].contains('/') => {
            format!("{}{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// Whether `body` holds a provider's own JSON error.
fn provider_spoke(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .as_ref()
        .and_then(crate::error::body::provider_error_fields)
        .is_some()
}

fn send_error(e: &SendError, origin: &Origin) -> ApiError {
    let cause = e.cause();
    let error = if let SendError::Invalid(message) = e {
        ApiError::new(
            ErrorKind::InvalidRequest,
            format!("{message}; check the base URL and the configured headers"),
        )
        .permanent()
    } else if e.is_timeout() {
        ApiError::new(
            ErrorKind::Timeout,
            format!("no answer from {} in time ({cause})", origin.base_url),
        )
    } else if e.is_redirect() {
        // A redirect loop or too many redirects: waiting cannot fix it.
        ApiError::new(
            ErrorKind::Network,
            format!(
                "{} redirected the request too many times ({cause}); check the base URL",
                origin.base_url
            ),
        )
        .permanent()
    } else {
        ApiError::new(
            ErrorKind::Network,
            format!(
                "could not connect to {} ({cause}); check that the server is running and the base URL is right",
                origin.base_url
            ),
        )
    };
    error.with_origin(&origin.provider_id, &origin.model_id)
}

async fn read_limited(mut from: Body) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = from.chunk().await {
        let room = MAX_ERROR_BODY_BYTES.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_ERROR_BODY_BYTES {
            break;
        }
    }
    body
}

/// The extra headers as a map, or the name of the first invalid one; values may be credentials.
pub(super) fn extra_headers(headers: &[(String, String)]) -> Result<HeaderMap, &str> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let (n, v) = header(name, value).ok_or(name.as_str())?;
        map.append(n, v);
    }
    Ok(map)
}

/// `name: value` as an HTTP header, or `None` when either is not valid HTTP.
fn header(name: &str, value: &str) -> Option<(HeaderName, HeaderValue)> {
    let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
    Some((name, HeaderValue::from_str(value).ok()?))
}

/// The headers of `wire` for the hyper client, in the order [`http_request`] sets them: its own,
/// the configured ones, then the extra ones replacing same-named ones.
fn hyper_headers(
    wire: &WireRequest,
    configured: &[(String, String)],
    extra: &HeaderMap,
) -> Result<HeaderMap, SendError> {
    let mut headers = HeaderMap::new();
    for (name, value) in wire.headers.iter().chain(configured) {
        // The value is never shown: it may be a credential.
        let (n, v) = header(name, value).ok_or_else(|| {
            SendError::Invalid(format!(
                "the request header `{name}` is not a valid HTTP header name and value"
            ))
        })?;
        headers.append(n, v);
    }
    for name in extra.keys() {
        headers.remove(name);
    }
    for (name, value) in extra {
        headers.append(name, value.clone());
    }
    if !headers.contains_key(reqwest::header::ACCEPT_ENCODING) {
        headers.insert(reqwest::header::ACCEPT_ENCODING, IDENTITY.clone());
    }
    Ok(headers)
}

/// `accept-encoding: identity` unless configured otherwise: some CDN edges compress an SSE stream
/// for a client that names no encoding, as Wei-Shaw/claude-relay-service#1039 reports.
static IDENTITY: HeaderValue = HeaderValue::from_static("identity");

/// The reqwest request for `wire`, with headers in the order [`hyper_headers`] sets them.
fn http_request(
    client: &reqwest::Client,
    wire: &WireRequest,
    configured: &[(String, String)],
    extra: &HeaderMap,
) -> reqwest::RequestBuilder {
    let mut request = client.post(&wire.url);
    let mut asks_encoding = extra.contains_key(reqwest::header::ACCEPT_ENCODING);
    for (k, v) in wire.headers.iter().chain(configured) {
        asks_encoding |= k.eq_ignore_ascii_case("accept-encoding");
        request = request.header(k, v);
    }
    if !asks_encoding {
        request = request.header(reqwest::header::ACCEPT_ENCODING, IDENTITY.clone());
    }
    request.headers(extra.clone()).body(wire.body.clone())
}

/// What sending one request needs besides the request itself.
pub(super) struct Sending<'a> {
    pub(super) http: &'a HttpClient,
    pub(super) client: &'a Streaming,
    pub(super) configured: &'a [(String, String)],
    pub(super) extra: &'a HeaderMap,
    pub(super) origin: &'a Origin,
    pub(super) policy: RetryPolicy,
    pub(super) on_retry: Option<&'a RetryObserver>,
    pub(super) on_response: Option<&'a ResponseObserver>,
    pub(super) first_content: Duration,
}

impl Sending<'_> {
    pub(super) async fn send<F: Framing>(
        &self,
        wire: &WireRequest,
        deadline: &mut Option<Instant>,
    ) -> Result<Response, ApiError> {
        send_with_retry(self.policy, self.on_retry, deadline, |at| async move {
            let send = || self.send_once(wire);
            tracing::info!(
                "request: POST {} ({} model {}, {} bytes)",
                shown_url(&wire.url),
                self.origin.provider_id,
                self.origin.model_id,
                wire.body.len()
            );
            let sent =
                match before(at, open_stream::<F, _>(send, self.origin, self.on_response)).await {
                    Some(sent) => sent,
                    None => Err(first_content_timeout(self.first_content, self.origin)),
                };
            if let Err(e) = &sent {
                let retry = if e.is_retryable() {
                    "retryable"
                } else {
                    "not retried"
                };
                tracing::info!("request failed ({retry}): {e}");
            }
            sent
        })
        .await
    }
}

impl Sending<'_> {
    /// Sends `wire` once through hyper's client, or reqwest's when a proxy applies; a redirect the
    /// hyper client gets is sent again through reqwest, which follows it.
    async fn send_once(&self, wire: &WireRequest) -> Result<Response, SendError> {
        if !matches!(self.client, Streaming::Reqwest) {
            let headers = hyper_headers(wire, self.configured, self.extra)?;
            let request = streaming::hyper_request(&wire.url, headers, &wire.body)?;
            let Some(client) = self.client.direct(request.uri()) else {
                return self.send_reqwest(wire).await;
            };
            let response = client.request(request).await.map_err(SendError::Hyper)?;
            let redirect = matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308)
                && response.headers().contains_key(reqwest::header::LOCATION);
            if !redirect {
                return Ok(Response::Hyper {
                    response,
                    url: wire.url.clone(),
                });
            }
        }
        self.send_reqwest(wire).await
    }

    async fn send_reqwest(&self, wire: &WireRequest) -> Result<Response, SendError> {
        let client = self.http.get().map_err(SendError::Invalid)?;
        http_request(client, wire, self.configured, self.extra)
            .send()
            .await
            .map(Response::Reqwest)
            .map_err(SendError::Reqwest)
    }
}

#[cfg(test)]
mod tests {
    use super::shown_url;

    #[test]
    fn a_shown_url_has_no_query_fragment_or_user_info() {
        assert_eq!(
            shown_url(
                "https://g.example/v1beta/models/m:streamGenerateContent?alt=sse&key=AIza-secret"
            ),
            "https://g.example/v1beta/models/m:streamGenerateContent"
        );
        assert_eq!(shown_url("http://u:pw@h:1/v1/chat#x"), "http://h:1/v1/chat");
        assert_eq!(shown_url("http://h/a@b"), "http://h/a@b");
    }
}
