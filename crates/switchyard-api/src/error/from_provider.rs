//! A provider's failure as an error: [`ApiError::from_provider`] classifies it, finds its
//! retry-after hint, and marks it permanent when its words say waiting cannot fix it.

use std::time::Duration;

use super::api_error::ApiError;
use super::classify::classify_with_hint;
use super::kind::ErrorKind;
use super::remedy;

impl ApiError {
    /// Builds the error for an HTTP response that failed or carried an in-stream error event.
    /// Without a `retry_after` from the caller, a wait named in the message is used; the hint is
    /// kept whatever the kind, since the task level honours it for every retryable kind.
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

#[cfg(test)]
mod tests {
    use super::*;

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
