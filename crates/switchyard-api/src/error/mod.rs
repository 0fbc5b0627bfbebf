//! `ApiError`, `ErrorKind` and the one classification function (SPEC R7).
//!
//! Every failure a provider can produce — an HTTP error status, an error event inside a 200
//! stream, a dropped connection, a body we cannot decode — becomes an [`ApiError`] whose
//! [`ErrorKind`] decides what the task does next (retry, truncate, ask, stop).

use std::fmt;
use std::time::Duration;

use serde::Serialize;

pub(crate) mod body;
pub(crate) mod finish;
mod remedy;

/// What kind of failure happened (SPEC R7.1). Decides retry and recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Missing, invalid or expired credentials (401, 403 `permission_error`, expired tokens).
    Auth,
    /// A spend limit set by the user or organisation was reached.
    SpendLimit,
    /// A spend cap of Switchyard's own (`max_cost_usd`, `--max-cost`, SPEC R12.2) stops the
    /// task before a request that would cross it. Never retried.
    SpendCap,
    /// Quota or credits exhausted (OpenAI `insufficient_quota`, OpenRouter 402, Anthropic
    /// "credit balance is too low"). Never retried (SPEC R7.3).
    QuotaExceeded,
    /// The account may not use this model or feature.
    Entitlement,
    /// Rate limited (429 and equivalents); `retry_after` holds the server's hint.
    RateLimited,
    /// The provider is overloaded (529, 503, Anthropic `overloaded_error`).
    Overloaded,
    /// The request does not fit the model's context window (SPEC R7.2).
    ContextWindowExceeded,
    /// The provider rejected the request as malformed (other 400s, 404, 422). Never retried
    /// automatically: the same request is rejected the same way (SPEC R7.4).
    InvalidRequest,
    /// The model declined to answer, or a safety or content filter withheld the answer
    /// (SPEC R7.5): Anthropic `stop_reason: refusal`, Gemini `SAFETY`, `RECITATION`,
    /// `PROHIBITED_CONTENT` (and a blocked prompt), OpenAI `content_filter`, Bedrock
    /// `guardrail_intervened`, a moderation 403. Never retried automatically: the same input
    /// gets the same answer. `code` names the reason.
    ContentBlocked,
    /// A server-side failure (500, 502, 504, in-stream `server_error`).
    Server,
    /// The connection could not be made or broke.
    Network,
    /// A deadline passed (connect, first content, idle between chunks).
    Timeout,
    /// The user or caller cancelled the request.
    Cancelled,
    /// The response could not be decoded (wrong content type, bad JSON, oversized line).
    Decode,
}

