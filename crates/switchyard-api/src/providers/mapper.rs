//! What the stream mappers share: their output buffer, the adapter for one JSON document per SSE
//! event, and the error of a stream that ends before its provider said it was complete.
//! Spec: R1.1, R1.2.

#[cfg(test)]
pub(crate) mod testing;

use serde_json::Value;

use crate::error::ApiError;
use crate::providers::provider::event_json;
use crate::stream::ApiStreamChunk;
use crate::transport::EventParser;
use crate::wire::sse::{SseEvent, SseEventRef};

/// What a stream mapper appends to for one event: chunks, or the error that ends the stream.
pub(crate) type Chunks = Vec<Result<ApiStreamChunk, ApiError>>;

/// A stream mapper of SSE events that each carry one JSON document, read once; empty events and
/// `[DONE]` are skipped, and data that is not JSON is a decode error.
pub(crate) trait JsonEvents: Send + Unpin + 'static {
    /// Maps one event's JSON; `name` is its SSE event name, for the families that dispatch on it
    /// when the JSON carries no type.
    fn on_json(&mut self, name: &str, v: &Value, out: &mut Chunks);

    /// Handles the clean end of the body.
    fn on_json_end(&mut self, out: &mut Chunks);
}

impl<M: JsonEvents> EventParser for M {
    type Event = SseEvent;

    #[inline]
    fn on_event(&mut self, event: SseEventRef<'_>, out: &mut Chunks) {
        if let Some(v) = event_json(&event, out) {
            self.on_json(event.event, &v, out);
        }
    }

    #[inline]
    fn on_end(&mut self, out: &mut Chunks) {
        self.on_json_end(out);
    }
}

/// Appends the error of a stream cut off before `marker`, the provider's sign of a complete
/// response, unless it `arrived`: a stream that ends early is never a success.
#[inline]
pub(crate) fn require_end(arrived: bool, marker: &str, out: &mut Chunks) {
    if !arrived {
        out.push(Err(ApiError::incomplete_stream(marker)));
    }
}
