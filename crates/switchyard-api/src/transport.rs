//! The HTTP plumbing every provider shares: one lazily built client, the POST that opens a
//! stream, error bodies turned into [`ApiError`]s, content-type checks (SPEC R4.0), and the
//! driver that runs a provider's event parser over the body under one request's options
//! (cancellation R1.4, retry reports R5.3, deadlines R6.4).

use std::future::Future;
use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use tokio::time::Instant;

use crate::error::{ApiError, ErrorKind};
use crate::handler::{DEFAULT_DEADLINES, RequestOptions, RetryObserver, RetryStatus};
use crate::stream::{ApiStream, ApiStreamChunk};
use crate::wire::eventstream::{EventStreamDecoder, EventStreamMessage};
use crate::wire::ndjson::NdjsonDecoder;
use crate::wire::sse::{SseDecoder, SseEvent};

/// Longest part of an error body we read, in bytes; the rest is never buffered.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// The shared HTTP client (rustls, HTTP/2 when offered). Built on first use, so constructing a
/// handler makes no network request and opens no socket (SPEC R3.5).
static HTTP_CLIENT: LazyLock<reqwest::Client> = LazyLock::new(|| {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .tcp_nodelay(true)
        .user_agent(concat!("switchyard/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|e| {
            tracing::error!("could not build the configured HTTP client ({e}); using defaults");
            reqwest::Client::new()
        })
});

/// The shared HTTP client.
pub(crate) fn client() -> &'static reqwest::Client {
    &HTTP_CLIENT
}

/// Who a request goes to, for error messages.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    pub provider_id: String,
    pub model_id: String,
    pub base_url: String,
}

/// The body framing a stream is expected in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Sse,
    Ndjson,
    /// AWS event-stream binary framing (Bedrock ConverseStream).
    EventStream,
}

impl Framing {
    fn accepts(self, content_type: &str) -> bool {
        let ct = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match self {
            Self::Sse => ct == "text/event-stream",
            Self::Ndjson => {
                ct == "application/x-ndjson"
                    || ct == "application/jsonl"
                    || ct == "application/json"
            }
            Self::EventStream => ct == "application/vnd.amazon.eventstream",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Sse => "text/event-stream",
            Self::Ndjson => "application/x-ndjson",
            Self::EventStream => "application/vnd.amazon.eventstream",
        }
    }
}

/// The request id a provider put in the response headers, if any.
fn request_id(headers: &HeaderMap) -> Option<String> {
    [
        "request-id",
        "x-request-id",
        "x-amzn-requestid",
        "x-ds-trace-id",
    ]
    .iter()
    .find_map(|h| headers.get(*h)?.to_str().ok().map(str::to_owned))
}

/// Sends `request` and returns the response once its status and content type say a stream
/// of `framing` follows; otherwise the classified error.
async fn open_stream(
    request: reqwest::RequestBuilder,
    origin: &Origin,
    framing: Framing,
) -> Result<reqwest::Response, ApiError> {
    let response = request.send().await.map_err(|e| send_error(&e, origin))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !response.status().is_success()
        || (!content_type.is_empty() && !framing.accepts(&content_type))
    {
        let headers = response.headers().clone();
        let url = response.url().clone();
        let body = read_limited(response).await;
        let mut err = error_from_body(status, &content_type, &body, &headers, framing);
        err.request_id = request_id(&headers);
        if matches!(status, 404 | 405) {
            // Usually a base URL with a missing or doubled path part: show what was asked.
            err.message = format!("{} (POST {url}; check the base URL)", err.message);
        }
        return Err(err.with_origin(&origin.provider_id, &origin.model_id));
    }
    Ok(response)
}

fn send_error(e: &reqwest::Error, origin: &Origin) -> ApiError {
    let mut cause = String::new();
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    if cause.is_empty() {
        cause = e.to_string();
    }
    let (kind, message) = if e.is_timeout() {
        (
            ErrorKind::Timeout,
            format!("no answer from {} in time ({cause})", origin.base_url),
        )
    } else {
        (
            ErrorKind::Network,
            format!(
                "could not connect to {} ({cause}); check that the server is running and the base URL is right",
                origin.base_url
            ),
        )
    };
    ApiError::new(kind, message).with_origin(&origin.provider_id, &origin.model_id)
}