impl ErrorKind {
    /// The short snake_case name used in `--json` output and fixtures' `class` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::SpendLimit => "spend_limit",
            Self::SpendCap => "spend_cap",
            Self::QuotaExceeded => "quota_exceeded",
            Self::Entitlement => "entitlement",
            Self::RateLimited => "rate_limited",
            Self::Overloaded => "overloaded",
            Self::ContextWindowExceeded => "context_window_exceeded",
            Self::InvalidRequest => "invalid_request",
            Self::ContentBlocked => "content_blocked",
            Self::Server => "server",
            Self::Network => "network",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::Decode => "decode",
        }
    }

    /// Kinds that are never retried automatically: auth, spend limit, quota and entitlement
    /// (SPEC R6.7); an invalid request and a content block, which the same request meets
    /// again (R7.4, R7.5); and a cancellation, which is the user's own choice (R9.5). One
    /// error of another kind may still be one that waiting cannot fix
    /// ([`ApiError::permanent`]); [`ApiError::is_retryable`] answers for both.
    pub fn is_never_retried(self) -> bool {
        matches!(
            self,
            Self::Auth
                | Self::SpendLimit
                | Self::SpendCap
                | Self::QuotaExceeded
                | Self::Entitlement
                | Self::InvalidRequest
                | Self::ContentBlocked
                | Self::Cancelled
        )
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure of one request (DESIGN.md "Key types", SPEC R6.11).
///
/// `Display` is one clear sentence on one line. No field ever holds an API key: messages are
/// built from provider error bodies (which do not echo keys) and from our own wording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiError {
    /// What kind of failure this is (SPEC R7.1); decides retry and recovery.
    pub kind: ErrorKind,
    /// The HTTP status, when the failure came with one.
    pub status: Option<u16>,
    /// A human-readable message (the provider's own wording when it sent one).
    pub message: String,
    /// The provider's request id (`request-id`, `x-request-id`, …) when present.
    pub request_id: Option<String>,
    /// The provider's error type or code (`rate_limit_error`, `context_length_exceeded`,
    /// `RESOURCE_EXHAUSTED`, AWS `ThrottlingException`, …).
    pub code: Option<String>,
    /// The provider id the request went to (`anthropic`, `openrouter`, …).
    pub provider_id: Option<String>,
    /// The model id the request asked for.
    pub model_id: Option<String>,
    /// How long the server asked us to wait before retrying (SPEC R5.2): from the response
    /// headers (`retry-after-ms`, `retry-after`, rate-limit reset headers), Gemini's
    /// `RetryInfo.retryDelay`, or a "try again in 915ms" message. For
    /// [`ErrorKind::QuotaExceeded`] it is the time until the quota resets, when known (C09).
    /// Serialized as seconds (a float).
    #[serde(serialize_with = "serialize_secs")]
    pub retry_after: Option<Duration>,
    /// True when waiting cannot fix this failure, so it is never retried automatically
    /// (SPEC R7.4), whatever its kind: a request larger than the provider's per-minute token
    /// limit (its body says requested N > limit M), a model too large for the server's
    /// memory, a 2xx answer that is an HTML page, a redirect loop. `Display` then says what
    /// to change. Serialized only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub permanent: bool,
}

fn serialize_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

impl ApiError {
    /// A new error of `kind` with `message` and nothing else set.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            status: None,
            message: message.into(),
            request_id: None,
            code: None,
            provider_id: None,
            model_id: None,
            retry_after: None,
            permanent: false,
        }
    }

    /// Marks the error as one that waiting cannot fix ([`ApiError::permanent`]).
    pub fn permanent(mut self) -> Self {
        self.permanent = true;
        self
    }

    /// Sets the provider's error code (or the finish reason that ended the stream).
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// Whether sending the same request again, automatically, can succeed: not for the kinds
    /// that are never retried ([`ErrorKind::is_never_retried`]) nor for a failure that waiting
    /// cannot fix ([`ApiError::permanent`], SPEC R7.4).
    pub fn is_retryable(&self) -> bool {
        !self.kind.is_never_retried() && !self.permanent
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the provider and model the error came from, unless already set.
    pub fn with_origin(mut self, provider_id: &str, model_id: &str) -> Self {
        self.provider_id
            .get_or_insert_with(|| provider_id.to_owned());
        self.model_id.get_or_insert_with(|| model_id.to_owned());
        self
    }

    /// A decode failure (bad JSON, oversized line, wrong framing).
    pub fn decode(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Decode, message)
    }

    /// Builds the error for an HTTP response that failed or carried an in-stream error event,
    /// classifying it by status, provider error type/code and message with [`classify`]
    /// (SPEC R7).
    ///
    /// `retry_after` is the hint the caller already found (headers, Gemini `RetryInfo`); when
    /// it is `None`, a wait named in the message ("Please try again in 915ms", C07) is used
    /// instead (`retry_after_from_message`, measured from the local clock).
    /// The hint is kept whatever the kind: the provider level retries only rate limits
    /// (R5.1), but the task level honours a longer hint for every retryable kind (R6.7), and a
    /// quota error carries the time until its reset (C09). A rate limit worded as a daily
    /// limit is a spent quota unless the hint says the window rolls within the hour (H14).
    /// [`ApiError::permanent`] is set when the words say waiting cannot fix it (SPEC R7.4).
    pub fn from_provider(
        status: Option<u16>,
        code: Option<&str>,
        message: &str,
        retry_after: Option<Duration>,
    ) -> Self {
        let retry_after = retry_after.or_else(|| {
            crate::retry_after::retry_after_from_message(message, std::time::SystemTime::now())
        });
        let kind = classify_with_hint(status, code, message, retry_after);
        Self {
            kind,
            status,
            message: if message.trim().is_empty() {
                default_message(kind, status)
            } else {
                message.to_owned()
            },
            request_id: None,
            code: code.map(str::to_owned),
            provider_id: None,
            model_id: None,
            retry_after,
            permanent: remedy::waiting_cannot_fix(kind, message),
        }
    }
}

