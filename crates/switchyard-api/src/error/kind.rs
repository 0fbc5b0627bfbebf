//! What kind of failure happened, and which kinds are never retried automatically.
//! Spec: R7.1, R6.7, R7.3, R7.4, R7.5, R9.5.

use std::fmt;

use serde::Serialize;

/// What kind of failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Missing, invalid or expired credentials.
    Auth,
    /// A spend limit set by the user or organisation was reached.
    SpendLimit,
    /// Switchyard's own spend cap stopped the task before a request that would cross it.
    SpendCap,
    /// Quota or credits used up.
    QuotaExceeded,
    Entitlement,
    /// Rate limited; `retry_after` holds the server's hint.
    RateLimited,
    Overloaded,
    ContextWindowExceeded,
    /// The provider rejected the request as malformed, as it would the same request again.
    InvalidRequest,
    /// A model or filter declined or withheld the answer; `code` names the reason.
    ContentBlocked,
    Server,
    Network,
    /// A deadline passed: connect, first content or idle.
    Timeout,
    Cancelled,
    Decode,
}

impl ErrorKind {
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

    /// Kinds never retried automatically: those waiting cannot fix or the request meets again.
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
