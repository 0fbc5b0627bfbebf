//! One request's failure: [`ApiError`], its builders, and whether it may be sent again.
//! Spec: R6.11, R5.2, R7.4.

use std::time::Duration;

use serde::Serialize;

use super::classify::{classify_with_hint, waiting_cannot_fix};
use super::kind::ErrorKind;

pub const INCOMPLETE_STREAM: &str = "incomplete_stream";

/// The code of an error given before anything was sent; its `Display` is our own sentence.
pub const NOT_SENT: &str = "not_sent";

/// A failure of one request; its `Display` is one line, and no field ever holds an API key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiError {
    pub kind: ErrorKind,
    pub status: Option<u16>,
    /// A readable message, the provider's own wording when it sent one.
    pub message: String,
    pub request_id: Option<String>,
    /// The provider's error type or code, such as `rate_limit_error`.
    pub code: Option<String>,
    pub provider_id: Option<String>,
    pub model_id: Option<String>,
    /// How long the server asked us to wait, or the time until a spent quota resets; in seconds.
    #[serde(serialize_with = "serialize_secs")]
    pub retry_after: Option<Duration>,
    /// True when waiting cannot fix this failure, which is then never retried.
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
            permanent: waiting_cannot_fix(kind, message),
        }
    }

    pub fn permanent(mut self) -> Self {
        self.permanent = true;
        self
    }

    /// Sets the provider's error code, or the finish reason that ended the stream.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// Whether sending the same request again automatically can succeed.
    pub fn is_retryable(&self) -> bool {
        !self.kind.is_never_retried() && !self.permanent
    }

    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub fn with_origin(mut self, provider_id: &str, model_id: &str) -> Self {
        self.provider_id
            .get_or_insert_with(|| provider_id.to_owned());
        self.model_id.get_or_insert_with(|| model_id.to_owned());
        self
    }

    /// A decode failure: bad JSON, an oversized line, the wrong framing.
    pub fn decode(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Decode, message)
    }

    /// A stream that ended before the provider's sign of a complete response, `missing`: a retried
    /// `Network` error.
    pub fn incomplete_stream(missing: &str) -> Self {
        Self::new(
            ErrorKind::Network,
            format!("the stream ended before the response was complete (no {missing})"),
        )
        .with_code(INCOMPLETE_STREAM)
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
