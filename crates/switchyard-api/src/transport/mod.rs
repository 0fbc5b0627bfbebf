//! The one transport every provider goes through: HTTP clients built from each provider's
//! connection settings (SPEC R12.4), and the driver that sends one provider request and runs
//! its stream mapper over the body under that request's options — cancellation (R1.4),
//! provider-level retry and its reports (R5), deadlines (R6.4) — checking status and content
//! type on the way (R4.0).
//!
//! Providers never touch HTTP: they hand the driver a [`WireRequest`] (pure data) and an
//! [`EventParser`] (pure mapping).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use reqwest::header::HeaderMap;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use tokio::time::Instant;

use crate::config::{HttpSettings, Proxy};
use crate::error::body::{error_from_body, innermost, request_id};
use crate::error::{ApiError, ErrorKind};
use crate::handler::{RequestOptions, ResolvedDeadlines, ResponseObserver, RetryObserver};
use crate::retry::{RetryPolicy, send_with_retry};
use crate::stream::{ApiStream, ApiStreamChunk};
use crate::wire::Framing;

mod chunk_stream;
mod streaming;

use chunk_stream::{ChunkStream, Opened};
use streaming::{Body, Response, SendError, Streaming};

/// Longest part of an error body we read, in bytes; the rest is never buffered.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// What makes two clients interchangeable: the settings, and whether TLS is set up at all.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ClientKey {
    settings: HttpSettings,
    /// False for `http://` base URLs: no certificate is ever loaded for them.
    tls: bool,
}

/// The clients alive in this process, by settings: handlers whose providers have equal
/// connection settings share one client and so one connection pool.
static CLIENTS: LazyLock<Mutex<HashMap<ClientKey, Weak<HttpClient>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The HTTP clients for one set of connection settings (rustls, HTTP/2 when offered): the
/// streaming one (hyper-util's, its HTTP/1 read buffer capped; issue 17) and reqwest's, for
/// requests that are not streams and for streams when a proxy may apply.
///
/// Each is built on its first request, so constructing a handler makes no network request and
/// loads no certificate (SPEC R3.5). A client for an `http://` base URL is built without any
/// root certificate: loading the platform's roots (about 150 PEM files on Linux) is skipped.
pub(crate) struct HttpClient {
    key: ClientKey,
    /// Extra roots from the `ca_bundle` file, read when the handler was built.
    extra_roots: Vec<CertificateDer<'static>>,
    client: OnceLock<Result<reqwest::Client, String>>,
    streaming: OnceLock<Result<Streaming, String>>,
    /// The TLS configuration both clients share, built when the first of them is: the
    /// platform's roots are read once.
    tls: OnceLock<Result<rustls::ClientConfig, String>>,
}

impl HttpClient {
    /// The client for `settings` and requests to `base_url`: the one already alive for equal
    /// settings, or a new one (reading the CA bundle now, so a bad file is a configuration
    /// error before any request). Errors name the problem in one sentence.
    pub(crate) fn shared(settings: &HttpSettings, base_url: &str) -> Result<Arc<Self>, String> {
        // TLS is needed for an https:// base URL, and for an https:// proxy whatever the URL.
        let https_proxy =
            matches!(&settings.proxy, Proxy::Url(url) if url.expose().starts_with("https://"));
        let key = ClientKey {
            settings: settings.clone(),
            tls: !base_url.starts_with("http://") || https_proxy,
        };
        let mut clients = CLIENTS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(client) = clients.get(&key).and_then(Weak::upgrade) {
            return Ok(client);
        }
        let extra_roots = match (&key.settings.ca_bundle, key.tls) {
            (Some(path), true) => read_ca_bundle(path)?,
            _ => Vec::new(),
        };
        let client = Arc::new(Self {
            key: key.clone(),
            extra_roots,
            client: OnceLock::new(),
            streaming: OnceLock::new(),
            tls: OnceLock::new(),
        });
        clients.retain(|_, c| c.strong_count() > 0);
        clients.insert(key, Arc::downgrade(&client));
        Ok(client)
    }

