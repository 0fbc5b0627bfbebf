//! What the fuzz targets share (issue 27): cutting one input into pieces at points drawn from
//! it, each wire decoder run over a list of pieces (so a target can check that any split gives
//! what the whole gives), the CRC fix-up of AWS event-stream frames, and the normalising of
//! made-up tool-call ids before two mappings are compared.

use switchyard_api::wire::WireError;
use switchyard_api::wire::eventstream::{EventStreamDecoder, EventStreamMessage};
use switchyard_api::wire::ndjson::NdjsonDecoder;
use switchyard_api::wire::sse::{SseDecoder, SseEvent};

pub mod headers;
pub mod ingress;
pub mod websocket;

/// `data` cut at the points `seed` picks: each byte of `seed` is the length (1–256) of the next
/// piece, the last piece taking the rest; an empty seed gives one-byte pieces.
pub fn pieces<'a>(data: &'a [u8], seed: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    let mut lens = seed.iter().cycle();
    while !rest.is_empty() {
        let n = if seed.is_empty() {
            1
        } else {
            usize::from(*lens.next().unwrap_or(&0)) + 1
        };
        let (a, b) = rest.split_at(n.min(rest.len()));
        out.push(a);
        rest = b;
    }
    out
}

/// The first `n` bytes of an input (a seed for [`pieces`] or a mode) and the rest.
pub fn split_head(data: &[u8], n: usize) -> (&[u8], &[u8]) {
    data.split_at(n.min(data.len()))
}

/// What an SSE decoder gave for a body: the events, the first error (decoding stops there),
/// and whether the end of the body discarded something.
#[derive(Debug, PartialEq, Eq)]
pub struct SseOutcome {
    pub events: Vec<SseEvent>,
    pub error: Option<WireError>,
    pub discarded: bool,
}

/// `chunks` through one SSE decoder with a line cap of `limit` bytes, owned or borrowed.
pub fn decode_sse(chunks: &[&[u8]], limit: usize, borrowed: bool) -> SseOutcome {
    let mut d = SseDecoder::with_max_line_bytes(limit);
    let mut events = Vec::new();
    for c in chunks {
        let r = if borrowed {
            d.feed_with(c, |e| events.push(e.into_owned()))
        } else {
            d.feed(c, &mut events)
        };
        if let Err(error) = r {
            return SseOutcome {
                events,
                error: Some(error),
                discarded: false,
            };
        }
    }
    SseOutcome {
        discarded: d.finish(),
        events,
        error: None,
    }
}

/// `chunks` through one NDJSON decoder with a line cap of `limit` bytes: the lines, and the
/// first error.
pub fn decode_ndjson(chunks: &[&[u8]], limit: usize) -> (Vec<String>, Option<WireError>) {
    let mut d = NdjsonDecoder::with_max_line_bytes(limit);
    let mut lines = Vec::new();
    for c in chunks {
        if let Err(e) = d.feed(c, &mut lines) {
            return (lines, Some(e));
        }
    }
    let end = d.finish(&mut lines).err();
    (lines, end)
}

/// `chunks` through one event-stream decoder with a frame cap of `limit` bytes: the frames, and
/// the first error (the end of the body's included).
pub fn decode_eventstream(
    chunks: &[&[u8]],
    limit: usize,
) -> (Vec<EventStreamMessage>, Option<WireError>) {
    let mut d = EventStreamDecoder::with_max_message_bytes(limit);
    let mut frames = Vec::new();
    for c in chunks {
        if let Err(e) = d.feed(c, &mut frames) {
            return (frames, Some(e));
        }
    }
    let end = d.finish().err();
    (frames, end)
}

/// `data` with the prelude and message CRC of every frame it holds set right, walking the
/// frames by their own total length, so the decoder reaches the headers and payload; a frame
/// whose length does not fit ends the walk (the rest left as it is).
pub fn fix_crcs(data: &mut [u8]) {
    let mut at = 0;
    while data.len() - at >= 16 {
        let frame = &mut data[at..];
        let total = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        if !(16..=frame.len()).contains(&total) {
            return;
        }
        let prelude = crc32fast::hash(&frame[..8]);
        frame[8..12].copy_from_slice(&prelude.to_be_bytes());
        let message = crc32fast::hash(&frame[..total - 4]);
        frame[total - 4..total].copy_from_slice(&message.to_be_bytes());
        at += total;
    }
}

/// `text` (a mapping printed with `{:?}`) with the counter of every made-up tool-call id set to
/// `N`: each mapping draws its own ids from one process-wide counter.
pub fn generated_ids_alike(text: &str) -> String {
    let sample = switchyard_api::generated_tool_call_id();
    let prefix = match sample.rfind('_') {
        Some(at) => &sample[..=at],
        None => return text.to_owned(),
    };
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at + prefix.len()]);
        out.push('N');
        rest = rest[at + prefix.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// A mapping checked (SPEC R1.2): the same events map to the same chunks every time (made-up
/// ids aside), and a stream of no events is never a success.
pub fn check_mapping(events: usize, map: impl Fn() -> switchyard_api::providers::fuzzing::Mapped) {
    let first = map();
    let again = map();
    assert_eq!(
        generated_ids_alike(&format!("{first:?}")),
        generated_ids_alike(&format!("{again:?}")),
        "the same events mapped differently"
    );
    if events == 0 {
        assert!(
            first.iter().any(Result::is_err),
            "an empty stream mapped as a success: {first:?}"
        );
    }
}

/// The SSE body `data` decoded, then mapped by `family` (the fuzz targets `map_*`).
pub fn sse_mapping(family: switchyard_api::providers::fuzzing::SseFamily, data: &[u8]) {
    let outcome = decode_sse(&[data], 1 << 20, false);
    let events = outcome.events;
    check_mapping(events.len(), || {
        switchyard_api::providers::fuzzing::map_sse(family, &events)
    });
}