async fn read_limited(mut response: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BODY_BYTES.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_ERROR_BODY_BYTES {
            break;
        }
    }
    body
}

/// Turns a non-stream response into an error: the provider's JSON error when there is one
/// (OpenAI/Anthropic `{"error":{…}}`, Ollama `{"error":"…"}`, AWS `{"message":…}`, Google
/// `{"error":{"status":…}}`), else a sentence naming the status and content type — an HTML
/// page is never dumped (SPEC R4.0).
pub(crate) fn error_from_body(
    status: u16,
    content_type: &str,
    body: &[u8],
    headers: &HeaderMap,
    framing: Framing,
) -> ApiError {
    let now = SystemTime::now();
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    // AWS names the error type in a header (`x-amzn-ErrorType: ThrottlingException:http://…`);
    // it is the code when the body has none (C15, C16, C17, bedrock_429).
    let aws_type = headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(':').next().unwrap_or(v).trim().to_owned())
        .filter(|v| !v.is_empty());
    // Hints (SPEC R5.2): headers, then Gemini's RetryInfo, then the message (below).
    let retry_after = crate::retry::retry_after_from_headers(headers, now)
        .or_else(|| json.as_ref().and_then(crate::retry::retry_delay_from_body));
    if let Some((code, message)) = json.as_ref().and_then(provider_error_fields) {
        let http_status = (status != 200).then_some(status);
        // Absolute reset times in the message ("will reset at …", C09b) are measured from the
        // response's Date, like the headers' (ApiError::from_provider would use the local clock).
        let retry_after = retry_after.or_else(|| {
            crate::retry::retry_after_from_message(
                &message,
                crate::retry::response_clock(headers, now),
            )
        });
        let code = code.or_else(|| aws_type.clone());
        let mut err = ApiError::from_provider(http_status, code.as_deref(), &message, retry_after);
        err.status = Some(status);
        return err;
    }
    let ct = if content_type.is_empty() {
        "no content type"
    } else {
        content_type
    };
    if (200..300).contains(&status) {
        return ApiError::decode(format!(
            "expected a {} stream but the server answered HTTP {status} with {ct}; check the base URL points at the provider's API",
            framing.name()
        ))
        .with_status(status);
    }
    let mut err = ApiError::from_provider(
        Some(status),
        aws_type.as_deref(),
        &format!("the response was {ct} (body not shown)"),
        retry_after,
    );
    if json.is_none() && !content_type.contains("json") && err.kind == ErrorKind::InvalidRequest {
        // A 4xx HTML page usually means a wrong base URL (a proxy or website answered).
        err.message = format!(
            "the response was {ct} (body not shown); check the base URL points at the provider's API"
        );
    }
    err
}

/// Extracts `(code, message)` from the error shapes providers use.
pub(crate) fn provider_error_fields(v: &serde_json::Value) -> Option<(Option<String>, String)> {
    let as_code = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    // Gemini's streamGenerateContent without `alt=sse` wraps the error in a one-element array.
    if let Some(first) = v.as_array().and_then(|items| items.first()) {
        return provider_error_fields(first);
    }
    match v.get("error") {
        Some(serde_json::Value::String(s)) => Some((None, s.clone())),
        Some(e @ serde_json::Value::Object(_)) => {
            let mut message = e
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or("")
                .to_owned();
            // OpenRouter passes the upstream provider's own error in `metadata.raw` (its
            // errors docs): keep its start, so "prompt is too long" behind a generic
            // "Provider returned error" is still classified. Never an HTML page.
            if let Some(raw) = e.pointer("/metadata/raw").and_then(|r| r.as_str()) {
                let raw = raw.trim();
                if !raw.is_empty() && !raw.starts_with('<') && !message.contains(raw) {
                    let raw: String = raw.chars().take(300).collect();
                    message = format!("{message} (upstream: {raw})");
                }
            }
            // Prefer the specific code (`insufficient_quota`) over the generic type.
            let code = e
                .get("code")
                .and_then(|c| as_code(c).filter(|c| c.parse::<u16>().is_err()))
                .or_else(|| e.get("status").and_then(as_code))
                .or_else(|| e.get("type").and_then(as_code))
                .or_else(|| e.get("code").and_then(as_code));
            Some((code, message))
        }
        _ => {
            // AWS JSON errors: `{"message":…}` (or `Message`), the type in `__type` or the
            // `x-amzn-ErrorType` header; FastAPI-style servers: `{"detail":"…"}`.
            let message = ["message", "Message", "detail"]
                .iter()
                .find_map(|k| v.get(*k)?.as_str())?;
            Some((v.get("__type").and_then(as_code), message.to_owned()))
        }
    }
}

