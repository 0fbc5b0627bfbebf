//! An AWS event-stream decoder for Bedrock's ConverseStream, checking both CRCs, CRC-32/ISO-HDLC
//! from `crc32fast`. A frame, per AWS "Event stream encoding", all integers big-endian:
//! ```text
//! u32 total_length | u32 headers_length | u32 prelude_crc = CRC32(bytes[0..8])
//! headers (headers_length bytes) | payload | u32 message_crc = CRC32(bytes[0..total-4])
//! header := u8 name_len | name | u8 type | value
//!   0 true, 1 false, 2 i8, 3 i16, 4 i32, 5 i64, 6 bytes (u16 len), 7 string (u16 len),
//!   8 timestamp (i64 ms), 9 uuid (16 bytes)
//! ```
//! Spec: R4.0, R4.1.

use super::decode::WireError;

/// The 12-byte prelude plus the 4-byte message CRC.
const OVERHEAD: usize = 16;

/// The default cap on one frame in bytes, so a corrupt length cannot grow the buffer unbounded.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderValue {
    Bool(bool),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Bytes(Vec<u8>),
    String(String),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
    Uuid([u8; 16]),
}

/// One decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventStreamMessage {
    pub headers: Vec<(String, HeaderValue)>,
    /// The payload, JSON for Bedrock.
    pub payload: Vec<u8>,
}

impl EventStreamMessage {
    /// The value of string header `name`, such as `:event-type`.
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(n, v)| match v {
            HeaderValue::String(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }
}

/// Decodes frames from pieces of a body of any size, one byte at a time included.
#[derive(Debug)]
pub struct EventStreamDecoder {
    buf: Vec<u8>,
    max_message_bytes: usize,
}

impl Default for EventStreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl EventStreamDecoder {
    pub fn new() -> Self {
        Self::with_max_message_bytes(DEFAULT_MAX_MESSAGE_BYTES)
    }

    pub fn with_max_message_bytes(max_message_bytes: usize) -> Self {
        Self {
            buf: Vec::new(),
            max_message_bytes,
        }
    }

    /// Feeds the next piece, appending the frames it completes; any error leaves the stream
    /// unusable.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<EventStreamMessage>,
    ) -> Result<(), WireError> {
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        while self.buf.len() - start >= 12 {
            let frame = &self.buf[start..];
            let total = be_u32(frame, 0) as usize;
            let headers_len = be_u32(frame, 4) as usize;
            let prelude_crc = be_u32(frame, 8);
            let actual = crc32fast::hash(&frame[..8]);
            if actual != prelude_crc {
                return Err(WireError::Crc {
                    which: "prelude",
                    expected: prelude_crc,
                    actual,
                });
            }
            if total < OVERHEAD || headers_len > total - OVERHEAD {
                return Err(WireError::Frame(format!(
                    "total length {total} cannot hold {headers_len} bytes of headers"
                )));
            }
            if total > self.max_message_bytes {
                return Err(WireError::Frame(format!(
                    "a frame of {total} bytes is over the {}-byte limit",
                    self.max_message_bytes
                )));
            }
            if frame.len() < total {
                break;
            }
            let frame = &frame[..total];
            let message_crc = be_u32(frame, total - 4);
            let actual = crc32fast::hash(&frame[..total - 4]);
            if actual != message_crc {
                return Err(WireError::Crc {
                    which: "message",
                    expected: message_crc,
                    actual,
                });
            }
            let headers = parse_headers(&frame[12..12 + headers_len])?;
            let payload = frame[12 + headers_len..total - 4].to_vec();
            out.push(EventStreamMessage { headers, payload });
            start += total;
        }
        self.buf.drain(..start);
        Ok(())
    }