fn default_message(kind: ErrorKind, status: Option<u16>) -> String {
    match status {
        Some(s) => format!("the provider answered HTTP {s} ({kind})"),
        None => format!("the provider reported an error ({kind})"),
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind == ErrorKind::SpendCap {
            // Switchyard's own sentence: no provider said it.
            return f.write_str(&self.message);
        }
        let who = self.provider_id.as_deref().unwrap_or("the provider");
        let what = match self.kind {
            ErrorKind::SpendCap => "was not sent: a spend cap is reached",
            ErrorKind::Auth => "rejected the credentials",
            ErrorKind::SpendLimit => "reports a spend limit reached",
            ErrorKind::QuotaExceeded => "reports the quota or credits are used up",
            ErrorKind::Entitlement => "does not allow this account to use the model",
            ErrorKind::RateLimited => "is rate limiting requests",
            ErrorKind::Overloaded => "is overloaded",
            ErrorKind::ContextWindowExceeded => "says the conversation exceeds the context window",
            ErrorKind::InvalidRequest => "rejected the request",
            ErrorKind::ContentBlocked => "withheld the answer",
            ErrorKind::Server => "had a server error",
            ErrorKind::Network => "could not be reached",
            ErrorKind::Timeout => "took too long to answer",
            ErrorKind::Cancelled => "request was cancelled",
            ErrorKind::Decode => "sent a response that could not be read",
        };
        write!(f, "{who} {what}")?;
        if let Some(status) = self.status {
            write!(f, " (HTTP {status})")?;
        }
        // One line: provider messages may hold newlines (Gemini's quota list, C23b).
        // A server may echo the key back in its error body (SPEC R10.5).
        let message = crate::secrets::scrub(&self.message)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let hint = remedy::hint(self);
        match hint {
            Some(hint) => write!(f, ": {}; {hint}", message.trim_end_matches('.'))?,
            None => write!(f, ": {message}")?,
        }
        if let Some(id) = &self.request_id {
            write!(f, " [request id {}]", crate::secrets::scrub(id))?;
        }
        Ok(())
    }
}

impl std::error::Error for ApiError {}

/// Maps a failure to its [`ErrorKind`] from the HTTP status (if any), the provider's error
/// type or code (if any) and its message (SPEC R7).
///
/// `status` is the HTTP status of an error response; `None` (or a 2xx) for an error event
/// inside a 200 stream, in which case a numeric `code` in 400–599 (OpenRouter's
/// `"code": 429`) stands in for it. `code` is the provider's most specific error code or
/// type: OpenAI `code`/`type`, Anthropic `error.type`, Gemini `error.status`
/// (`RESOURCE_EXHAUSTED`), AWS `x-amzn-ErrorType` / `__type` (`ThrottlingException`, with or
/// without its `:http://…` or `…#` decoration). Case does not matter.
///
/// Precedence, first match wins:
///
/// 1. **Spend limits** set by the user or organisation ("spend limit", "spending limit",
///    LiteLLM's "budget has been exceeded"), whatever the status.
/// 2. **Quota and credits** (R7.3) — OpenAI `insufficient_quota`, Anthropic `billing_error`
///    and "credit balance is too low", HTTP 402 (OpenRouter "insufficient credits", DeepSeek
///    "Insufficient Balance"), codes like `usage_quota_exceeded`, and a rate limit whose
///    wording names a long window ("free-models-per-day", "5-hour usage quota": C09, C09b).
///    Checked before the error type because quotas arrive as 429s.
/// 3. **The provider's error type/code** when it is specific: auth, permission, rate limit
///    (`rate_limit_error`, `RESOURCE_EXHAUSTED`, `ThrottlingException`), overload, server,
///    timeout, context length, not found. Generic codes (`invalid_request_error`,
///    `INVALID_ARGUMENT`, `ValidationException`) only decide the fallback.
/// 4. **The HTTP status**: 401 auth; 403 auth, or entitlement / invalid request by wording;
///    408 timeout; 413 context window; 429 rate limited; 503 and 529 overloaded.
/// 5. **Message wordings**, only now: context window (R7.2, every provider's wording), then
///    invalid credentials; so Bedrock's `ThrottlingException` "Too many tokens" (C16) is a
///    rate limit, never an overflow.
/// 6. **Defaults**: other 4xx invalid request, 5xx server; without a status, "overloaded" /
///    "rate limit" wordings, a generic request code, else server.
///
/// **Improve** over the reference (R7.2): a bare Anthropic `invalid_request_error` is not an
/// overflow (C19c, C20, C20b, C37 are invalid requests) and 404 / 413 are not "auth".
pub fn classify(status: Option<u16>, code: Option<&str>, message: &str) -> ErrorKind {
    classify_with_hint(status, code, message, None)
}