/// A provider's mapping from decoded events to chunks: pure, no I/O.
pub(crate) trait EventParser: Send + 'static {
    /// The item type the decoder yields (an SSE event or an NDJSON line).
    type Event: Send;
    /// Handles one event, appending chunks or an error to `out`.
    fn on_event(&mut self, event: Self::Event, out: &mut Vec<Result<ApiStreamChunk, ApiError>>);
    /// Handles the clean end of the body: flushes what is pending, or reports a stream that
    /// ended before the provider said it was complete.
    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>);
}

/// Incremental decoding of a body into parser events.
trait BodyDecoder: Send {
    type Event;
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Self::Event>) -> Result<(), String>;
    fn finish(&mut self, out: &mut Vec<Self::Event>) -> Result<(), String>;
}

impl BodyDecoder for SseDecoder {
    type Event = SseEvent;
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), String> {
        SseDecoder::feed(self, bytes, out).map_err(|e| e.to_string())
    }
    fn finish(&mut self, _out: &mut Vec<SseEvent>) -> Result<(), String> {
        // An event cut off by the end of the body is discarded per the SSE spec; the parser's
        // own completeness check reports the truncated stream.
        SseDecoder::finish(self);
        Ok(())
    }
}

impl BodyDecoder for NdjsonDecoder {
    type Event = String;
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<String>) -> Result<(), String> {
        NdjsonDecoder::feed(self, bytes, out).map_err(|e| e.to_string())
    }
    fn finish(&mut self, out: &mut Vec<String>) -> Result<(), String> {
        NdjsonDecoder::finish(self, out).map_err(|e| e.to_string())
    }
}

impl BodyDecoder for EventStreamDecoder {
    type Event = EventStreamMessage;
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<EventStreamMessage>) -> Result<(), String> {
        EventStreamDecoder::feed(self, bytes, out).map_err(|e| e.to_string())
    }
    fn finish(&mut self, _out: &mut Vec<EventStreamMessage>) -> Result<(), String> {
        EventStreamDecoder::finish(self).map_err(|e| e.to_string())
    }
}

impl Origin {
    /// The origin of requests made for `mode`.
    pub(crate) fn of(mode: &crate::config::ResolvedMode) -> Self {
        Self {
            provider_id: mode.provider_id.clone(),
            model_id: mode.model_id.clone(),
            base_url: mode.base_url.clone(),
        }
    }
}

/// Sends `request` (built for `mode`) and runs `parser` over its SSE body: the whole life of
/// one provider request, under `options` (see [`drive`]).
pub(crate) fn post_sse<P>(
    mode: &crate::config::ResolvedMode,
    request: reqwest::RequestBuilder,
    parser: P,
    options: RequestOptions,
) -> ApiStream
where
    P: EventParser<Event = SseEvent>,
{
    let build = std::future::ready(Ok(request));
    drive(
        mode,
        build,
        Framing::Sse,
        SseDecoder::new(),
        parser,
        options,
    )
}

/// Like [`post_sse`] for an NDJSON body (Ollama's `/api/chat`).
pub(crate) fn post_ndjson<P>(
    mode: &crate::config::ResolvedMode,
    request: reqwest::RequestBuilder,
    parser: P,
    options: RequestOptions,
) -> ApiStream
where
    P: EventParser<Event = String>,
{
    let build = std::future::ready(Ok(request));
    drive(
        mode,
        build,
        Framing::Ndjson,
        NdjsonDecoder::new(),
        parser,
        options,
    )
}