    /// The reqwest client, built on first use.
    pub(crate) fn get(&self) -> Result<&reqwest::Client, String> {
        self.client
            .get_or_init(|| self.build())
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The client for streaming requests, built on first use ([`Streaming::new`]).
    fn streaming(&self) -> Result<&Streaming, String> {
        self.streaming
            .get_or_init(|| Streaming::new(&self.key.settings, || self.tls_config()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The TLS configuration of both clients ([`streaming::tls_config`]), built on first use.
    fn tls_config(&self) -> Result<rustls::ClientConfig, String> {
        self.tls
            .get_or_init(|| streaming::tls_config(self.key.tls, &self.extra_roots))
            .clone()
    }

    fn build(&self) -> Result<reqwest::Client, String> {
        let settings = &self.key.settings;
        let mut builder = reqwest::Client::builder()
            .tcp_nodelay(true)
            .user_agent(streaming::USER_AGENT);
        if let Some(timeout) = settings.connect_timeout {
            builder = builder.connect_timeout(timeout);
        }
        builder = match &settings.proxy {
            // reqwest reads HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY by default.
            Proxy::Environment => builder,
            Proxy::Off => builder.no_proxy(),
            Proxy::Url(url) => {
                let proxy = reqwest::Proxy::all(url.expose())
                    .map_err(|_| format!("the proxy {url} is not a usable proxy URL"))?
                    .no_proxy(reqwest::NoProxy::from_env());
                builder.proxy(proxy)
            }
        };
        // The same configuration as the streaming client's: the platform verifier plus the
        // ca_bundle roots, or (http:// only) an empty root store.
        builder = builder.tls_backend_preconfigured(self.tls_config()?);
        builder.build().map_err(|e| {
            format!(
                "could not set up the HTTP client ({}); check the proxy and ca_bundle settings and that the system has CA certificates",
                innermost(&e)
            )
        })
    }
}

/// The certificates of a PEM file (one or more `CERTIFICATE` blocks).
fn read_ca_bundle(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(path)
        .map_err(|e| format!("cannot read the CA bundle {}: {e}", path.display()))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            format!(
                "the CA bundle {} is not a PEM file of certificates ({e})",
                path.display(),
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "the CA bundle {} holds no PEM certificate",
            path.display()
        ));
    }
    Ok(certs)
}

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
}

/// A future that finishes a [`WireRequest`] (a token fetched, a signature added).
pub(crate) type PendingRequest =
    std::pin::Pin<Box<dyn Future<Output = Result<WireRequest, ApiError>> + Send>>;

/// The request to send instead after a `401`, made with a freshly refreshed sign-in (the OAuth
/// providers', [`Provider::reauthorize`](crate::providers::provider)); polled only then.
pub(crate) type Reauthorize = Option<PendingRequest>;

/// Sends the request `build` makes and returns the response once its status and content type
/// say a stream of `F` follows; otherwise the classified error.
///
/// A connection that fails before any byte of the response — a pooled keep-alive connection
/// the server closed while it sat idle, found dead only when the request went out on it — is
/// replaced at once: the request is sent again on a new connection, once, with no wait and no
/// retry counted (SPEC R7.6). Nothing of a response was read, so nothing can be yielded twice.
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
            // No provider error in the body: usually a base URL with a missing or doubled
            // path part. Show what was asked. (A provider's own 404, "model not found" or
            // "no endpoints found", is about the request, not the URL: H15, H31.)
            err.message = format!("{} (POST {url}; check the base URL)", err.message);
        }
        return Err(err.with_origin(&origin.provider_id, &origin.model_id));
    }
    Ok(response)
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
        // A redirect loop, or too many redirects: waiting cannot fix it (SPEC R7.4).
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

/// `Some(now + d)`, or `None` (no deadline) when that is past what the clock can hold
/// ([`Duration::MAX`] means "no deadline").
pub(crate) fn deadline_after(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// Runs `fut` until `deadline`: `None` when the deadline passed first.
pub(crate) async fn before<T>(
    deadline: Option<Instant>,
    fut: impl Future<Output = T>,
) -> Option<T> {
    match deadline {
        Some(at) => tokio::time::timeout_at(at, fut).await.ok(),
        None => Some(fut.await),
    }
}

pub(crate) fn first_content_timeout(limit: Duration, origin: &Origin) -> ApiError {
    ApiError::new(
        ErrorKind::Timeout,
        format!(
            "no content arrived within {} s of the request",
            limit.as_secs()
        ),
    )
    .with_origin(&origin.provider_id, &origin.model_id)
}

pub(crate) fn idle_timeout(limit: Duration, origin: &Origin) -> ApiError {
    ApiError::new(
        ErrorKind::Timeout,
        format!(
            "the stream stalled: nothing arrived for {} s",
            limit.as_secs()
        ),
    )
    .with_origin(&origin.provider_id, &origin.model_id)
}

pub(crate) fn cancelled(origin: &Origin) -> ApiError {
    ApiError::new(ErrorKind::Cancelled, "the request was cancelled")
        .with_origin(&origin.provider_id, &origin.model_id)
}

/// The extra headers of one request as a header map, or the name of the first one that is
/// not valid HTTP (its value is never shown: it may be a credential).
fn extra_headers(headers: &[(String, String)]) -> Result<HeaderMap, &str> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let name_ok = reqwest::header::HeaderName::from_bytes(name.as_bytes());
        let value_ok = reqwest::header::HeaderValue::from_str(value);
        match (name_ok, value_ok) {
            (Ok(n), Ok(v)) => {
                map.append(n, v);
            }
            _ => return Err(name),
        }
    }
    Ok(map)
}