/// The longest reset after which a limit worded as a long window ("per day") is still a rate
/// limit rather than a spent quota: 1 hour. OpenAI's requests-per-day limit rolls, freeing a
/// request every few seconds ("Please try again in 8.64s", tests/cases H14), while a spent
/// daily quota resets once (C09: in 24 h).
const ROLLING_WINDOW_MAX_RESET: Duration = Duration::from_secs(3600);

/// [`classify`], with the server's `retry_after` hint when known: a rate limit whose words name
/// a long window ("per day", "daily") is a spent quota, unless the hint says the window rolls
/// within [`ROLLING_WINDOW_MAX_RESET`] (H14, H14b). The hint, not the wording, decides.
pub(crate) fn classify_with_hint(
    status: Option<u16>,
    code: Option<&str>,
    message: &str,
    retry_after: Option<Duration>,
) -> ErrorKind {
    let code = normalize_code(code.unwrap_or(""));
    let msg = strip_urls(&message.to_ascii_lowercase());
    let status = status
        .filter(|s| !(200..300).contains(s))
        .or_else(|| code.parse::<u16>().ok().filter(|c| (400..600).contains(c)));
    let code_kind = kind_from_code(&code, &msg);
    let rate_class =
        status == Some(429) || code_kind == Some(CodeKind::Definite(ErrorKind::RateLimited));

    if code.contains("spend_limit")
        || msg.contains("spend limit")
        || msg.contains("spending limit")
        || msg.contains("budget has been exceeded")
    {
        return ErrorKind::SpendLimit;
    }
    let rolling = retry_after.is_some_and(|d| d <= ROLLING_WINDOW_MAX_RESET);
    if is_quota(&code, &msg, status, rate_class && !rolling) {
        return ErrorKind::QuotaExceeded;
    }
    if let Some(CodeKind::Definite(kind)) = code_kind {
        return kind;
    }
    match status {
        Some(401) => return ErrorKind::Auth,
        Some(402) => return ErrorKind::QuotaExceeded,
        Some(403) => {
            return if is_entitlement(&msg) {
                ErrorKind::Entitlement
            } else if is_content_blocked(&msg) {
                ErrorKind::ContentBlocked
            } else {
                ErrorKind::Auth
            };
        }
        Some(408) => return ErrorKind::Timeout,
        Some(413) => return ErrorKind::ContextWindowExceeded,
        Some(429) => return ErrorKind::RateLimited,
        Some(503) | Some(529) => return ErrorKind::Overloaded,
        _ => {}
    }
    if is_context_window(&msg, status) {
        return ErrorKind::ContextWindowExceeded;
    }
    if is_bad_credentials(&msg) {
        return ErrorKind::Auth;
    }
    if is_entitlement(&msg) && matches!(status, Some(400..=499) | None) {
        return ErrorKind::Entitlement;
    }
    match status {
        Some(s) if (400..500).contains(&s) => ErrorKind::InvalidRequest,
        Some(s) if s >= 500 => ErrorKind::Server,
        // Without a status (an error event inside a 200 stream), the words decide where they
        // say what happened (the reference's ClineError rate-limit and auth patterns).
        _ if msg.contains("overloaded") => ErrorKind::Overloaded,
        _ if says_rate_limited(&msg) => ErrorKind::RateLimited,
        _ if says_unauthenticated(&msg) => ErrorKind::Auth,
        _ if code_kind == Some(CodeKind::Generic) => ErrorKind::InvalidRequest,
        _ => ErrorKind::Server,
    }
}

