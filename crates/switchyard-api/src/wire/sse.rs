//! A server-sent events decoder following the WHATWG HTML standard's event stream parsing. Events
//! in the common `event:`/`data:` shape lying wholly in one piece are borrowed without a copy.
//! Spec: R4.0.

use std::borrow::Cow;
use std::ops::Range;

use super::decode::{
    DEFAULT_MAX_LINE_BYTES, WireError, check_line, clear_buffer, skip_bom, utf8_lossy,
};

const DEFAULT_EVENT_TYPE: &str = "message";

/// One dispatched server-sent event, owned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The last non-empty `event` field's value, or `"message"`.
    pub event: String,
    /// The `data` values joined by LF, with no trailing LF.
    pub data: String,
    /// The last valid `id` so far in the stream, `Some("")` for an empty one.
    pub id: Option<String>,
    /// The reconnection time in milliseconds from this event's valid `retry` field, if any.
    pub retry: Option<u64>,
}

/// One dispatched server-sent event, borrowed for the callback; see [`SseEvent`] for the fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEventRef<'a> {
    pub event: &'a str,
    pub data: &'a str,
    pub id: Option<&'a str>,
    pub retry: Option<u64>,
}

impl SseEventRef<'_> {
    pub fn into_owned(self) -> SseEvent {
        SseEvent {
            event: self.event.to_owned(),
            data: self.data.to_owned(),
            id: self.id.map(str::to_owned),
            retry: self.retry,
        }
    }
}

/// The event being built on the general path.
#[derive(Debug, Default)]
struct EventBuilder {
    event_type: String,
    /// The `data` values joined by LF, decoded as UTF-8 only at dispatch.
    data: Vec<u8>,
    has_data: bool,
    last_event_id: Option<String>,
    retry: Option<u64>,
}

impl EventBuilder {
    /// Whether the fast path would dispatch the same next event: no data, retry or type pending.
    fn is_clean(&self) -> bool {
        !self.has_data && self.event_type.is_empty() && self.retry.is_none()
    }