/// Like [`post_sse`] for a request that needs async work before it can be sent (fetching an
/// OAuth token, signing with freshly loaded credentials): `build` runs once, inside the
/// stream, and its error is the stream's only item. Retries resend the built request (SPEC
/// R5.1); a SigV4 signature stays valid for 15 minutes, far longer than the capped retry
/// delays.
pub(crate) fn post_sse_built<P, F>(
    mode: &crate::config::ResolvedMode,
    build: F,
    parser: P,
    options: RequestOptions,
) -> ApiStream
where
    P: EventParser<Event = SseEvent>,
    F: Future<Output = Result<reqwest::RequestBuilder, ApiError>> + Send + 'static,
{
    drive(
        mode,
        build,
        Framing::Sse,
        SseDecoder::new(),
        parser,
        options,
    )
}

/// [`post_sse_built`] for an AWS event-stream body (Bedrock).
pub(crate) fn post_eventstream_built<P, F>(
    mode: &crate::config::ResolvedMode,
    build: F,
    parser: P,
    options: RequestOptions,
) -> ApiStream
where
    P: EventParser<Event = EventStreamMessage>,
    F: Future<Output = Result<reqwest::RequestBuilder, ApiError>> + Send + 'static,
{
    drive(
        mode,
        build,
        Framing::EventStream,
        EventStreamDecoder::new(),
        parser,
        options,
    )
}

/// Opens the stream, retrying the failures SPEC R5.1 retries at this level (rate limits, and
/// connection errors for local servers) up to the provider's attempt count, with the delay of
/// [`crate::retry::RetryPolicy::delay_for`] (server hints honoured, capped at 60 s, ±10 %
/// jitter). Only failures before the body are retried here, so nothing is ever yielded twice
/// (R5.4). Each retry is reported to `observer` first (R5.3), and its wait moves the
/// first-content deadline `deadline` by as much (the wait is not the provider's slowness).
async fn open_with_retry(
    request: reqwest::RequestBuilder,
    origin: &Origin,
    framing: Framing,
    policy: crate::retry::RetryPolicy,
    observer: Option<&RetryObserver>,
    deadline: &mut Option<Instant>,
    first_content: Duration,
) -> Result<reqwest::Response, ApiError> {
    let mut attempt = 1;
    loop {
        let at = *deadline;
        let send = |request| async move {
            match before(at, open_stream(request, origin, framing)).await {
                Some(sent) => sent,
                None => Err(first_content_timeout(first_content, origin)),
            }
        };
        // A body that cannot be cloned (never the case for our JSON bodies) is sent once.
        let Some(this_try) = request.try_clone() else {
            return send(request).await;
        };
        let err = match send(this_try).await {
            Ok(response) => return Ok(response),
            Err(e) => e,
        };
        if attempt >= policy.max_attempts || !crate::retry::is_provider_retryable(&err, &policy) {
            return Err(err);
        }
        let delay = policy.delay_for(
            attempt,
            err.retry_after,
            crate::retry::DEFAULT_RETRY_AFTER_CAP,
            jitter_unit(),
        );
        if let Some(observer) = observer {
            observer(RetryStatus {
                attempt,
                max_attempts: policy.max_attempts,
                delay,
                error: err,
            });
        }
        if let Some(at) = deadline.as_mut() {
            *at += delay;
        }
        tokio::time::sleep(delay).await;
        attempt += 1;
    }
}

