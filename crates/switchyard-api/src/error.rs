//! `ApiError`, `ErrorKind` and the one classification function (SPEC R7).
//!
//! Every failure a provider can produce — an HTTP error status, an error event inside a 200
//! stream, a dropped connection, a body we cannot decode — becomes an [`ApiError`] whose
//! [`ErrorKind`] decides what the task does next (retry, truncate, ask, stop).

use std::fmt;
use std::time::Duration;

use serde::Serialize;

/// What kind of failure happened (SPEC R7.1). Decides retry and recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Missing, invalid or expired credentials (401, 403 `permission_error`, expired tokens).
    Auth,
    /// A spend limit set by the user or organisation was reached.
    SpendLimit,
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
    /// The provider rejected the request as malformed (other 400s, 404, 422).
    InvalidRequest,
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
            Self::QuotaExceeded => "quota_exceeded",
            Self::Entitlement => "entitlement",
            Self::RateLimited => "rate_limited",
            Self::Overloaded => "overloaded",
            Self::ContextWindowExceeded => "context_window_exceeded",
            Self::InvalidRequest => "invalid_request",
            Self::Server => "server",
            Self::Network => "network",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::Decode => "decode",
        }
    }

    /// Kinds that are never retried automatically (SPEC R6.7).
    pub fn is_never_retried(self) -> bool {
        matches!(
            self,
            Self::Auth | Self::SpendLimit | Self::QuotaExceeded | Self::Entitlement
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
/// `Display` is one clear sentence. No field ever holds an API key: messages are built from
/// provider error bodies (which do not echo keys) and from our own wording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiError {
    pub kind: ErrorKind,
    /// The HTTP status, when the failure came with one.
    pub status: Option<u16>,
    /// A human-readable message (the provider's own wording when it sent one).
    pub message: String,
    /// The provider's request id (`request-id`, `x-request-id`, …) when present.
    pub request_id: Option<String>,
    /// The provider's error type or code (`rate_limit_error`, `context_length_exceeded`, …).
    pub code: Option<String>,
    pub provider_id: Option<String>,
    pub model_id: Option<String>,
    /// How long the server asked us to wait before retrying.
    #[serde(serialize_with = "serialize_secs")]
    pub retry_after: Option<Duration>,
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
        }
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
    /// classifying it by status, provider error type/code and message (SPEC R7).
    pub fn from_provider(
        status: Option<u16>,
        code: Option<&str>,
        message: &str,
        retry_after: Option<Duration>,
    ) -> Self {
        let kind = classify(status, code, message);
        Self {
            kind,
            status,
            message: if message.is_empty() {
                default_message(kind, status)
            } else {
                message.to_owned()
            },
            request_id: None,
            code: code.map(str::to_owned),
            provider_id: None,
            model_id: None,
            retry_after: if kind == ErrorKind::RateLimited || kind == ErrorKind::Overloaded {
                retry_after
            } else {
                None
            },
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
        let who = self.provider_id.as_deref().unwrap_or("the provider");
        let what = match self.kind {
            ErrorKind::Auth => "rejected the credentials",
            ErrorKind::SpendLimit => "reports a spend limit reached",
            ErrorKind::QuotaExceeded => "reports the quota or credits are used up",
            ErrorKind::Entitlement => "does not allow this account to use the model",
            ErrorKind::RateLimited => "is rate limiting requests",
            ErrorKind::Overloaded => "is overloaded",
            ErrorKind::ContextWindowExceeded => "says the conversation exceeds the context window",
            ErrorKind::InvalidRequest => "rejected the request",
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
        write!(f, ": {}", self.message)?;
        if let Some(id) = &self.request_id {
            write!(f, " [request id {id}]")?;
        }
        Ok(())
    }
}

impl std::error::Error for ApiError {}

/// Maps a failure to its [`ErrorKind`] from the HTTP status (if any), the provider's error
/// type or code (if any) and its message (SPEC R7).
///
/// Order matters: quota and context-window wordings are checked before the status-based
/// defaults, because OpenAI sends `insufficient_quota` as a 429 (fixture
/// `openai_insufficient_quota`) and context overflows arrive as 400 or 413.
/// Unlike the reference, a 404 is not "auth" and a bare `invalid_request_error` is not an
/// overflow (SPEC R7.2 **Improve**).
pub fn classify(status: Option<u16>, code: Option<&str>, message: &str) -> ErrorKind {
    let code_l = code.unwrap_or("").to_ascii_lowercase();
    let msg = message.to_ascii_lowercase();

    if is_quota(&code_l, &msg, status) {
        return ErrorKind::QuotaExceeded;
    }
    if is_context_window(&code_l, &msg, status) {
        return ErrorKind::ContextWindowExceeded;
    }
    if code_l.contains("spend_limit")
        || msg.contains("spend limit")
        || msg.contains("spending limit")
    {
        return ErrorKind::SpendLimit;
    }
    match code_l.as_str() {
        "authentication_error" | "invalid_api_key" | "unauthenticated" | "unauthorized" => {
            return ErrorKind::Auth;
        }
        "permission_error" | "permission_denied" | "accessdeniedexception" => {
            return ErrorKind::Auth;
        }
        "rate_limit_error"
        | "rate_limit_exceeded"
        | "resource_exhausted"
        | "throttlingexception" => {
            return ErrorKind::RateLimited;
        }
        "overloaded_error" | "unavailable" | "serviceunavailableexception" => {
            return ErrorKind::Overloaded;
        }
        "api_error"
        | "server_error"
        | "internal"
        | "internalserverexception"
        | "modelstreamerrorexception" => return ErrorKind::Server,
        "model_not_found" | "not_found_error" => return ErrorKind::InvalidRequest,
        _ => {}
    }
    match status {
        Some(401) => ErrorKind::Auth,
        Some(403) => {
            if msg.contains("not available") || msg.contains("access to model") {
                ErrorKind::Entitlement
            } else {
                ErrorKind::Auth
            }
        }
        Some(408) => ErrorKind::Timeout,
        Some(413) => ErrorKind::ContextWindowExceeded,
        Some(429) => ErrorKind::RateLimited,
        Some(503) | Some(529) => ErrorKind::Overloaded,
        Some(s) if s >= 500 => ErrorKind::Server,
        Some(s) if (400..500).contains(&s) => ErrorKind::InvalidRequest,
        _ => {
            if msg.contains("overloaded") {
                ErrorKind::Overloaded
            } else if msg.contains("rate limit") {
                ErrorKind::RateLimited
            } else {
                ErrorKind::Server
            }
        }
    }
}

fn is_quota(code: &str, msg: &str, status: Option<u16>) -> bool {
    code == "insufficient_quota"
        || code == "billing_error"
        || status == Some(402)
        || msg.contains("insufficient credits")
        || msg.contains("insufficient balance")
        || msg.contains("credit balance is too low")
        || msg.contains("exceeded your current quota")
}

fn is_context_window(code: &str, msg: &str, status: Option<u16>) -> bool {
    if code == "context_length_exceeded" || status == Some(413) {
        return true;
    }
    // Anthropic: "prompt is too long: 208310 tokens > 200000 maximum".
    msg.contains("prompt is too long")
        || msg.contains("context length")
        || msg.contains("context_length")
        || msg.contains("maximum context")
        || msg.contains("context window")
        || msg.contains("exceeds the context size")
        || msg.contains("input token count exceeds the maximum")
        || msg.contains("input is too long")
        || msg.contains("input length and `max_tokens` exceed context limit")
        || msg.contains("input length and max_tokens exceed context limit")
        || msg.contains("too many total text bytes")
        || msg.contains("please reduce the length of the messages")
        || (status == Some(400)
            && (msg.contains("tokens exceed") || msg.contains("too many tokens")))
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
    fn display_is_one_sentence_with_status_and_request_id() {
        let mut e = ApiError::from_provider(Some(429), Some("rate_limit_error"), "slow down", None);
        e.provider_id = Some("anthropic".into());
        e.request_id = Some("req_1".into());
        assert_eq!(
            e.to_string(),
            "anthropic is rate limiting requests (HTTP 429): slow down [request id req_1]"
        );
    }
}
