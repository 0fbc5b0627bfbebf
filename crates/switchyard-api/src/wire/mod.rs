//! Byte-level decoders for the wire formats providers stream in (SPEC R4.0).
//!
//! These are Switchyard's own: exact to their specs, fast, and independent of HTTP.
//! Each decoder is fed the body's bytes in whatever pieces the network delivers and hands back
//! complete items; a UTF-8 character or a line end split across reads is reassembled.

use std::borrow::Cow;

pub mod eventstream;
pub mod ndjson;
pub mod sse;

/// The default cap on one line of a streamed body, in bytes (16 MiB).
///
/// A provider line of several megabytes (a large tool-call argument, a base64 image) is
/// parsed; past this cap the decoder stops with [`WireError::LineTooLong`] instead of growing
/// without bound.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// A failure to decode a streamed body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// One line exceeded the configured cap.
    #[error(
        "one line of the response is longer than the {limit}-byte limit; raise the limit if this provider really sends lines this long"
    )]
    LineTooLong {
        /// The cap in force, in bytes.
        limit: usize,
    },
    /// An AWS event-stream frame failed its prelude or message CRC.
    #[error(
        "an event-stream frame is corrupt: its {which} CRC is {actual:#010x}, expected {expected:#010x}"
    )]
    Crc {
        /// `prelude` or `message`.
        which: &'static str,
        /// The CRC carried by the frame.
        expected: u32,
        /// The CRC computed over the bytes received.
        actual: u32,
    },
    /// An AWS event-stream frame is malformed (bad lengths, header types, or cut off).
    #[error("an event-stream frame is malformed: {0}")]
    Frame(String),
}

/// A body framing as the transport sees it: how the body is decoded into items, and which
/// content types announce it.
pub(crate) trait Framing: Send + Sized + 'static {
    /// The decoder that turns body bytes into items of this framing.
    type Decoder: Send + 'static;
    /// A fresh decoder.
    fn decoder() -> Self::Decoder;
    /// Feeds body bytes, appending complete items to `out`.
    fn feed(
        decoder: &mut Self::Decoder,
        bytes: &[u8],
        out: &mut Vec<Self>,
    ) -> Result<(), WireError>;
    /// The body ended: appends what is still pending, or fails when the body was cut short.
    fn finish(decoder: &mut Self::Decoder, out: &mut Vec<Self>) -> Result<(), WireError>;
    /// The content type this framing is named by in errors.
    const CONTENT_TYPE: &'static str;
    /// Whether a response of `content_type` (parameters ignored, any case) carries this framing.
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

impl Framing for sse::SseEvent {
    type Decoder = sse::SseDecoder;
    fn decoder() -> Self::Decoder {
        sse::SseDecoder::new()
    }
    fn feed(d: &mut Self::Decoder, bytes: &[u8], out: &mut Vec<Self>) -> Result<(), WireError> {
        d.feed(bytes, out)
    }
    fn finish(d: &mut Self::Decoder, _out: &mut Vec<Self>) -> Result<(), WireError> {
        // An event cut off by the end of the body is discarded per the SSE spec; the parser's
        // own completeness check reports the truncated stream.
        d.finish();
        Ok(())
    }
    const CONTENT_TYPE: &'static str = "text/event-stream";
    fn accepts(content_type: &str) -> bool {
        media_type(content_type) == Self::CONTENT_TYPE
    }
}

/// One NDJSON line (Ollama's `/api/chat`).
impl Framing for String {
    type Decoder = ndjson::NdjsonDecoder;
    fn decoder() -> Self::Decoder {
        ndjson::NdjsonDecoder::new()
    }
    fn feed(d: &mut Self::Decoder, bytes: &[u8], out: &mut Vec<Self>) -> Result<(), WireError> {
        d.feed(bytes, out)
    }
    fn finish(d: &mut Self::Decoder, out: &mut Vec<Self>) -> Result<(), WireError> {
        d.finish(out)
    }
    const CONTENT_TYPE: &'static str = "application/x-ndjson";
    fn accepts(content_type: &str) -> bool {
        matches!(
            media_type(content_type).as_str(),
            "application/x-ndjson" | "application/jsonl" | "application/json"
        )
    }
}

/// A body that is one JSON document, not a stream (AskSage's `/query`): nothing is handed on
/// until the body ends, then the whole text once. Bodies past [`DEFAULT_MAX_LINE_BYTES`] are
/// refused rather than buffered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonDocument(pub(crate) String);

impl Framing for JsonDocument {
    type Decoder = Vec<u8>;
    fn decoder() -> Self::Decoder {
        Vec::new()
    }
    fn feed(d: &mut Self::Decoder, bytes: &[u8], _out: &mut Vec<Self>) -> Result<(), WireError> {
        if d.len() + bytes.len() > DEFAULT_MAX_LINE_BYTES {
            return Err(WireError::LineTooLong {
                limit: DEFAULT_MAX_LINE_BYTES,
            });
        }
        d.extend_from_slice(bytes);
        Ok(())
    }
    fn finish(d: &mut Self::Decoder, out: &mut Vec<Self>) -> Result<(), WireError> {
        out.push(Self(utf8_lossy(d).into_owned()));
        d.clear();
        Ok(())
    }
    const CONTENT_TYPE: &'static str = "application/json";
    fn accepts(content_type: &str) -> bool {
        media_type(content_type) == Self::CONTENT_TYPE
    }
}

impl Framing for eventstream::EventStreamMessage {
    type Decoder = eventstream::EventStreamDecoder;
    fn decoder() -> Self::Decoder {
        eventstream::EventStreamDecoder::new()
    }
    fn feed(d: &mut Self::Decoder, bytes: &[u8], out: &mut Vec<Self>) -> Result<(), WireError> {
        d.feed(bytes, out)
    }
    fn finish(d: &mut Self::Decoder, _out: &mut Vec<Self>) -> Result<(), WireError> {
        d.finish()
    }
    const CONTENT_TYPE: &'static str = "application/vnd.amazon.eventstream";
    fn accepts(content_type: &str) -> bool {
        media_type(content_type) == Self::CONTENT_TYPE
    }
}

/// UTF-8 decodes `bytes`, replacing invalid sequences with U+FFFD (WHATWG "UTF-8 decode").
/// Valid input (nearly all of it) is borrowed after one check by `simdutf8`, SIMD-accelerated
/// where the CPU allows (AVX2, SSE4.2, NEON) and `str::from_utf8` on inputs under 64 bytes;
/// invalid input takes `String::from_utf8_lossy`.
pub(crate) fn utf8_lossy(bytes: &[u8]) -> Cow<'_, str> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}
