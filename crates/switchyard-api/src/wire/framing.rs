//! The [`Framing`] trait: which decoder a body takes and which content types announce it.
//! Spec: R4.0.

use super::decode::{WireError, utf8_lossy};
use super::eventstream;
use super::ndjson;
use super::sse;

pub(crate) trait Framing: Send + Sized + 'static {
    type Decoder: Send + Unpin + 'static;
    /// What a parser is handed per item; SSE's is borrowed, so nothing is allocated per event.
    type Item<'a>;
    /// A fresh decoder whose items may be up to `max_line_bytes` long.
    /// Spec: R4.0b.
    fn decoder(max_line_bytes: usize) -> Self::Decoder;
    /// Feeds body bytes and hands each item they complete to `on_item`, even when an error follows.
    fn feed_each<F: FnMut(Self::Item<'_>)>(
        decoder: &mut Self::Decoder,
        bytes: &[u8],
        on_item: F,
    ) -> Result<(), WireError>;
    /// The body ended: hands over what is still pending, or fails when the body was cut short.
    fn finish_each<F: FnMut(Self::Item<'_>)>(
        decoder: &mut Self::Decoder,
        on_item: F,
    ) -> Result<(), WireError>;
    /// The bytes of `item` as the provider's dialect writes them, for a forwarding gateway; `None`
    /// for a framing no dialect uses.
    /// Spec: R14.2.
    fn reframe(_item: &Self::Item<'_>) -> Option<Vec<u8>> {
        None
    }
    /// The content type this framing is named by in errors.
    const CONTENT_TYPE: &'static str;
    /// Whether a response of `content_type` carries this framing, ignoring parameters and case.
    fn accepts(content_type: &str) -> bool;
}

/// The media type of a `content-type` value: lower case, without parameters.
fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Runs an owned-item decoder step and hands its items over one by one.
fn each<T, F: FnMut(T)>(
    step: impl FnOnce(&mut Vec<T>) -> Result<(), WireError>,
    mut on_item: F,
) -> Result<(), WireError> {
    let mut items = Vec::new();
    let result = step(&mut items);
    items.into_iter().for_each(&mut on_item);
    result
}

impl Framing for sse::SseEvent {
    type Decoder = sse::SseDecoder;
    type Item<'a> = sse::SseEventRef<'a>;
    fn decoder(max_line_bytes: usize) -> Self::Decoder {
        sse::SseDecoder::with_max_line_bytes(max_line_bytes)
    }
    fn feed_each<F: FnMut(Self::Item<'_>)>(
        d: &mut Self::Decoder,
        bytes: &[u8],
        on_item: F,
    ) -> Result<(), WireError> {
        d.feed_with(bytes, on_item)
    }
    fn finish_each<F: FnMut(Self::Item<'_>)>(
        d: &mut Self::Decoder,
        _on_item: F,
    ) -> Result<(), WireError> {
        // The SSE spec discards an event cut off by the body's end; the parser reports it.
        d.finish();
        Ok(())
    }
    fn reframe(item: &Self::Item<'_>) -> Option<Vec<u8>> {
        Some(sse::reframe(item))
    }
    const CONTENT_TYPE: &'static str = "text/event-stream";
    fn accepts(content_type: &str) -> bool {
        media_type(content_type) == Self::CONTENT_TYPE
    }
}

/// One NDJSON line, as Ollama's `/api/chat` streams.
impl Framing for String {
    type Decoder = ndjson::NdjsonDecoder;
    type Item<'a> = String;
    fn decoder(max_line_bytes: usize) -> Self::Decoder {
        ndjson::NdjsonDecoder::with_max_line_bytes(max_line_bytes)
    }
    fn feed_each<F: FnMut(String)>(
        d: &mut Self::Decoder,
        bytes: &[u8],
        on_item: F,
    ) -> Result<(), WireError> {
        each(|out| d.feed(bytes, out), on_item)
    }
    fn finish_each<F: FnMut(String)>(d: &mut Self::Decoder, on_item: F) -> Result<(), WireError> {
        each(|out| d.finish(out), on_item)
    }
    const CONTENT_TYPE: &'static str = "application/x-ndjson";
    fn accepts(content_type: &str) -> bool {
        matches!(
            media_type(content_type).as_str(),
            "application/x-ndjson" | "application/jsonl" | "application/json"
        )
    }
}

/// A body that is one JSON document, as AskSage's `/query` answers, handed on whole at its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonDocument(pub(crate) String);

#[derive(Debug)]
pub(crate) struct DocumentDecoder {
    bytes: Vec<u8>,
    limit: usize,
}

impl Framing for JsonDocument {
    type Decoder = DocumentDecoder;
    type Item<'a> = JsonDocument;
    fn decoder(max_line_bytes: usize) -> Self::Decoder {
        DocumentDecoder {
            bytes: Vec::new(),
            limit: max_line_bytes,
        }
    }
    fn feed_each<F: FnMut(Self)>(
        d: &mut Self::Decoder,
        bytes: &[u8],
        _on_item: F,
    ) -> Result<(), WireError> {
        if d.bytes.len() + bytes.len() > d.limit {
            return Err(WireError::LineTooLong { limit: d.limit });
        }
        d.bytes.extend_from_slice(bytes);
        Ok(())
    }
    fn finish_each<F: FnMut(Self)>(d: &mut Self::Decoder, mut on_item: F) -> Result<(), WireError> {
        on_item(Self(utf8_lossy(&d.bytes).into_owned()));
        d.bytes.clear();
        Ok(())
    }
    const CONTENT_TYPE: &'static str = "application/json";
    fn accepts(content_type: &str) -> bool {
        media_type(content_type) == Self::CONTENT_TYPE
    }
}

impl Framing for eventstream::EventStreamMessage {
    type Decoder = eventstream::EventStreamDecoder;
    type Item<'a> = eventstream::EventStreamMessage;
    fn decoder(max_line_bytes: usize) -> Self::Decoder {
        // A frame is this framing's line; both caps are 16 MiB by default.
        eventstream::EventStreamDecoder::with_max_message_bytes(max_line_bytes)
    }
    fn feed_each<F: FnMut(Self)>(
        d: &mut Self::Decoder,
        bytes: &[u8],
        on_item: F,
    ) -> Result<(), WireError> {
        each(|out| d.feed(bytes, out), on_item)
    }
    fn finish_each<F: FnMut(Self)>(d: &mut Self::Decoder, _on_item: F) -> Result<(), WireError> {
        d.finish()
    }
    const CONTENT_TYPE: &'static str = "application/vnd.amazon.eventstream";
    fn accepts(content_type: &str) -> bool {
        media_type(content_type) == Self::CONTENT_TYPE
    }
}