    fn line<F: FnMut(SseEventRef<'_>)>(&mut self, line: &[u8], on_event: &mut F) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            // A line starting with a colon is a comment.
            Some(0) => return,
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            // No colon: the whole line is the field name and the value is empty.
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event_type.clear();
                self.event_type.push_str(&utf8_lossy(value));
            }
            // An id containing NUL is ignored.
            b"id" if memchr::memchr(0, value).is_none() => {
                let value = utf8_lossy(value);
                match &mut self.last_event_id {
                    Some(id) => {
                        id.clear();
                        id.push_str(&value);
                    }
                    None => self.last_event_id = Some(value.into_owned()),
                }
            }
            b"retry" => {
                if let Some(ms) = parse_retry(value) {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
    }

    /// An empty line dispatches the event, or only resets the buffers when there is no data.
    fn dispatch<F: FnMut(SseEventRef<'_>)>(&mut self, on_event: &mut F) {
        let retry = self.retry.take();
        if self.has_data {
            self.has_data = false;
            let data = utf8_lossy(&self.data);
            on_event(SseEventRef {
                event: event_type(&self.event_type),
                data: &data,
                id: self.last_event_id.as_deref(),
                retry,
            });
            clear_buffer(&mut self.data);
        }
        self.event_type.clear();
    }
}

fn event_type(buffer: &str) -> &str {
    if buffer.is_empty() {
        DEFAULT_EVENT_TYPE
    } else {
        buffer
    }
}

/// An event in the fast path's shape; the offsets are from the start of the input.
struct FastEvent {
    event: Option<Range<usize>>,
    data: Range<usize>,
    len: usize,
}

/// The event at the start of `bytes` if it is an optional `event:` line, one `data:` line and an
/// empty line, each ended by LF or CRLF. The general path would dispatch the same event.
fn fast_event(bytes: &[u8], limit: usize) -> Option<FastEvent> {
    let mut start = 0;
    let mut event = None;
    if bytes.starts_with(b"event:") {
        let (value, next) = field_line(bytes, b"event:".len(), limit)?;
        event = Some(value);
        start = next;
    }
    let rest = &bytes[start..];
    if !rest.starts_with(b"data:") {
        return None;
    }
    let (data, next) = field_line(rest, b"data:".len(), limit)?;
    let end = match &rest[next..] {
        [b'\n', ..] => 1,
        [b'\r', b'\n', ..] => 2,
        _ => return None,
    };
    Some(FastEvent {
        event,
        data: start + data.start..start + data.end,
        len: start + next + end,
    })
}

/// The value's range in the field line at `bytes`' start and the offset past its LF or CRLF; `None`
/// when that line end is not in `bytes` or the line is over `limit`.
#[inline]
fn field_line(bytes: &[u8], name_len: usize, limit: usize) -> Option<(Range<usize>, usize)> {
    let end = memchr::memchr2(b'\n', b'\r', bytes)?;
    if end > limit {
        return None;
    }
    let next = match bytes[end..] {
        [b'\n', ..] => end + 1,
        [b'\r', b'\n', ..] => end + 2,
        _ => return None,
    };
    let start = if bytes.get(name_len) == Some(&b' ') {
        name_len + 1
    } else {
        name_len
    };
    Some((start..end, next))
}

/// The text of `bytes[range]`, borrowed from the already validated `text` when it covers the range.
/// A field value starts and ends next to ASCII bytes, and CR, LF, `:` and space never occur inside
/// a multi-byte sequence, so decoding a value on its own gives what decoding the stream would.
#[inline]
fn text_of<'a>(text: Option<&'a str>, bytes: &'a [u8], range: Range<usize>) -> Cow<'a, str> {
    match text.and_then(|text| text.get(range.clone())) {
        Some(slice) => Cow::Borrowed(slice),
        None => utf8_lossy(&bytes[range]),
    }
}

/// A `retry` value: ASCII digits in base ten that fit in a `u64`.
fn parse_retry(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// An incremental decoder of a `text/event-stream` body whose events do not depend on where it was
/// split; after a failed feed, abandon it or call [`Self::finish`].
#[derive(Debug)]
pub struct SseDecoder {
    builder: EventBuilder,
    /// The incomplete line carried over, never holding CR or LF; at the start, the BOM's part seen.
    partial: Vec<u8>,
    /// The cap on one line in bytes, line end not counted.
    limit: usize,
    /// No byte past a possible BOM has been seen yet.
    at_start: bool,
    /// The last piece ended with a CR, so an LF starting the next piece ends no further line.
    after_cr: bool,
    /// Off only in the tests that check the general path alone gives the same events.
    fast_path: bool,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::with_max_line_bytes(DEFAULT_MAX_LINE_BYTES)
    }

    /// A decoder whose lines may be up to `limit` bytes long, line end not counted.
    pub fn with_max_line_bytes(limit: usize) -> Self {
        Self {
            builder: EventBuilder::default(),
            partial: Vec::new(),
            limit,
            at_start: true,
            after_cr: false,
            fast_path: true,
        }
    }

    /// Feeds the next piece and appends the events it completes, owned; see [`Self::feed_with`].
    pub fn feed(&mut self, bytes: &[u8], events: &mut Vec<SseEvent>) -> Result<(), WireError> {
        self.feed_with(bytes, |event| events.push(event.into_owned()))
    }

    /// Feeds the next piece of the body and calls `on_event` with each event it completes, in
    /// order. A line over the cap fails with [`WireError::LineTooLong`] after the events before it.
    pub fn feed_with<F>(&mut self, bytes: &[u8], mut on_event: F) -> Result<(), WireError>
    where
        F: FnMut(SseEventRef<'_>),
    {
        let Some(bytes) = skip_bom(&mut self.partial, &mut self.at_start, bytes) else {
            return Ok(());
        };
        let Some(bytes) = self.skip_lf_after_cr(bytes) else {
            return Ok(());
        };
        let Some(bytes) = self.end_partial_line(bytes, &mut on_event)? else {
            return Ok(());
        };
        // The fast path validates all complete lines of `bytes` as UTF-8 once, at its first event;
        // `Some(None)` means they are not valid and each event is decoded alone.
        let mut validated: Option<Option<&str>> = None;
        let mut pos = 0;
        loop {
            if self.fast_path && self.builder.is_clean() {
                pos = self.fast_events(bytes, pos, &mut validated, &mut on_event);
            }
            let rest = &bytes[pos..];
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                break;
            };
            self.check(end)?;
            self.builder.line(&rest[..end], &mut on_event);
            pos = bytes.len() - self.past_line_end(rest, end).len();
        }
        let tail = &bytes[pos..];
        self.check(tail.len())?;
        self.partial.extend_from_slice(tail);
        Ok(())
    }

    /// Skips an LF that completes a CR ending the last piece; `None` for an empty piece.
    #[inline]
    fn skip_lf_after_cr<'b>(&mut self, bytes: &'b [u8]) -> Option<&'b [u8]> {
        if !self.after_cr {
            return Some(bytes);
        }
        let rest = match bytes.split_first() {
            None => return None,
            Some((b'\n', rest)) => rest,
            Some(_) => bytes,
        };
        self.after_cr = false;
        Some(rest)
    }

    /// Ends the line carried over from earlier pieces and returns what follows its line end, or
    /// `None` when the whole piece only extends it.
    #[inline]
    fn end_partial_line<'b, F: FnMut(SseEventRef<'_>)>(
        &mut self,
        bytes: &'b [u8],
        on_event: &mut F,
    ) -> Result<Option<&'b [u8]>, WireError> {
        if self.partial.is_empty() {
            return Ok(Some(bytes));
        }
        let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) else {
            self.check(self.partial.len() + bytes.len())?;
            self.partial.extend_from_slice(bytes);
            return Ok(None);
        };
        self.check(self.partial.len() + end)?;
        self.partial.extend_from_slice(&bytes[..end]);
        self.builder.line(&self.partial, on_event);
        clear_buffer(&mut self.partial);
        Ok(Some(self.past_line_end(bytes, end)))
    }

    /// Dispatches the fast path's events from `pos` on; returns where the first other one starts.
    #[inline]
    fn fast_events<'b, F: FnMut(SseEventRef<'_>)>(
        &self,
        bytes: &'b [u8],
        mut pos: usize,
        validated: &mut Option<Option<&'b str>>,
        on_event: &mut F,
    ) -> usize {
        while let Some(event) = fast_event(&bytes[pos..], self.limit) {
            let text = *validated.get_or_insert_with(|| {
                let complete = memchr::memrchr2(b'\n', b'\r', bytes).map_or(0, |end| end + 1);
                simdutf8::basic::from_utf8(&bytes[..complete]).ok()
            });
            let shift = |range: Range<usize>| pos + range.start..pos + range.end;
            let data = text_of(text, bytes, shift(event.data));
            let kind = event.event.map(|range| text_of(text, bytes, shift(range)));
            on_event(SseEventRef {
                event: kind.as_deref().map_or(DEFAULT_EVENT_TYPE, event_type),
                data: &data,
                id: self.builder.last_event_id.as_deref(),
                retry: None,
            });
            pos += event.len;
        }
        pos
    }

    /// What follows the line end at `end`. A CR ending the piece sets `after_cr`, since the LF of
    /// its CRLF may start the next piece.
    fn past_line_end<'b>(&mut self, bytes: &'b [u8], end: usize) -> &'b [u8] {
        let rest = &bytes[end + 1..];
        if bytes[end] != b'\r' {
            return rest;
        }
        match rest.split_first() {
            Some((b'\n', after)) => after,
            Some(_) => rest,
            None => {
                self.after_cr = true;
                rest
            }
        }
    }

    /// Ends the body and resets the decoder. An event not yet closed by an empty line is discarded,
    /// as the standard says; returns `true` when something was, to report a truncated stream.
    pub fn finish(&mut self) -> bool {
        let discarded = !self.partial.is_empty() || self.builder.has_data;
        *self = Self {
            fast_path: self.fast_path,
            ..Self::with_max_line_bytes(self.limit)
        };
        discarded
    }

    fn check(&mut self, len: usize) -> Result<(), WireError> {
        check_line(&mut self.partial, len, self.limit)
    }
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