/// A number in [0, 1) for retry jitter. Not cryptographic: it only spreads retries apart.
fn jitter_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// `Some(now + d)`, or `None` (no deadline) when that is past what the clock can hold
/// ([`Duration::MAX`] means "no deadline").
fn deadline_after(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// Runs `fut` until `deadline`: `None` when the deadline passed first.
async fn before<T>(deadline: Option<Instant>, fut: impl Future<Output = T>) -> Option<T> {
    match deadline {
        Some(at) => tokio::time::timeout_at(at, fut).await.ok(),
        None => Some(fut.await),
    }
}

fn first_content_timeout(limit: Duration, origin: &Origin) -> ApiError {
    ApiError::new(
        ErrorKind::Timeout,
        format!(
            "no content arrived within {} s of the request",
            limit.as_secs()
        ),
    )
    .with_origin(&origin.provider_id, &origin.model_id)
}

fn idle_timeout(limit: Duration, origin: &Origin) -> ApiError {
    ApiError::new(
        ErrorKind::Timeout,
        format!(
            "the stream stalled: nothing arrived for {} s",
            limit.as_secs()
        ),
    )
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

/// The stream of one request: builds it (`build`: a ready request, or the async signing or
/// token fetch of Bedrock and Vertex), adds the configured then the request's extra headers,
/// opens it with the provider-level retry, reads the body piece by piece, decodes, maps
/// through the provider's parser and yields chunks. Ends after the first error.
///
/// Per request (`options`, SPEC R2.1): the cancellation token ends the stream with one
/// `Cancelled` error at the next poll, before any further chunk (R1.4); the retry observer
/// hears each provider-level retry (R5.3); the deadlines turn a silent stream into one
/// `Timeout` error (R6.4). Dropping the stream drops the response, which closes the
/// connection.
fn drive<F, D, P>(
    mode: &crate::config::ResolvedMode,
    build: F,
    framing: Framing,
    mut decoder: D,
    mut parser: P,
    options: RequestOptions,
) -> ApiStream
where
    F: Future<Output = Result<reqwest::RequestBuilder, ApiError>> + Send + 'static,
    D: BodyDecoder + 'static,
    D::Event: Send,
    P: EventParser<Event = D::Event>,
{
    let origin = Origin::of(mode);
    let configured = mode.headers.clone();
    let policy = crate::retry::RetryPolicy::for_provider(&mode.provider_id);
    let deadlines = DEFAULT_DEADLINES.with(options.deadlines);
    let RequestOptions {
        cancel,
        on_retry,
        headers: extra,
        ..
    } = options;
    let cancelled = |origin: &Origin| {
        ApiError::new(ErrorKind::Cancelled, "the request was cancelled")
            .with_origin(&origin.provider_id, &origin.model_id)
    };
    Box::pin(async_stream::stream! {
        let extra = match extra_headers(&extra) {
            Ok(map) => map,
            Err(name) => {
                yield Err(ApiError::new(
                    ErrorKind::InvalidRequest,
                    format!(
                        "the extra request header `{name}` is not a valid HTTP header name and value; fix it in the request options"
                    ),
                )
                .with_origin(&origin.provider_id, &origin.model_id));
                return;
            }
        };
        let mut deadline = deadline_after(deadlines.first_content);
        let open = async {
            let built = match before(deadline, build).await {
                Some(built) => built,
                None => Err(first_content_timeout(deadlines.first_content, &origin)),
            };
            let mut request = built.map_err(|e| e.with_origin(&origin.provider_id, &origin.model_id))?;
            // Added after `build`, so never part of a signature.
            for (k, v) in &configured {
                request = request.header(k, v);
            }
            let request = request.headers(extra);
            open_with_retry(
                request,
                &origin,
                framing,
                policy,
                on_retry.as_ref(),
                &mut deadline,
                deadlines.first_content,
            )
            .await
        };
        let opened = tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(cancelled(&origin)),
            r = open => r,
        };
        let mut response = match opened {
            Ok(r) => r,
            Err(e) => {
                yield Err(e);
                return;
            }
        };
        let request_id = request_id(response.headers());
        let finish_err = |mut e: ApiError| {
            if e.request_id.is_none() {
                e.request_id = request_id.clone();
            }
            e.with_origin(&origin.provider_id, &origin.model_id)
        };
        let mut events = Vec::new();
        let mut out = Vec::new();
        // Until the first content chunk the first-content deadline runs; from then on the idle
        // deadline restarts whenever the consumer comes back for more after a chunk.
        let mut content_seen = false;
        let mut restart_idle = false;
        loop {
            if restart_idle {
                deadline = deadline_after(deadlines.idle);
                restart_idle = false;
            }
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(cancelled(&origin)),
                c = before(deadline, response.chunk()) => match c {
                    None if content_seen => Err(idle_timeout(deadlines.idle, &origin)),
                    None => Err(first_content_timeout(deadlines.first_content, &origin)),
                    Some(c) => c.map_err(|e| {
                        ApiError::new(
                            ErrorKind::Network,
                            format!("the connection to {} broke while streaming ({})", origin.base_url, innermost(&e)),
                        )
                    }),
                },
            };
            let ended = match next {
                Ok(Some(bytes)) => {
                    if let Err(msg) = decoder.feed(&bytes, &mut events) {
                        yield Err(finish_err(ApiError::decode(msg)));
                        return;
                    }
                    false
                }
                Ok(None) => {
                    if let Err(msg) = decoder.finish(&mut events) {
                        yield Err(finish_err(ApiError::decode(msg)));
                        return;
                    }
                    true
                }
                Err(e) => {
                    yield Err(finish_err(e));
                    return;
                }
            };
            for event in events.drain(..) {
                parser.on_event(event, &mut out);
            }
            if ended {
                parser.on_end(&mut out);
            }
            for item in out.drain(..) {
                // A cancellation between two chunks of one read takes effect at once.
                if cancel.is_cancelled() {
                    yield Err(cancelled(&origin));
                    return;
                }
                match item {
                    Ok(chunk) => {
                        content_seen |= chunk.is_content();
                        restart_idle = content_seen;
                        yield Ok(chunk);
                    }
                    Err(e) => {
                        yield Err(finish_err(e));
                        return;
                    }
                }
            }
            if ended {
                return;
            }
        }
    })
}