/// A status-less message that says the request was rate limited: "rate limit", "too many
/// requests", "throttled", "resource exhausted", "status code 429".
fn says_rate_limited(msg: &str) -> bool {
    [
        "rate limit",
        "rate_limit",
        "ratelimit",
        "too many requests",
        "throttl",
        "resource exhausted",
        "resource_exhausted",
        "status code 429",
    ]
    .iter()
    .any(|w| msg.contains(w))
}

/// A status-less message that says the credentials were refused: "unauthorized", "invalid
/// API key", "authentication failed" (the reference's `ClineError` auth patterns, without
/// its over-broad "valid key").
fn says_unauthenticated(msg: &str) -> bool {
    [
        "unauthorized",
        "unauthenticated",
        "authentication failed",
        "authentication_failed",
        "authentication error",
        "invalid_api_key",
        "invalid api key",
        "invalid access token",
        "not authenticated",
        "status code 401",
    ]
    .iter()
    .any(|w| msg.contains(w))
}

/// Lower case, without AWS decorations: `ThrottlingException:http://internal…` and
/// `com.amazonaws.bedrock#ThrottlingException` both become `throttlingexception`.
fn normalize_code(code: &str) -> String {
    let code = code.trim();
    let code = code.split_once(':').map_or(code, |(head, _)| head);
    let code = code.rsplit_once('#').map_or(code, |(_, tail)| tail);
    code.trim().to_ascii_lowercase()
}