    /// Ends the body; the bytes of an unfinished frame are an error.
    pub fn finish(&mut self) -> Result<(), WireError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            let n = self.buf.len();
            self.buf.clear();
            Err(WireError::Frame(format!(
                "the body ended inside a frame ({n} bytes left over)"
            )))
        }
    }
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn parse_headers(mut b: &[u8]) -> Result<Vec<(String, HeaderValue)>, WireError> {
    let cut = || WireError::Frame("a header runs past the end of the header block".into());
    let take = |b: &mut &[u8], n: usize| -> Result<Vec<u8>, WireError> {
        if b.len() < n {
            return Err(cut());
        }
        let (head, rest) = b.split_at(n);
        *b = rest;
        Ok(head.to_vec())
    };
    let mut headers = Vec::new();
    while !b.is_empty() {
        let name_len = take(&mut b, 1)?[0] as usize;
        let name = String::from_utf8(take(&mut b, name_len)?)
            .map_err(|_| WireError::Frame("a header name is not UTF-8".into()))?;
        let kind = take(&mut b, 1)?[0];
        let fixed = |v: Vec<u8>| -> [u8; 8] {
            let mut a = [0u8; 8];
            a[8 - v.len()..].copy_from_slice(&v);
            a
        };
        let value = match kind {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Byte(take(&mut b, 1)?[0] as i8),
            3 => HeaderValue::Short(i64::from_be_bytes(fixed(take(&mut b, 2)?)) as i16),
            4 => HeaderValue::Int(i64::from_be_bytes(fixed(take(&mut b, 4)?)) as i32),
            5 => HeaderValue::Long(i64::from_be_bytes(fixed(take(&mut b, 8)?))),
            6 | 7 => {
                let len = take(&mut b, 2)?;
                let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
                let bytes = take(&mut b, len)?;
                if kind == 6 {
                    HeaderValue::Bytes(bytes)
                } else {
                    HeaderValue::String(
                        String::from_utf8(bytes)
                            .map_err(|_| WireError::Frame(format!("header {name} is not UTF-8")))?,
                    )
                }
            }
            8 => HeaderValue::Timestamp(i64::from_be_bytes(fixed(take(&mut b, 8)?))),
            9 => {
                let mut uuid = [0u8; 16];
                uuid.copy_from_slice(&take(&mut b, 16)?);
                HeaderValue::Uuid(uuid)
            }
            other => {
                return Err(WireError::Frame(format!(
                    "header {name} has unknown type {other}"
                )));
            }
        };
        headers.push((name, value));
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes one frame (the inverse of the decoder), for tests.
    fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
        let mut h = Vec::new();
        for (name, value) in headers {
            h.push(name.len() as u8);
            h.extend_from_slice(name.as_bytes());
            h.push(7);
            h.extend_from_slice(&(value.len() as u16).to_be_bytes());
            h.extend_from_slice(value.as_bytes());
        }
        let total = (OVERHEAD + h.len() + payload.len()) as u32;
        let mut f = Vec::new();
        f.extend_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&(h.len() as u32).to_be_bytes());
        let crc = crc32fast::hash(&f);
        f.extend_from_slice(&crc.to_be_bytes());
        f.extend_from_slice(&h);
        f.extend_from_slice(payload);
        let crc = crc32fast::hash(&f);
        f.extend_from_slice(&crc.to_be_bytes());
        f
    }

    fn fixture(name: &str) -> Vec<u8> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");
        std::fs::read(format!("{dir}/{name}.bin")).unwrap()
    }

    fn decode_in_pieces(bytes: &[u8], piece: usize) -> Result<Vec<EventStreamMessage>, WireError> {
        let mut d = EventStreamDecoder::new();
        let mut out = Vec::new();
        for chunk in bytes.chunks(piece) {
            d.feed(chunk, &mut out)?;
        }
        d.finish()?;
        Ok(out)
    }

    #[test]
    fn bedrock_fixtures_decode_the_same_in_any_piece_size() {
        for name in [
            "bedrock_converse_stream",
            "bedrock_throttling_midstream",
            "bedrock_model_stream_error",
        ] {
            let bytes = fixture(name);
            let whole = decode_in_pieces(&bytes, bytes.len()).unwrap();
            assert!(!whole.is_empty());
            for piece in [1, 5, 7, 64] {
                assert_eq!(
                    decode_in_pieces(&bytes, piece).unwrap(),
                    whole,
                    "{name} in {piece}-byte pieces"
                );
            }
        }
        let first = &decode_in_pieces(&fixture("bedrock_converse_stream"), 1).unwrap()[0];
        assert_eq!(first.header_str(":event-type"), Some("messageStart"));
        assert_eq!(first.header_str(":message-type"), Some("event"));
        assert!(first.payload.starts_with(b"{\"role\":\"assistant\""));
    }

    #[test]
    fn a_corrupted_crc_is_a_clear_error() {
        let mut bytes = fixture("bedrock_converse_stream");
        // Flip a payload byte of the first frame: its message CRC no longer matches.
        bytes[100] ^= 0x01;
        let err = decode_in_pieces(&bytes, 7).unwrap_err();
        assert!(
            matches!(
                err,
                WireError::Crc {
                    which: "message",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("message CRC"), "{err}");
        // Flip a prelude byte: the prelude CRC catches it before the length is trusted.
        let mut bytes = fixture("bedrock_converse_stream");
        bytes[2] ^= 0x40;
        assert!(matches!(
            decode_in_pieces(&bytes, 1),
            Err(WireError::Crc {
                which: "prelude",
                ..
            })
        ));
    }

    #[test]
    fn a_body_cut_inside_a_frame_is_an_error() {
        let bytes = frame(&[(":event-type", "x")], b"{}");
        let err = decode_in_pieces(&bytes[..bytes.len() - 3], 1).unwrap_err();
        assert!(matches!(err, WireError::Frame(_)), "{err}");
    }

    #[test]
    fn header_types_round_trip() {
        let bytes = frame(
            &[
                (":message-type", "exception"),
                (":exception-type", "throttlingException"),
            ],
            b"{\"message\":\"slow\"}",
        );
        let m = &decode_in_pieces(&bytes, 3).unwrap()[0];
        assert_eq!(m.header_str(":exception-type"), Some("throttlingException"));
        assert_eq!(m.payload, b"{\"message\":\"slow\"}");
        // Non-string header types.
        let mut h = vec![4u8];
        h.extend_from_slice(b"flag");
        h.push(0);
        h.push(1);
        h.extend_from_slice(b"n");
        h.push(4);
        h.extend_from_slice(&(-2i32).to_be_bytes());
        assert_eq!(
            parse_headers(&h).unwrap(),
            vec![
                ("flag".to_owned(), HeaderValue::Bool(true)),
                ("n".to_owned(), HeaderValue::Int(-2))
            ]
        );
        assert!(parse_headers(&[3, b'a']).is_err());
    }
}