fn innermost(e: &dyn std::error::Error) -> String {
    let mut last = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    last
}

/// Parses an event's JSON data, or reports a decode error quoting its start (never a key:
/// response bodies do not carry request headers).
pub(crate) fn parse_json(data: &str) -> Result<serde_json::Value, Box<ApiError>> {
    serde_json::from_str(data).map_err(|e| {
        let snippet: String = data.chars().take(120).collect();
        Box::new(ApiError::decode(format!(
            "the provider sent an event that is not valid JSON ({e}): {snippet}"
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_bodies_are_never_dumped() {
        let body = b"<html><body><h1>502 Bad Gateway</h1>secret page</body></html>";
        let e = error_from_body(502, "text/html", body, &HeaderMap::new(), Framing::Sse);
        assert_eq!(e.kind, ErrorKind::Server);
        assert!(
            e.to_string()
                .contains("(HTTP 502): the response was text/html"),
            "{e}"
        );
        assert!(!e.message.contains("secret page"));
        let e = error_from_body(
            200,
            "text/html; charset=utf-8",
            body,
            &HeaderMap::new(),
            Framing::Sse,
        );
        assert_eq!(e.kind, ErrorKind::Decode);
        assert!(
            e.message.contains("HTTP 200 with text/html"),
            "{}",
            e.message
        );
    }

    #[test]
    fn provider_error_shapes() {
        let v: serde_json::Value = serde_json::json!({"error":{"message":"m","type":"insufficient_quota","code":"insufficient_quota"}});
        assert_eq!(
            provider_error_fields(&v),
            Some((Some("insufficient_quota".into()), "m".into()))
        );
        let v =
            serde_json::json!({"error":{"code":429,"message":"q","status":"RESOURCE_EXHAUSTED"}});
        assert_eq!(
            provider_error_fields(&v),
            Some((Some("RESOURCE_EXHAUSTED".into()), "q".into()))
        );
        let v = serde_json::json!({"error":"model not found"});
        assert_eq!(
            provider_error_fields(&v),
            Some((None, "model not found".into()))
        );
        let v =
            serde_json::json!({"type":"error","error":{"type":"rate_limit_error","message":"r"}});
        assert_eq!(
            provider_error_fields(&v),
            Some((Some("rate_limit_error".into()), "r".into()))
        );
    }
}