/// The message without URLs, so a documentation link such as
/// `…/extended-thinking#max-tokens-and-context-window-size` (C20) cannot match a wording.
fn strip_urls(msg: &str) -> String {
    msg.split_whitespace()
        .filter(|w| !w.contains("://"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a provider error code says on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CodeKind {
    /// The code decides the kind (`rate_limit_error`, `ThrottlingException`, …).
    Definite(ErrorKind),
    /// A generic "bad request" code: the status and message decide; invalid request if nothing
    /// more specific matches.
    Generic,
}

/// The kind a provider error type or code names (lower-cased, see [`normalize_code`]).
/// Sources: Anthropic error types (docs.claude.com/en/api/errors), OpenAI error codes, Google
/// `google.rpc.Code` names, AWS Bedrock Runtime exceptions (botocore `bedrock-runtime`
/// service model), llama.cpp's `exceed_context_size_error`.
fn kind_from_code(code: &str, msg: &str) -> Option<CodeKind> {
    use ErrorKind::*;
    let definite = match code {
        "authentication_error"
        | "invalid_api_key"
        | "invalid_authentication"
        | "unauthenticated"
        | "unauthorized"
        | "expiredtokenexception"
        | "expiredtoken"
        | "unrecognizedclientexception"
        | "invalidsignatureexception"
        | "incompletesignature"
        | "missingauthenticationtokenexception" => Auth,
        "permission_error" | "permission_denied" | "accessdeniedexception" => {
            if is_entitlement(msg) {
                Entitlement
            } else {
                Auth
            }
        }
        "rate_limit_error"
        | "rate_limit_exceeded"
        | "resource_exhausted"
        | "throttlingexception"
        | "too_many_requests" => RateLimited,
        "overloaded_error"
        | "unavailable"
        | "serviceunavailableexception"
        | "modelnotreadyexception" => Overloaded,
        "api_error"
        | "server_error"
        | "internal"
        | "internal_error"
        | "internalserverexception"
        | "modelstreamerrorexception"
        | "modelerrorexception"
        // Groq: the model wrote a tool call that is not valid (H06); sampling noise, retried
        // like Gemini's MALFORMED_FUNCTION_CALL (SPEC R7.5), though sent with a 400.
        | "tool_use_failed" => Server,
        "deadline_exceeded" | "modeltimeoutexception" => Timeout,
        "context_length_exceeded"
        | "exceed_context_size_error"
        | "model_context_window_exceeded" => ContextWindowExceeded,
        "not_found_error" | "not_found" | "model_not_found" | "resourcenotfoundexception" => {
            InvalidRequest
        }
        "invalid_request_error"
        | "invalid_request"
        | "invalid_argument"
        | "failed_precondition"
        | "bad_request"
        | "validationexception"
        | "request_too_large" => return Some(CodeKind::Generic),
        _ => return None,
    };
    Some(CodeKind::Definite(definite))
}

/// Quota or credits used up (SPEC R7.3, CASES C09).
fn is_quota(code: &str, msg: &str, status: Option<u16>, rate_class: bool) -> bool {
    let quota_code = matches!(
        code,
        "insufficient_quota"
            | "billing_error"
            | "usage_quota_exceeded"
            | "quota_exceeded"
            | "insufficient_credits"
            | "insufficient_balance"
            | "payment_required"
            | "servicequotaexceededexception"
    );
    // Gemini's per-minute RESOURCE_EXHAUSTED says "You exceeded your current quota" too
    // (fixture gemini_429, a rate limit); OpenAI's insufficient_quota says the same words.
    let openai_quota_words =
        msg.contains("exceeded your current quota") && code != "resource_exhausted";
    // A 429 that names a long window is a quota, not a momentary limit (C09, C09b).
    let long_window = rate_class
        && [
            "per-day",
            "per day",
            "daily",
            "usage quota",
            "per month",
            "monthly",
        ]
        .iter()
        .any(|w| msg.contains(w));
    quota_code
        || status == Some(402)
        || openai_quota_words
        || long_window
        || msg.contains("insufficient credits")
        || msg.contains("insufficient balance")
        || msg.contains("credit balance is too low")
        || msg.contains("out of credits")
}

/// Every provider's context-window wording (SPEC R7.2; CASES C10–C12, C15). `msg` is lower
/// case. Only consulted after the error type and status, so a throttle that says "Too many
/// tokens" (C16, a 429) never gets here.
fn is_context_window(msg: &str, status: Option<u16>) -> bool {
    const WORDINGS: &[&str] = &[
        // Anthropic: "prompt is too long: 208310 tokens > 200000 maximum".
        "prompt is too long",
        // OpenAI, DeepSeek, OpenRouter, vLLM, Mistral: "This model's maximum context length is
        // 128000 tokens", "This endpoint's maximum context length is …"; OpenRouter (SPEC
        // R7.2) "maximum context".
        "maximum context",
        "context length exceeded",
        "context_length_exceeded",
        // OpenAI Responses: "Your input exceeds the context window of this model".
        "exceeds the context window",
        // Anthropic 413 (C10b): "Request size exceeds model context window".
        "exceeds model context window",
        "context window exceeded",
        // Anthropic via Databricks / Bedrock (C10c): "input length and `max_tokens` exceed
        // context limit: 196758 + 8192 > 200000".
        "exceed context limit",
        "exceeds context limit",
        "exceeds the context limit",
        // OpenAI, Groq, Cerebras, DeepSeek: "Please reduce the length of the messages or
        // completion".
        "reduce the length of the messages",
        // Bedrock ValidationException (C15): "Input is too long for requested model."
        "input is too long",
        "too many total text bytes",
        // xAI: "This model's maximum prompt length is 131072 but the request contains …".
        "maximum prompt length",
        // Cline's fallback for OpenAI-compatible servers: "Input tokens exceed the configured
        // limit".
        "input tokens exceed",
        // Qwen / DashScope (H12): "Range of input length should be [1, 204800]".
        "range of input length",
        // xAI (H17).
        "[input_too_large]",
    ];
    if WORDINGS.iter().any(|w| msg.contains(w)) {
        return true;
    }
    // Word sequences (each after the previous one), from the reference's Bedrock and Vercel
    // patterns (`context-error-handling.ts`, v4.0.10) and the reports since:
    const SEQUENCES: &[&[&str]] = &[
        // Bedrock: "The total number of tokens (210000) exceeds the limit".
        &["total number of tokens", "exceed"],
        // Bedrock / vLLM: "You requested 210000 tokens, which exceeds the limit of 200000".
        &["requested", "tokens", "exceed"],
        // Vercel / Bedrock: "Requested input length 210000 exceeds maximum input length".
        &["requested input length", "exceed"],
        // "Context window overflow", "the context window was exceeded".
        &["context window", "overflow"],
        &["context window", "exceed"],
        // xAI (H17): "[input_too_large] Current message (1149677 tokens) exceeds budget".
        &["tokens", "exceeds budget"],
        // llama.cpp / LM Studio (H13b): "Cannot truncate prompt with n_keep (15028) >= n_ctx
        // (7424)".
        &["n_keep", "n_ctx"],
    ];
    if SEQUENCES.iter().any(|words| in_order(msg, words)) {
        return true;
    }
    // Gemini: "The input token count (1196265) exceeds the maximum number of tokens allowed
    // (1048576)."
    if msg.contains("input token count") && msg.contains("exceeds the maximum") {
        return true;
    }
    // llama.cpp / Ollama: "the request exceeds the available context size, try increasing it".
    if msg.contains("context size") && msg.contains("exceed") {
        return true;
    }
    // LM Studio and others: "… context length of only 4096 tokens", "context overflow".
    if msg.contains("context length") || msg.contains("context overflow") {
        return true;
    }
    // OpenRouter 400s (SPEC R7.2): "tokens exceed", "too many tokens" — only on a 400, where
    // they cannot be a throughput limit.
    status == Some(400) && (msg.contains("tokens exceed") || msg.contains("too many tokens"))
}

/// Whether `words` occur in `msg` in this order, each after the end of the previous one.
fn in_order(msg: &str, words: &[&str]) -> bool {
    let mut rest = msg;
    for w in words {
        match rest.find(w) {
            Some(at) => rest = &rest[at + w.len()..],
            None => return false,
        }
    }
    true
}

/// Wordings of a bad or expired key sent with a 400 (Gemini "API key not valid", "API key
/// expired") or without a status.
fn is_bad_credentials(msg: &str) -> bool {
    msg.contains("api key not valid")
        || msg.contains("invalid api key")
        || msg.contains("incorrect api key")
        || msg.contains("api key expired")
        || msg.contains("invalid x-api-key")
}

/// The account may not use this model, feature or region.
fn is_entitlement(msg: &str) -> bool {
    msg.contains("access to model")
        || msg.contains("access to the model")
        || msg.contains("not available in your")
        || msg.contains("location is not supported")
        || msg.contains("model is not available")
        || msg.contains("not allowed to use")
}

/// A moderation or guardrail refusal (OpenRouter 403 "your input was flagged").
fn is_content_blocked(msg: &str) -> bool {
    msg.contains("flagged") || msg.contains("moderation") || msg.contains("guardrail")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_fixture_wordings() {
        let cases: &[(Option<u16>, Option<&str>, &str, ErrorKind)] = &[
            (
                Some(429),
                Some("insufficient_quota"),
                "You exceeded your current quota",
                ErrorKind::QuotaExceeded,
            ),
            (
                Some(429),
                Some("rate_limit_error"),
                "Number of request tokens has exceeded your per-minute rate limit",
                ErrorKind::RateLimited,
            ),
            (
                Some(400),
                Some("context_length_exceeded"),
                "This model's maximum context length is 128000 tokens.",
                ErrorKind::ContextWindowExceeded,
            ),
            (
                Some(400),
                Some("invalid_request_error"),
                "prompt is too long: 208310 tokens > 200000 maximum",
                ErrorKind::ContextWindowExceeded,
            ),
            (
                Some(400),
                Some("invalid_request_error"),
                "messages: roles must alternate",
                ErrorKind::InvalidRequest,
            ),
            (
                Some(404),
                None,
                "model not found",
                ErrorKind::InvalidRequest,
            ),
            (
                Some(413),
                None,
                "request entity too large",
                ErrorKind::ContextWindowExceeded,
            ),
            (
                Some(402),
                None,
                "Insufficient credits",
                ErrorKind::QuotaExceeded,
            ),
            (
                Some(401),
                Some("authentication_error"),
                "invalid x-api-key",
                ErrorKind::Auth,
            ),
            (
                Some(529),
                Some("overloaded_error"),
                "Overloaded",
                ErrorKind::Overloaded,
            ),
            (
                Some(200),
                Some("overloaded_error"),
                "Overloaded",
                ErrorKind::Overloaded,
            ),
            (
                None,
                Some("server_error"),
                "Provider disconnected unexpectedly",
                ErrorKind::Server,
            ),
            (
                Some(500),
                None,
                "the request exceeds the context size",
                ErrorKind::ContextWindowExceeded,
            ),
            (
                Some(400),
                Some("invalid_request_error"),
                "Your credit balance is too low to access the Anthropic API.",
                ErrorKind::QuotaExceeded,
            ),
        ];
        for (status, code, msg, want) in cases {
            assert_eq!(
                classify(*status, *code, msg),
                *want,
                "{status:?} {code:?} {msg}"
            );
        }
    }

    #[test]
    fn aws_codes_are_normalized() {
        assert_eq!(
            normalize_code(
                "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"
            ),
            "throttlingexception"
        );
        assert_eq!(
            normalize_code("com.amazonaws.bedrock#ValidationException"),
            "validationexception"
        );
        assert_eq!(normalize_code(" RESOURCE_EXHAUSTED "), "resource_exhausted");
    }

    #[test]
    fn numeric_code_stands_in_for_a_missing_status() {
        assert_eq!(
            classify(None, Some("429"), "slow down"),
            ErrorKind::RateLimited
        );
        assert_eq!(
            classify(None, Some("502"), "bad gateway"),
            ErrorKind::Server
        );
        assert_eq!(
            classify(
                None,
                Some("400"),
                "This endpoint's maximum context length is 1 tokens."
            ),
            ErrorKind::ContextWindowExceeded
        );
    }

    #[test]
    fn display_is_one_sentence_with_status_and_request_id() {
        let mut e = ApiError::from_provider(Some(429), Some("rate_limit_error"), "slow down", None);
        e.provider_id = Some("anthropic".into());
        e.request_id = Some("req_1".into());
        assert_eq!(
            e.to_string(),
            "anthropic is rate limiting requests (HTTP 429): slow down [request id req_1]"
        );
    }

    #[test]
    fn display_joins_lines_and_names_quota_reset_and_expired_credentials() {
        let mut e = ApiError::from_provider(
            Some(400),
            Some("INVALID_ARGUMENT"),
            "* contents[23].parts: must not be empty.\n",
            None,
        );
        e.provider_id = Some("gemini".into());
        assert_eq!(
            e.to_string(),
            "gemini rejected the request (HTTP 400): * contents[23].parts: must not be empty."
        );
        let e = ApiError::from_provider(
            Some(429),
            Some("usage_quota_exceeded"),
            "You have exceeded the 5-hour usage quota.",
            Some(Duration::from_secs(5 * 3600)),
        );
        assert_eq!(
            e.to_string(),
            "the provider reports the quota or credits are used up (HTTP 429): You have exceeded \
             the 5-hour usage quota; it resets in about 5 h"
        );
        let e = ApiError::from_provider(
            Some(403),
            Some("ExpiredTokenException"),
            "The security token included in the request is expired",
            None,
        );
        assert_eq!(e.kind, ErrorKind::Auth);
        assert!(
            e.to_string()
                .ends_with("is expired; refresh the credentials and try again"),
            "{e}"
        );
    }

    #[test]
    fn message_hint_fills_a_missing_retry_after() {
        let e = ApiError::from_provider(
            None,
            Some("rate_limit_exceeded"),
            "Rate limit reached for gpt-4o. Please try again in 915ms.",
            None,
        );
        assert_eq!(e.kind, ErrorKind::RateLimited);
        assert_eq!(e.retry_after, Some(Duration::from_millis(915)));
        // A header hint wins over the message.
        let e = ApiError::from_provider(
            Some(429),
            None,
            "Please try again in 915ms.",
            Some(Duration::from_secs(3)),
        );
        assert_eq!(e.retry_after, Some(Duration::from_secs(3)));
    }
}
