//! How an [`ApiError`] reads: one line naming the provider, what happened and its own words,
//! scrubbed of keys, then the remedy when one is known.
//! Spec: R6.11.

use std::fmt;

use super::api_error::ApiError;
use super::kind::ErrorKind;
use super::remedy;

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind == ErrorKind::SpendCap
            || self.code.as_deref() == Some(super::api_error::NOT_SENT)
        {
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
            ErrorKind::Network
                if self.code.as_deref() == Some(super::api_error::INCOMPLETE_STREAM) =>
            {
                "sent an incomplete response"
            }
            ErrorKind::Network => "could not be reached",
            ErrorKind::Timeout => "took too long to answer",
            ErrorKind::Cancelled => "request was cancelled",
            ErrorKind::Decode => "sent a response that could not be read",
        };
        write!(f, "{who} {what}")?;
        if let Some(status) = self.status {
            write!(f, " (HTTP {status})")?;
        }
        // One line, since provider messages may hold newlines; a server may echo the key back.
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

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
}