/// The bytes of `event` re-encoded as a server-sent event: what the provider sent, less comments
/// and with LF line ends.
pub(crate) fn reframe(event: &SseEventRef<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(event.data.len() + event.event.len() + 16);
    if event.event != "message" {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.event.as_bytes());
        out.push(b'\n');
    }
    for line in event.data.split('\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    if let Some(id) = event.id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    if let Some(retry) = event.retry {
        out.extend_from_slice(format!("retry: {retry}\n").as_bytes());
    }
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::decode::BOM;
    use proptest::prelude::*;
    use std::path::PathBuf;

    fn ev(event: &str, data: &str, id: Option<&str>, retry: Option<u64>) -> SseEvent {
        SseEvent {
            event: event.to_owned(),
            data: data.to_owned(),
            id: id.map(str::to_owned),
            retry,
        }
    }

    fn msg(data: &str) -> SseEvent {
        ev("message", data, None, None)
    }

    /// Feeds `pieces` in order, then finishes; returns the events and `finish()`'s result.
    fn decode_pieces<P: AsRef<[u8]>>(pieces: &[P]) -> (Vec<SseEvent>, bool) {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for piece in pieces {
            decoder.feed(piece.as_ref(), &mut events).unwrap();
        }
        let discarded = decoder.finish();
        (events, discarded)
    }

    fn decode(body: &[u8]) -> Vec<SseEvent> {
        let (events, discarded) = decode_pieces(&[body]);
        assert!(!discarded, "unexpected truncation of {body:?}");
        events
    }

    fn decode_in_pieces_of(body: &[u8], size: usize) -> (Vec<SseEvent>, bool) {
        decode_pieces(&body.chunks(size).collect::<Vec<_>>())
    }

    /// Decodes `body` whole and in pieces of every size from 1 to 9, asserting they agree.
    fn decode_all_ways(body: &[u8]) -> Vec<SseEvent> {
        let whole = decode_pieces(&[body]);
        for size in 1..10 {
            assert_eq!(decode_in_pieces_of(body, size), whole, "pieces of {size}");
        }
        assert!(!whole.1, "unexpected truncation of {body:?}");
        whole.0
    }

    #[test]
    fn lf_line_ends() {
        assert_eq!(
            decode_all_ways(b"data: a\n\ndata: b\n\n"),
            [msg("a"), msg("b")]
        );
    }

    #[test]
    fn cr_line_ends() {
        assert_eq!(
            decode_all_ways(b"data: a\r\rdata: b\r\r"),
            [msg("a"), msg("b")]
        );
    }

    #[test]
    fn crlf_line_ends() {
        assert_eq!(
            decode_all_ways(b"data: a\r\n\r\ndata: b\r\n\r\n"),
            [msg("a"), msg("b")]
        );
    }

    #[test]
    fn mixed_line_ends() {
        assert_eq!(
            decode_all_ways(b"data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\n\rdata: e\n\n"),
            [msg("a\nb\nc"), msg("d"), msg("e")]
        );
    }

    #[test]
    fn cr_and_lf_split_across_pieces_are_one_line_end() {
        // Were the CR and the LF two line ends, the empty line between them would dispatch "a".
        let (events, discarded) = decode_pieces(&["data: a\r", "\ndata: b\r\n\r\n"]);
        assert_eq!(events, [msg("a\nb")]);
        assert!(!discarded);
        // Also with empty pieces between them.
        let (events, _) = decode_pieces(&["data: a\r", "", "", "\ndata: b\r", "\n", "\r", "\n"]);
        assert_eq!(events, [msg("a\nb")]);
    }

    #[test]
    fn cr_at_end_of_piece_followed_by_other_bytes() {
        let (events, _) = decode_pieces(&["data: a\r", "data: b\r", "\r"]);
        assert_eq!(events, [msg("a\nb")]);
        let (events, _) = decode_pieces(&["data: a\r", "\r", "data: b\r", "\r"]);
        assert_eq!(events, [msg("a"), msg("b")]);
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(
            decode_all_ways(b": OPENROUTER PROCESSING\n\ndata: x\n:keep-alive\ndata: y\n\n:\n\n"),
            [msg("x\ny")]
        );
    }

    #[test]
    fn bom_is_skipped() {
        assert_eq!(decode_all_ways(b"\xEF\xBB\xBFdata: x\n\n"), [msg("x")]);
        assert_eq!(decode_all_ways(b"\xEF\xBB\xBF\n"), []);
    }

    #[test]
    fn bom_split_across_pieces_is_skipped() {
        for pieces in [
            &[&b"\xEF"[..], b"\xBB\xBFdata: x\n\n"][..],
            &[b"\xEF\xBB", b"\xBFdata: x\n\n"],
            &[b"\xEF", b"\xBB", b"\xBF", b"data: x\n\n"],
            &[
                b"",
                b"\xEF",
                b"",
                b"\xBB",
                b"",
                b"\xBF",
                b"",
                b"data: x\n\n",
            ],
        ] {
            assert_eq!(decode_pieces(pieces), (vec![msg("x")], false));
        }
    }

    #[test]
    fn bom_only_at_the_very_start() {
        // A second BOM is part of the field name, so the `data` line becomes an unknown field.
        assert_eq!(decode_all_ways(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n"), []);
        assert_eq!(
            decode_all_ways(b"data: x\n\n\xEF\xBB\xBFdata: y\n\ndata: z\n\n"),
            [msg("x"), msg("z")]
        );
        // A BOM inside a value is kept.
        assert_eq!(
            decode_all_ways(b"data: \xEF\xBB\xBFx\n\n"),
            [msg("\u{FEFF}x")]
        );
    }

    #[test]
    fn incomplete_bom_is_line_content() {
        // The two bytes are an invalid sequence glued to the field name: an unknown field.
        assert_eq!(decode_all_ways(b"\xEF\xBBdata: x\n\n"), []);
        assert_eq!(decode_all_ways(b"\xEF\n\ndata: x\n\n"), [msg("x")]);
        assert_eq!(decode_pieces(&[b"\xEF\xBB"]), (vec![], true));
    }

    #[test]
    fn space_after_colon() {
        assert_eq!(
            decode_all_ways(b"data:x\n\ndata: x\n\ndata:  x\n\ndata:\tx\n\n"),
            [msg("x"), msg("x"), msg(" x"), msg("\tx")]
        );
        assert_eq!(
            decode_all_ways(b"event:a\ndata:1\n\nevent: a\ndata:1\n\nevent:  a\ndata:1\n\n"),
            [
                ev("a", "1", None, None),
                ev("a", "1", None, None),
                ev(" a", "1", None, None)
            ]
        );
    }

    #[test]
    fn only_the_first_colon_separates() {
        assert_eq!(
            decode_all_ways(b"data: a: b:c\n\ndata::\n\n"),
            [msg("a: b:c"), msg(":")]
        );
    }

    #[test]
    fn line_without_colon_is_a_field_with_empty_value() {
        assert_eq!(decode_all_ways(b"data\n\n"), [msg("")]);
        assert_eq!(decode_all_ways(b"data\ndata\n\n"), [msg("\n")]);
        assert_eq!(decode_all_ways(b"event: a\nevent\ndata: x\n\n"), [msg("x")]);
        assert_eq!(decode_all_ways(b"data:\n\ndata: \n\n"), [msg(""), msg("")]);
    }

    #[test]
    fn multi_line_data_is_joined_by_lf() {
        assert_eq!(
            decode_all_ways(b"data: a\ndata:\ndata: b\ndata:  c\n\n"),
            [msg("a\n\nb\n c")]
        );
        assert_eq!(decode_all_ways(b"data: a\ndata: \n\n"), [msg("a\n")]);
    }

    #[test]
    fn event_field_sets_the_type() {
        assert_eq!(
            decode_all_ways(b"event: content_block_delta\ndata: {}\n\n"),
            [ev("content_block_delta", "{}", None, None)]
        );
        // The last event field wins, and an empty one means "message".
        assert_eq!(
            decode_all_ways(b"event: a\nevent: b\ndata: 1\n\nevent: c\nevent:\ndata: 2\n\n"),
            [ev("b", "1", None, None), msg("2")]
        );
    }

    #[test]
    fn event_type_is_reset_after_dispatch() {
        assert_eq!(
            decode_all_ways(b"event: a\ndata: 1\n\ndata: 2\n\n"),
            [ev("a", "1", None, None), msg("2")]
        );
    }

    #[test]
    fn empty_data_buffer_is_not_dispatched_and_resets_the_type() {
        assert_eq!(decode_all_ways(b"event: ping\n\ndata: x\n\n"), [msg("x")]);
        assert_eq!(decode_all_ways(b"\n\n\r\n\r\r"), []);
        assert_eq!(decode_all_ways(b"event: a\nid: 1\nretry: 5\n\n"), []);
    }

    #[test]
    fn id_persists_and_is_set_by_valid_fields_only() {
        assert_eq!(
            decode_all_ways(b"data: 0\n\nid: 1\ndata: a\n\nid: 2\0x\ndata: b\n\ndata: c\n\n"),
            [
                msg("0"),
                ev("message", "a", Some("1"), None),
                ev("message", "b", Some("1"), None),
                ev("message", "c", Some("1"), None),
            ]
        );
        // An id in a block without data still sets the buffer; an empty id sets it to "".
        assert_eq!(
            decode_all_ways(b"id: 7\n\ndata: a\n\nid\ndata: b\n\nid: \xE6\x9D\xB1\ndata: c\n\n"),
            [
                ev("message", "a", Some("7"), None),
                ev("message", "b", Some(""), None),
                ev("message", "c", Some("東"), None),
            ]
        );
        // A NUL anywhere in the value, even as the only byte.
        assert_eq!(
            decode_all_ways(b"id: \0\ndata: a\n\nid:x\0\ndata: b\n\n"),
            [msg("a"), msg("b")]
        );
    }

    #[test]
    fn retry_valid_and_invalid() {
        assert_eq!(
            decode_all_ways(b"retry: 1500\ndata: x\n\n"),
            [ev("message", "x", None, Some(1500))]
        );
        assert_eq!(
            decode_all_ways(b"retry:0\ndata: x\n\n"),
            [ev("message", "x", None, Some(0))]
        );
        // The last valid one wins; an invalid one does not clear it.
        assert_eq!(
            decode_all_ways(b"retry: 10\nretry: 20\nretry: x\ndata: x\n\n"),
            [ev("message", "x", None, Some(20))]
        );
        for invalid in [
            "retry: 15a0",
            "retry: -1",
            "retry: +1",
            "retry: 1.5",
            "retry: ",
            "retry",
            "retry:  1500",
            "retry: 1500 ",
            "retry: \u{0661}",
            "retry: 99999999999999999999999",
        ] {
            let body = format!("{invalid}\ndata: x\n\n");
            assert_eq!(decode_all_ways(body.as_bytes()), [msg("x")], "{invalid}");
        }
    }

    #[test]
    fn retry_belongs_to_one_event() {
        assert_eq!(
            decode_all_ways(b"retry: 5\ndata: a\n\ndata: b\n\nretry: 7\n\ndata: c\n\n"),
            [ev("message", "a", None, Some(5)), msg("b"), msg("c")]
        );
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert_eq!(
            decode_all_ways(b"foo: bar\nDATA: no\nData: no\ndata : no\n data: no\ndata: y\nx\n\n"),
            [msg("y")]
        );
    }

    #[test]
    fn utf8_split_across_pieces_is_reassembled() {
        let body = "event: «тип»\ndata: 東京 — ₆ «x»\nid: ₆\n\n".as_bytes();
        assert_eq!(
            decode_all_ways(body),
            [ev("«тип»", "東京 — ₆ «x»", Some("₆"), None)]
        );
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(
            decode_all_ways(b"data: a\xFFb\xE6\x9D\n\n"),
            [msg("a\u{FFFD}b\u{FFFD}")]
        );
        // An incomplete sequence at the end of a line does not swallow the line end.
        assert_eq!(
            decode_all_ways(b"data: \xE6\x9D\ndata: z\n\n"),
            [msg("\u{FFFD}\nz")]
        );
    }

    #[test]
    fn finish_discards_an_incomplete_event() {
        assert_eq!(decode_pieces(&["data: x\n"]), (vec![], true));
        assert_eq!(decode_pieces(&["data: x"]), (vec![], true));
        assert_eq!(
            decode_pieces(&["data: a\n\ndata: x\r"]),
            (vec![msg("a")], true)
        );
        assert_eq!(
            decode_pieces(&["data: a\n\n: partial"]),
            (vec![msg("a")], true)
        );
        // Nothing to discard: a complete stream, or only fields that would dispatch nothing.
        assert_eq!(decode_pieces(&["data: a\n\n"]), (vec![msg("a")], false));
        assert_eq!(decode_pieces(&["data: a\r\r"]), (vec![msg("a")], false));
        assert_eq!(decode_pieces(&["event: x\nid: 1\n: c\n"]), (vec![], false));
        assert_eq!(decode_pieces::<&str>(&[]), (vec![], false));
    }

    #[test]
    fn finish_resets_for_a_new_stream() {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        decoder
            .feed(b"\xEF\xBB\xBFid: 1\nevent: e\ndata: a\r", &mut events)
            .unwrap();
        assert!(decoder.finish());
        decoder
            .feed(b"\xEF\xBB\xBF\ndata: b\n\n", &mut events)
            .unwrap();
        assert!(!decoder.finish());
        assert_eq!(events, [msg("b")]);
    }

    #[test]
    fn five_megabyte_line_in_seven_byte_pieces() {
        let payload: String = "0123456789abcdef東京₆«»—"
            .chars()
            .cycle()
            .take(3_500_000)
            .collect();
        assert!(payload.len() > 5_000_000);
        let body = format!("event: big\ndata: {payload}\n\ndata: after\n\n");
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for piece in body.as_bytes().chunks(7) {
            decoder.feed(piece, &mut events).unwrap();
        }
        assert!(!decoder.finish());
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].event, "big");
        assert!(events[0].data == payload, "the big line differs");
        assert_eq!(events[1], msg("after"));
    }

    #[test]
    fn line_over_the_cap_is_an_error() {
        let limit = 16;
        let ok = b"data: 0123456789"; // exactly 16 bytes
        let long = b"data: 0123456789a";
        let mut events = Vec::new();
        let mut decoder = SseDecoder::with_max_line_bytes(limit);
        decoder.feed(ok, &mut events).unwrap();
        decoder.feed(b"\r\n\r\n", &mut events).unwrap();
        assert_eq!(events, [msg("0123456789")]);

        // Complete line in one piece.
        let mut decoder = SseDecoder::with_max_line_bytes(limit);
        let err = decoder.feed(&[&long[..], b"\n\n"].concat(), &mut events);
        assert_eq!(err, Err(WireError::LineTooLong { limit }));

        // Incomplete line, detected while buffering, whatever the pieces.
        for size in 1..8 {
            let mut decoder = SseDecoder::with_max_line_bytes(limit);
            let mut result = Ok(());
            for piece in long.chunks(size) {
                result = decoder.feed(piece, &mut events);
                if result.is_err() {
                    break;
                }
                assert!(decoder.partial.len() <= limit);
            }
            assert_eq!(result, Err(WireError::LineTooLong { limit }), "{size}");
        }

        // Events before the long line are still delivered.
        let mut decoder = SseDecoder::with_max_line_bytes(limit);
        let mut events = Vec::new();
        let body = [&b"data: a\n\n"[..], long, b"\n"].concat();
        assert!(decoder.feed(&body, &mut events).is_err());
        assert_eq!(events, [msg("a")]);
    }

    #[test]
    fn default_cap_is_the_module_default() {
        let mut decoder = SseDecoder::default();
        let mut events = Vec::new();
        let line = vec![b'x'; DEFAULT_MAX_LINE_BYTES];
        decoder.feed(&line, &mut events).unwrap();
        assert_eq!(
            decoder.feed(b"y", &mut events),
            Err(WireError::LineTooLong {
                limit: DEFAULT_MAX_LINE_BYTES
            })
        );
    }

    #[test]
    fn events_accumulate_in_the_callers_vec() {
        let mut decoder = SseDecoder::new();
        let mut events = vec![msg("earlier")];
        decoder
            .feed(b"data: a\n\ndata: b\n\nda", &mut events)
            .unwrap();
        decoder.feed(b"ta: c\n\n", &mut events).unwrap();
        assert_eq!(events, [msg("earlier"), msg("a"), msg("b"), msg("c")]);
    }

    // ---- the borrowed API and the fast path ----------------------------------------------

    /// A decoder that never takes the fast path: the general path alone.
    fn general_only(limit: usize) -> SseDecoder {
        SseDecoder {
            fast_path: false,
            ..SseDecoder::with_max_line_bytes(limit)
        }
    }

    /// Feeds `pieces` through `feed_with`, stopping at the first error; returns the events
    /// (owned) and the error, or `finish()`'s result.
    fn run<P: AsRef<[u8]>>(
        mut decoder: SseDecoder,
        pieces: &[P],
    ) -> (Vec<SseEvent>, Result<bool, WireError>) {
        let mut events = Vec::new();
        for piece in pieces {
            let fed = decoder.feed_with(piece.as_ref(), |event| events.push(event.into_owned()));
            if let Err(err) = fed {
                return (events, Err(err));
            }
        }
        (events, Ok(decoder.finish()))
    }

    /// Decodes `body` in pieces of every size from 1 to 9 and whole, on both paths, asserting
    /// that all agree; returns the events.
    fn decode_both_paths(body: &[u8]) -> Vec<SseEvent> {
        let whole = run(SseDecoder::new(), &[body]);
        for size in 1..10 {
            let pieces: Vec<&[u8]> = body.chunks(size).collect();
            assert_eq!(run(SseDecoder::new(), &pieces), whole, "pieces of {size}");
            assert_eq!(
                run(general_only(DEFAULT_MAX_LINE_BYTES), &pieces),
                whole,
                "general path, pieces of {size}"
            );
        }
        assert_eq!(whole.1, Ok(false), "unexpected truncation of {body:?}");
        whole.0
    }

    #[test]
    fn feed_with_borrows_from_the_piece_and_copies_only_across_pieces() {
        let first: &[u8] =
            b"data: a\n\nevent: e\r\ndata:b\r\n\r\nid: 7\ndata: c\n\ndata: x\ndata: y\n\ndata: sp";
        let second: &[u8] = b"lit\n\ndata: d\n\n";
        let mut decoder = SseDecoder::new();
        let mut seen = Vec::new();
        for piece in [first, second] {
            let range = piece.as_ptr_range();
            decoder
                .feed_with(piece, |event| {
                    let borrowed = range.contains(&event.data.as_ptr());
                    seen.push((event.into_owned(), borrowed));
                })
                .unwrap();
        }
        assert!(!decoder.finish());
        assert_eq!(
            seen,
            [
                // The common shapes, LF or CRLF, with an `event` line or not: borrowed.
                (msg("a"), true),
                (ev("e", "b", None, None), true),
                // An `id` line before the common shape: the id persists, the data is borrowed.
                (ev("message", "c", Some("7"), None), true),
                // Several `data` lines, or one split across pieces: from the decoder's buffer.
                (ev("message", "x\ny", Some("7"), None), false),
                (ev("message", "split", Some("7"), None), false),
                (ev("message", "d", Some("7"), None), true),
            ]
        );
    }

    #[test]
    fn feed_and_feed_with_give_the_same_events() {
        let body = b"retry: 5\ndata: a\n\nevent: e\ndata: b\n\n: c\nid: 1\ndata: c\rdata: d\r\r";
        let mut owned = Vec::new();
        let mut decoder = SseDecoder::new();
        decoder.feed(body, &mut owned).unwrap();
        assert!(!decoder.finish());
        assert_eq!(run(SseDecoder::new(), &[body]), (owned.clone(), Ok(false)));
        assert_eq!(
            owned,
            [
                ev("message", "a", None, Some(5)),
                ev("e", "b", None, None),
                ev("message", "c\nd", Some("1"), None),
            ]
        );
    }

    #[test]
    fn fast_path_shapes_and_their_neighbours() {
        // An empty `event` value means "message"; the type does not outlive its event.
        assert_eq!(
            decode_both_paths(b"event:\ndata: x\n\nevent: t\ndata: y\n\ndata: z\n\n"),
            [msg("x"), ev("t", "y", None, None), msg("z")]
        );
        // Line ends mixed within one event, and a bare CR that is not a line end of the shape.
        assert_eq!(
            decode_both_paths(b"data: a\r\n\ndata: b\n\r\ndata: c\r\rdata: d\n\r"),
            [msg("a"), msg("b"), msg("c"), msg("d")]
        );
        // A retry belongs to its event only, whichever path the next event takes.
        assert_eq!(
            decode_both_paths(b"retry: 5\ndata: a\n\ndata: b\n\n"),
            [ev("message", "a", None, Some(5)), msg("b")]
        );
        // Fields pending from an unfinished block are not lost to the fast path.
        assert_eq!(
            decode_both_paths(b"event: t\n: c\ndata: a\n\ndata: p\ndata: q\n\n"),
            [ev("t", "a", None, None), msg("p\nq")]
        );
        // An event line without data dispatches nothing and its type is dropped.
        assert_eq!(decode_both_paths(b"event: t\n\ndata: a\n\n"), [msg("a")]);
        // Not the shape: `data` without a colon, a second colon, a space before the colon.
        assert_eq!(
            decode_both_paths(b"data\n\ndata:: x\n\ndata : no\n\ndata:  two\n\n"),
            [msg(""), msg(": x"), msg(" two")]
        );
        // Invalid UTF-8 in the piece: every event is still decoded with replacement.
        assert_eq!(
            decode_both_paths(b"data: a\n\nevent: \xFF\ndata: \xE6\x9D\n\ndata: \xE6\x9D\xB1\n\n"),
            [msg("a"), ev("\u{FFFD}", "\u{FFFD}", None, None), msg("東")]
        );
    }

    #[test]
    fn crlf_split_across_pieces_on_both_paths() {
        // The pieces of rexxars/eventsource-parser#17, where a parser dispatched "A\nB" early.
        let pieces = ["data: A\r\n", "data: B\r", "data: C\r\n", "\n"];
        for decoder in [SseDecoder::new(), general_only(DEFAULT_MAX_LINE_BYTES)] {
            assert_eq!(run(decoder, &pieces), (vec![msg("A\nB\nC")], Ok(false)));
        }
        // A CR ending the piece after a complete fast-path event's data line.
        let pieces = ["data: a\n\ndata: b\r", "\n\r", "\ndata: c\n\n"];
        for decoder in [SseDecoder::new(), general_only(DEFAULT_MAX_LINE_BYTES)] {
            assert_eq!(
                run(decoder, &pieces),
                (vec![msg("a"), msg("b"), msg("c")], Ok(false))
            );
        }
    }

    #[test]
    fn character_split_after_the_last_line_end_of_a_piece() {
        // The piece's complete lines are valid UTF-8 and its tail is not yet.
        let pieces: [&[u8]; 3] = [b"data: a\n\ndata: \xE6", b"\x9D", b"\xB1\n\ndata: b\n\n"];
        assert_eq!(
            run(SseDecoder::new(), &pieces),
            (vec![msg("a"), msg("東"), msg("b")], Ok(false))
        );
    }

    #[test]
    fn the_cap_applies_on_the_fast_path() {
        let limit = 16;
        // Lines of exactly 16 bytes.
        let exactly = b"data: 0123456789\n\nevent: 012345678\ndata: x\n\n";
        assert_eq!(
            run(SseDecoder::with_max_line_bytes(limit), &[exactly]),
            (
                vec![msg("0123456789"), ev("012345678", "x", None, None)],
                Ok(false)
            )
        );
        for long in [
            &b"data: a\n\ndata: 0123456789a\n\n"[..],
            b"data: a\n\nevent: 0123456789\ndata: x\n\n",
        ] {
            assert_eq!(
                run(SseDecoder::with_max_line_bytes(limit), &[long]),
                (vec![msg("a")], Err(WireError::LineTooLong { limit }))
            );
        }
    }

    #[test]
    fn fixtures_decode_the_same_on_both_paths() {
        for (name, body) in fixture_bodies("text/event-stream") {
            let fast = run(SseDecoder::new(), &[&body]);
            assert_eq!(
                run(general_only(DEFAULT_MAX_LINE_BYTES), &[&body]),
                fast,
                "{name}"
            );
            for size in [1, 5, 7] {
                let pieces: Vec<&[u8]> = body.chunks(size).collect();
                assert_eq!(run(SseDecoder::new(), &pieces), fast, "{name} in {size}s");
            }
        }
    }

    // ---- property tests -------------------------------------------------------------------

    /// One block of a generated stream.
    #[derive(Debug, Clone)]
    enum Block {
        Event {
            event: Option<String>,
            data: Vec<String>,
            id: Option<String>,
            retry: Option<u64>,
        },
        Comment(String),
    }

    fn text(chars: &'static [char]) -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(chars), 0..12)
            .prop_map(|chars| chars.into_iter().collect())
    }

    const TEXT: &[char] = &[
        'a', 'b', 'Z', '0', '9', ' ', ' ', ':', '{', '"', '«', '»', '—', '東', '京', '₆', '\t',
        '\u{FEFF}',
    ];
    const ID: &[char] = &['a', '1', ' ', '₆', '東', '\0'];

    fn block() -> impl Strategy<Value = Block> {
        prop_oneof![
            4 => (
                prop::option::of(text(TEXT)),
                prop::collection::vec(text(TEXT), 0..4),
                prop::option::of(text(ID)),
                prop::option::of(0u64..100_000),
            )
                .prop_map(|(event, data, id, retry)| Block::Event { event, data, id, retry }),
            1 => text(TEXT).prop_map(Block::Comment),
        ]
    }

    /// Writes `blocks` as an event stream, choosing the line ends and the optional space from
    /// `choices`, and returns it with the events the standard says it holds.
    fn render(blocks: &[Block], choices: &[u8], bom: bool) -> (Vec<u8>, Vec<SseEvent>) {
        let mut out: Vec<u8> = Vec::new();
        let mut expected = Vec::new();
        let mut last_id: Option<String> = None;
        let mut n = 0usize;
        let mut next_choice = || {
            n += 1;
            choices[n % choices.len()]
        };
        let mut prev_cr = false;
        let mut line = |out: &mut Vec<u8>, content: &str, choice: u8| {
            out.extend_from_slice(content.as_bytes());
            // A CR line end followed by an empty line ended by a bare LF would be one CRLF.
            let end = match choice % 3 {
                0 if prev_cr && content.is_empty() => "\r\n",
                0 => "\n",
                1 => "\r",
                _ => "\r\n",
            };
            prev_cr = end == "\r";
            out.extend_from_slice(end.as_bytes());
        };
        if bom {
            out.extend_from_slice(&BOM);
        }
        for block in blocks {
            match block {
                Block::Comment(text) => line(&mut out, &format!(":{text}"), next_choice()),
                Block::Event {
                    event,
                    data,
                    id,
                    retry,
                } => {
                    let mut field = |out: &mut Vec<u8>, name: &str, value: &str| {
                        let choice = next_choice();
                        let space = if choice >= 3 || value.starts_with(' ') {
                            " "
                        } else {
                            ""
                        };
                        line(out, &format!("{name}:{space}{value}"), choice);
                    };
                    if let Some(event) = event {
                        field(&mut out, "event", event);
                    }
                    for value in data {
                        field(&mut out, "data", value);
                    }
                    if let Some(id) = id {
                        field(&mut out, "id", id);
                    }
                    if let Some(retry) = retry {
                        field(&mut out, "retry", &retry.to_string());
                    }
                    line(&mut out, "", next_choice());
                    if let Some(id) = id.as_ref().filter(|id| !id.contains('\0')) {
                        last_id = Some(id.clone());
                    }
                    if !data.is_empty() {
                        expected.push(SseEvent {
                            event: event
                                .clone()
                                .filter(|e| !e.is_empty())
                                .unwrap_or_else(|| "message".to_owned()),
                            data: data.join("\n"),
                            id: last_id.clone(),
                            retry: *retry,
                        });
                    }
                }
            }
        }
        (out, expected)
    }

    /// Cuts `bytes` at the given positions.
    fn split_at(bytes: &[u8], cuts: &[prop::sample::Index]) -> Vec<Vec<u8>> {
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        at.sort_unstable();
        let mut pieces = Vec::new();
        let mut start = 0;
        for cut in at {
            pieces.push(bytes[start..cut].to_vec());
            start = cut;
        }
        pieces.push(bytes[start..].to_vec());
        pieces
    }

    /// Tokens for arbitrary, mostly malformed streams.
    const TOKENS: &[&[u8]] = &[
        b"data",
        b"event",
        b"id",
        b"retry",
        b":",
        b" ",
        b"\r",
        b"\n",
        b"\r\n",
        b"x",
        b"7",
        b"\0",
        b"\xEF\xBB\xBF",
        b"\xEF",
        b"\xBB",
        b"\xE6\x9D\xB1",
        b"\xE6",
        b"\xFF",
        "«".as_bytes(),
    ];

    /// Tokens for arbitrary streams rich in the fast path's shapes and in what borders them.
    const SHAPED_TOKENS: &[&[u8]] = &[
        b"data: ",
        b"data:",
        b"event: ",
        b"event:",
        b"id: 1\n",
        b"retry: 5\n",
        b": c\n",
        b"\n",
        b"\r\n",
        b"\r",
        b"\n\n",
        b"\r\n\r\n",
        b"{\"x\":1}",
        b"x",
        b" ",
        b":",
        b"\0",
        b"\xE6\x9D\xB1",
        b"\xE6",
        b"\xFF",
        b"\xEF\xBB\xBF",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_split_gives_the_events_of_the_whole(
            blocks in prop::collection::vec(block(), 0..10),
            choices in prop::collection::vec(0u8..6, 1..32),
            bom in any::<bool>(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let (body, expected) = render(&blocks, &choices, bom);
            let whole = decode_pieces(&[&body]);
            prop_assert_eq!(&whole, &(expected, false));
            prop_assert_eq!(decode_pieces(&split_at(&body, &cuts)), whole.clone());
            prop_assert_eq!(decode_in_pieces_of(&body, 1), whole);
        }

        #[test]
        fn any_split_of_arbitrary_bytes_gives_the_same_result(
            tokens in prop::collection::vec(prop::sample::select(TOKENS), 0..40),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let body = tokens.concat();
            let whole = decode_pieces(&[&body]);
            prop_assert_eq!(decode_pieces(&split_at(&body, &cuts)), whole.clone());
            prop_assert_eq!(decode_in_pieces_of(&body, 1), whole);
        }

        #[test]
        fn the_cap_error_does_not_depend_on_the_split(
            tokens in prop::collection::vec(prop::sample::select(TOKENS), 0..40),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
            limit in 0usize..12,
        ) {
            let body = tokens.concat();
            let run = |pieces: &[Vec<u8>]| {
                let mut decoder = SseDecoder::with_max_line_bytes(limit);
                let mut events = Vec::new();
                for piece in pieces {
                    if let Err(err) = decoder.feed(piece, &mut events) {
                        return (events, Err(err));
                    }
                }
                (events, Ok(decoder.finish()))
            };
            let whole = run(std::slice::from_ref(&body));
            prop_assert_eq!(run(&split_at(&body, &cuts)), whole);
        }

        #[test]
        fn fast_and_general_paths_agree_on_streams(
            blocks in prop::collection::vec(block(), 0..10),
            choices in prop::collection::vec(0u8..6, 1..32),
            bom in any::<bool>(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let (body, _) = render(&blocks, &choices, bom);
            let pieces = split_at(&body, &cuts);
            let general = run(general_only(DEFAULT_MAX_LINE_BYTES), &pieces);
            prop_assert_eq!(run(SseDecoder::new(), &pieces), general.clone());
            prop_assert_eq!(run(SseDecoder::new(), &[&body]), general);
        }

        #[test]
        fn fast_and_general_paths_agree_on_arbitrary_bytes(
            tokens in prop::collection::vec(prop::sample::select(SHAPED_TOKENS), 0..60),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
            limit in prop::option::of(0usize..24),
        ) {
            let body = tokens.concat();
            let limit = limit.unwrap_or(DEFAULT_MAX_LINE_BYTES);
            let pieces = split_at(&body, &cuts);
            let general = run(general_only(limit), &pieces);
            prop_assert_eq!(run(SseDecoder::with_max_line_bytes(limit), &pieces), general.clone());
            let whole = run(SseDecoder::with_max_line_bytes(limit), &[&body]);
            prop_assert_eq!(whole, run(general_only(limit), &[&body]));
        }
    }

    // ---- recorded provider streams ---------------------------------------------------------

    /// The repository's test data (`tests/` at the workspace root, found from this crate's
    /// manifest directory).
    fn test_data_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests")
    }

    /// The bodies of the fixtures whose content type starts with `content_type`, by file name.
    fn fixture_bodies(content_type: &str) -> Vec<(String, Vec<u8>)> {
        let dir = test_data_dir().join("fixtures");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|ext| ext != "http") {
                continue;
            }
            let raw = std::fs::read(&path).unwrap();
            let split = memchr::memmem::find(&raw, b"\r\n\r\n").unwrap();
            let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
            let matches = head.lines().any(|line| {
                line.strip_prefix("content-type:")
                    .is_some_and(|value| value.trim().starts_with(content_type))
            });
            if matches {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                found.push((name, raw[split + 4..].to_vec()));
            }
        }
        found.sort();
        found
    }

    #[test]
    fn fixtures_decode_the_same_in_any_pieces() {
        let fixtures = fixture_bodies("text/event-stream");
        assert!(fixtures.len() >= 10, "only {} SSE fixtures", fixtures.len());
        for (name, body) in &fixtures {
            let whole = decode_pieces(&[body]);
            assert!(!whole.0.is_empty(), "{name}: no events");
            assert!(!whole.1, "{name}: truncated");
            for size in [1, 5, 7] {
                assert_eq!(decode_in_pieces_of(body, size), whole, "{name} in {size}s");
            }
        }
    }

    #[test]
    fn fixtures_agree_with_eventsource_stream() {
        use futures_util::StreamExt;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for (name, body) in fixture_bodies("text/event-stream") {
            let ours = decode(&body);
            let theirs: Vec<SseEvent> = runtime.block_on(async {
                let pieces = body
                    .chunks(5)
                    .map(|piece| Ok::<_, std::convert::Infallible>(piece.to_vec()));
                eventsource_stream::EventStream::new(futures_util::stream::iter(pieces))
                    .map(|event| {
                        let event = event.unwrap();
                        SseEvent {
                            event: event.event,
                            data: event.data,
                            id: Some(event.id).filter(|id| !id.is_empty()),
                            retry: event.retry.map(|d| u64::try_from(d.as_millis()).unwrap()),
                        }
                    })
                    .collect()
                    .await
            });
            assert_eq!(ours, theirs, "{name}");
        }
    }

    #[test]
    fn openrouter_comments_and_anthropic_event_types() {
        let fixtures = fixture_bodies("text/event-stream");
        let body = |wanted: &str| {
            let (_, body) = fixtures.iter().find(|(name, _)| name == wanted).unwrap();
            decode(body)
        };
        let openrouter = body("openrouter_stream.http");
        assert!(
            openrouter
                .iter()
                .all(|e| !e.data.contains("OPENROUTER PROCESSING"))
        );
        assert_eq!(openrouter.last().unwrap().data, "[DONE]");
        let anthropic = body("anthropic_text.http");
        assert_eq!(anthropic.first().unwrap().event, "message_start");
        assert_eq!(anthropic.last().unwrap().event, "message_stop");
        assert!(anthropic.iter().all(|e| e.data.starts_with('{')));
    }
}
