//! What the dialects' encoders share (SPEC R14.1, R14.4, R14.5): the stream and whole-answer
//! interfaces, how an answer ended, and the HTTP status of each failure kind.

use switchyard_api::{ApiError, ApiStreamChunk, ErrorKind};

/// How an answer ended, for the dialect's stop reason (Chat `finish_reason`, Anthropic
/// `stop_reason`, Responses `status`/`incomplete_details`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model finished (`stop`, `end_turn`, `completed`).
    EndTurn,
    /// The model called tools (`tool_calls`, `tool_use`).
    ToolUse,
    /// The output limit cut the answer (`length`, `max_tokens`, `incomplete`).
    MaxTokens,
}

/// Turns one answer's chunks into a dialect's server-sent events, in order, as they arrive
/// (SPEC R14.1, R14.10: nothing is held back). Each method appends complete SSE events to
/// `out`; the caller flushes `out` to the client after each call.
pub trait StreamEncoder: Send {
    /// The events before any content (Anthropic `message_start`, Responses
    /// `response.created` and `response.in_progress`; none for Chat).
    fn start(&mut self, out: &mut Vec<u8>);
    /// One chunk of the answer (text, reasoning, a tool-call fragment, usage).
    fn chunk(&mut self, chunk: &ApiStreamChunk, out: &mut Vec<u8>);
    /// The end of a complete answer: closing events, the stop reason, final usage, the
    /// dialect's terminator (`[DONE]`, `message_stop`, `response.completed`).
    fn finish(&mut self, stop: StopReason, out: &mut Vec<u8>);
    /// The in-band error of a stream that cannot be completed (SPEC R14.4): Anthropic
    /// `event: error`, Chat a `data: {"error": …}` event and no `[DONE]`, Responses
    /// `response.failed` — never a clean end.
    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>);
    /// A provider event the client got as it came (SPEC R14.2): the encoder takes from it
    /// what its own events must agree with should it continue the answer (Chat: the
    /// completion's `id`, `created` and `model`). Default: nothing.
    fn adopt(&mut self, _event: &[u8]) {}
}

/// Collects one answer's chunks into the dialect's non-streamed JSON response.
pub trait ResponseCollector: Send {
    /// One chunk of the answer.
    fn chunk(&mut self, chunk: &ApiStreamChunk);
    /// The whole response, once the answer ended with `stop`.
    fn finish(&mut self, stop: StopReason) -> serde_json::Value;
}

/// The HTTP status a failure of `kind` is answered with (SPEC R14.5), for OpenAI clients;
/// Anthropic clients get 529 for [`ErrorKind::Overloaded`].
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
