//! What the wire decoders share: the line cap, BOM skipping, buffer reuse and lossy UTF-8.
//! Spec: R4.0.

use std::borrow::Cow;

/// The default cap on one line of a streamed body, in bytes: multi-megabyte tool arguments fit.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// A failure to decode a streamed body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// One line exceeded the `[limits] max_line_bytes` cap.
    /// Spec: R4.0b.
    #[error(
        "one line of the response is longer than the {limit}-byte limit; if this provider really sends lines this long, raise `max_line_bytes` under [limits] in the configuration (or -c limits.max_line_bytes=BYTES)"
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
        expected: u32,
        actual: u32,
    },
    /// An AWS event-stream frame is malformed or cut off.
    #[error("an event-stream frame is malformed: {0}")]
    Frame(String),
}

/// The UTF-8 byte order mark, skipped once at the very start of a stream.
pub(crate) const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Past this capacity a reused buffer is released, so one long line does not pin its memory.
pub(crate) const KEEP_BUFFER_BYTES: usize = 1 << 20;

/// Skips a UTF-8 BOM at a stream's start, holding a partial match in `partial`, which is line
/// content if the match fails. `None` while the piece ends inside a possible BOM.
#[inline]
pub(crate) fn skip_bom<'b>(
    partial: &mut Vec<u8>,
    at_start: &mut bool,
    mut bytes: &'b [u8],
) -> Option<&'b [u8]> {
    if !*at_start {
        return Some(bytes);
    }
    while let Some((&byte, rest)) = bytes.split_first() {
        if BOM.get(partial.len()) != Some(&byte) {
            *at_start = false;
            break;
        }
        partial.push(byte);
        bytes = rest;
        if partial.len() == BOM.len() {
            partial.clear();
            *at_start = false;
            break;
        }
    }
    (!*at_start).then_some(bytes)
}

/// Empties a reused buffer, releasing it when it grew past [`KEEP_BUFFER_BYTES`].
#[inline]
pub(crate) fn clear_buffer(buffer: &mut Vec<u8>) {
    if buffer.capacity() > KEEP_BUFFER_BYTES {
        *buffer = Vec::new();
    } else {
        buffer.clear();
    }
}

/// Fails when a line of `len` bytes would exceed `limit`, releasing `partial`.
#[inline]
pub(crate) fn check_line(partial: &mut Vec<u8>, len: usize, limit: usize) -> Result<(), WireError> {
    if len > limit {
        *partial = Vec::new();
        return Err(WireError::LineTooLong { limit });
    }
    Ok(())
}

/// UTF-8 decodes `bytes` with U+FFFD for invalid sequences, borrowing valid input.
pub(crate) fn utf8_lossy(bytes: &[u8]) -> Cow<'_, str> {
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}
