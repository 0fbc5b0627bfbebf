//! One request's failure (SPEC R6.11, R5.2, R7.4): [`ApiError`], with the provider's status,
//! code, request id and retry-after hint (DESIGN.md "Key types"), its builders, and whether it
//! may be sent again.

use std::time::Duration;

use serde::Serialize;

use super::kind::ErrorKind;

/// The code of [`ApiError::incomplete_stream`].
pub const INCOMPLETE_STREAM: &str = "incomplete_stream";

/// The code of an error Switchyard gives before sending anything (the request would not fit
/// the model's context window, SPEC R8.2): its `Display` is Switchyard's own sentence, never
/// "the provider says".
pub const NOT_SENT: &str = "not_sent";

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

    /// A stream that connected and then ended before the provider's sign of a complete
    /// response (`missing`: `[DONE]`, `message_stop`, …; SPEC R1.2, issue 26 item 4): kind
    /// `Network` (a cut connection; retried), code [`INCOMPLETE_STREAM`], shown as "sent an
    /// incomplete response", never as "could not be reached".
    pub fn incomplete_stream(missing: &str) -> Self {
        Self::new(
            ErrorKind::Network,
            format!("the stream ended before the response was complete (no {missing})"),
        )
        .with_code(INCOMPLETE_STREAM)
    }
}