/// The headers of `wire` for the hyper client, as [`http_request`] sets them: its headers,
/// then the configured ones, then the request's extra headers (replacing same-named ones).
fn hyper_headers(
    wire: &WireRequest,
    configured: &[(String, String)],
    extra: &HeaderMap,
) -> Result<HeaderMap, SendError> {
    let mut headers = HeaderMap::new();
    for (name, value) in wire.headers.iter().chain(configured) {
        let name_ok = reqwest::header::HeaderName::from_bytes(name.as_bytes());
        let value_ok = reqwest::header::HeaderValue::from_str(value);
        match (name_ok, value_ok) {
            (Ok(n), Ok(v)) => {
                headers.append(n, v);
            }
            // The value is never shown: it may be a credential.
            _ => {
                return Err(SendError::Invalid(format!(
                    "the request header `{name}` is not a valid HTTP header name and value"
                )));
            }
        }
    }
    for name in extra.keys() {
        headers.remove(name);
    }
    for (name, value) in extra {
        headers.append(name, value.clone());
    }
    Ok(headers)
}

/// The reqwest request for `wire`: its headers, then the configured ones, then the request's
/// extra headers (replacing same-named ones), and its body.
fn http_request(
    client: &reqwest::Client,
    wire: &WireRequest,
    configured: &[(String, String)],
    extra: &HeaderMap,
) -> reqwest::RequestBuilder {
    let mut request = client.post(&wire.url);
    for (k, v) in wire.headers.iter().chain(configured) {
        request = request.header(k, v);
    }
    request.headers(extra.clone()).body(wire.body.clone())
}

/// What sending one request needs besides the request itself.
struct Sending<'a> {
    http: &'a HttpClient,
    client: &'a Streaming,
    configured: &'a [(String, String)],
    extra: &'a HeaderMap,
    origin: &'a Origin,
    policy: RetryPolicy,
    on_retry: Option<&'a RetryObserver>,
    on_response: Option<&'a ResponseObserver>,
    first_content: Duration,
}

impl Sending<'_> {
    /// Sends `wire` under the provider-level retry until a stream of `F` opens or fails.
    async fn send<F: Framing>(
        &self,
        wire: &WireRequest,
        deadline: &mut Option<Instant>,
    ) -> Result<Response, ApiError> {
        send_with_retry(self.policy, self.on_retry, deadline, |at| async move {
            let send = || self.send_once(wire);
            match before(at, open_stream::<F, _>(send, self.origin, self.on_response)).await {
                Some(sent) => sent,
                None => Err(first_content_timeout(self.first_content, self.origin)),
            }
        })
        .await
    }
}

impl Sending<'_> {
    /// Sends `wire` once through the streaming client, and returns the response once its head
    /// is in: through hyper's unless a proxy applies to the URL, else through reqwest. A
    /// redirect the hyper client gets is sent again through reqwest, which follows redirects
    /// by its policy (at most 10, and the error of R7.4 for a loop).
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

    /// Sends `wire` once through reqwest.
    async fn send_reqwest(&self, wire: &WireRequest) -> Result<Response, SendError> {
        let client = self.http.get().map_err(SendError::Invalid)?;
        http_request(client, wire, self.configured, self.extra)
            .send()
            .await
            .map(Response::Reqwest)
            .map_err(SendError::Reqwest)
    }
}

