//! Failure kinds (SPEC R7.1, R6.7, R7.3–R7.5, R9.5): [`ErrorKind`], what kind of failure
//! happened, which decides retry and recovery, and which kinds are never retried automatically.

use std::fmt;

use serde::Serialize;

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
    /// ([`ApiError::permanent`](crate::error::ApiError::permanent));
    /// [`ApiError::is_retryable`](crate::error::ApiError::is_retryable) answers for both.
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
