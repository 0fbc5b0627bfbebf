//! What the dialects' encoders share: the stream and whole-answer interfaces, how an answer
//! ended, and the HTTP status of each failure kind.
//! Spec: R14.1, R14.2, R14.4, R14.5.

use switchyard_api::{ApiError, ApiStreamChunk, ErrorKind};

/// How an answer ended, for the dialect's stop reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    ToolUse,
    /// The output limit cut the answer.
    MaxTokens,
}

/// Turns one answer's chunks into a dialect's server-sent events as they arrive, holding
/// nothing back; the caller flushes `out` to the client after each call.
/// Spec: R14.10.
pub trait StreamEncoder: Send {
    /// The events before any content; Chat has none.
    fn start(&mut self, out: &mut Vec<u8>);
    fn chunk(&mut self, chunk: &ApiStreamChunk, out: &mut Vec<u8>);
    /// The end of a complete answer: closing events, stop reason, final usage, terminator.
    fn finish(&mut self, stop: StopReason, out: &mut Vec<u8>);
    /// The in-band error of a stream that cannot be completed, never a clean end.
    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>);
    /// A provider event the client got as it came: the encoder takes from it what its own events
    /// must agree with, should it continue the answer.
    fn adopt(&mut self, _event: &[u8]) {}
    /// A chunk the client has in a provider event: the encoder follows it without writing.
    fn mirror(&mut self, chunk: &ApiStreamChunk) {
        self.chunk(chunk, &mut Vec::new());
    }
    /// Writes a provider event as it came, in this dialect's framing of it.
    fn relay(&mut self, event: &[u8], out: &mut Vec<u8>) {
        self.adopt(event);
        out.extend_from_slice(event);
    }
    /// The end of an answer whose own last events were the provider's.
    fn end_relayed(&mut self, _out: &mut Vec<u8>) {}
}

/// Collects one answer's chunks into the dialect's non-streamed JSON response.
pub trait ResponseCollector: Send {
    fn chunk(&mut self, chunk: &ApiStreamChunk);
    /// The whole response, once the answer ended with `stop`.
    fn finish(&mut self, stop: StopReason) -> serde_json::Value;
}

/// The HTTP status a failure of `kind` is answered with; Anthropic's overload is 529.
pub fn http_status(kind: ErrorKind) -> u16 {
    match kind {
        ErrorKind::Auth => 401,
        ErrorKind::Entitlement => 403,
        ErrorKind::SpendLimit | ErrorKind::SpendCap | ErrorKind::QuotaExceeded => 402,
        ErrorKind::RateLimited => 429,
        ErrorKind::Overloaded => 503,
        ErrorKind::ContextWindowExceeded
        | ErrorKind::InvalidRequest
        | ErrorKind::ContentBlocked => 400,
        ErrorKind::Timeout => 504,
        ErrorKind::Cancelled => 499,
        ErrorKind::Server | ErrorKind::Network | ErrorKind::Decode => 502,
    }
}