/// The stream of one request to `endpoint`: finishes the request (`pending`: ready, or the
/// token fetch or signing of Bedrock and Vertex; configured headers are added after it, so
/// they are never signed), opens it under the provider-level retry, reads the body piece by
/// piece, decodes, maps through `parser` and yields chunks. Ends after the first error.
///
/// A `401` answer is sent once more with `reauthorize`'s request when there is one (an OAuth
/// sign-in the server stopped accepting before its expiry), after the sign-in is refreshed.
///
/// Per request (`options`, SPEC R2.1): the cancellation token ends the stream with one
/// `Cancelled` error at the next poll, before any further chunk (R1.4); the retry observer
/// hears each provider-level retry (R5.3); the deadlines (the request's, else the endpoint's)
/// turn a silent stream into one `Timeout` error (R6.4). Dropping the stream drops the
/// response, which closes the connection.
pub(crate) fn stream<P: EventParser>(
    endpoint: &Endpoint,
    pending: PendingRequest,
    reauthorize: Reauthorize,
    parser: P,
    options: RequestOptions,
) -> ApiStream {
    let client = Arc::clone(&endpoint.client);
    let origin = endpoint.origin.clone();
    let configured = endpoint.headers.clone();
    let policy = if options.fail_fast {
        // The caller fails over instead (SPEC R12.1): one attempt, no provider-level wait.
        crate::retry::RetryPolicy {
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
        ..
    } = options;
    let opening = {
        let origin = origin.clone();
        let cancel = cancel.clone();
        async move {
            let extra = extra_headers(&extra).map_err(|name| {
                ApiError::new(
                    ErrorKind::InvalidRequest,
                    format!(
                        "the extra request header `{name}` is not a valid HTTP header name and value; fix it in the request options"
                    ),
                )
                .with_origin(&origin.provider_id, &origin.model_id)
            })?;
            let mut deadline = deadline_after(deadlines.first_content);
            let open = async {
                let streaming = client.streaming().map_err(|message| {
                    ApiError::new(ErrorKind::InvalidRequest, message)
                        .with_origin(&origin.provider_id, &origin.model_id)
                })?;
                let wire = match before(deadline, pending).await {
                    Some(built) => {
                        built.map_err(|e| e.with_origin(&origin.provider_id, &origin.model_id))?
                    }
                    None => return Err(first_content_timeout(deadlines.first_content, &origin)),
                };
                let sending = Sending {
                    http: &client,
                    client: streaming,
                    configured: &configured,
                    extra: &extra,
                    origin: &origin,
                    policy,
                    on_retry: on_retry.as_ref(),
                    on_response: on_response.as_ref(),
                    first_content: deadlines.first_content,
                };
                match (
                    sending.send::<P::Event>(&wire, &mut deadline).await,
                    reauthorize,
                ) {
                    (Err(e), Some(fresh)) if e.status == Some(401) => {
                        let wire = match before(deadline, fresh).await {
                            Some(built) => built.map_err(|e| {
                                e.with_origin(&origin.provider_id, &origin.model_id)
                            })?,
                            None => {
                                return Err(first_content_timeout(
                                    deadlines.first_content,
                                    &origin,
                                ));
                            }
                        };
                        sending.send::<P::Event>(&wire, &mut deadline).await
                    }
                    (sent, _) => sent,
                }
            };
            let response = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(cancelled(&origin)),
                r = open => r,
            }?;
            Ok(Opened { response, deadline })
        }
    };
    Box::pin(ChunkStream::new(
        Box::pin(opening),
        parser,
        cancel,
        origin,
        deadlines,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_shared_by_equal_settings_and_scheme() {
        let settings = HttpSettings::default();
        let a = HttpClient::shared(&settings, "https://api.example.com/v1").unwrap();
        let b = HttpClient::shared(&settings, "https://other.example.com").unwrap();
        assert!(Arc::ptr_eq(&a, &b), "equal settings share one client");
        let plain = HttpClient::shared(&settings, "http://127.0.0.1:8089/v1").unwrap();
        assert!(
            !Arc::ptr_eq(&a, &plain),
            "http:// gets its own client, without TLS roots"
        );
        assert!(!plain.key.tls);
        let via_https_proxy = HttpSettings {
            proxy: Proxy::Url(crate::config::ProxyUrl::new("https://proxy.corp:3128").unwrap()),
            ..HttpSettings::default()
        };
        let proxied = HttpClient::shared(&via_https_proxy, "http://127.0.0.1:8089/v1").unwrap();
        assert!(proxied.key.tls, "an https:// proxy needs the roots");
        let other = HttpSettings {
            connect_timeout: Some(Duration::from_secs(1)),
            ..HttpSettings::default()
        };
        let c = HttpClient::shared(&other, "https://api.example.com/v1").unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        // A client lives while a handler holds it; then the next one is built afresh.
        drop((a, b));
        let d = HttpClient::shared(&settings, "https://api.example.com/v1").unwrap();
        assert!(
            d.client.get().is_none() && d.streaming.get().is_none(),
            "nothing built before the first request"
        );
    }
}
