//! A newline-delimited JSON line splitter, for Ollama's `/api/chat` stream; the caller parses each
//! line. Blank lines and a leading UTF-8 BOM are skipped, as RFC 8259 §8.1 lets a JSON parser do.
//! Spec: R4.0, R4.1.

use super::decode::{
    DEFAULT_MAX_LINE_BYTES, WireError, check_line, clear_buffer, skip_bom, utf8_lossy,
};

/// An incremental splitter of an `application/x-ndjson` body into lines.
#[derive(Debug)]
pub struct NdjsonDecoder {
    /// The incomplete line carried over, at the start the part of the BOM seen so far.
    partial: Vec<u8>,
    /// The cap on one line in bytes, LF not counted.
    limit: usize,
    /// No byte past a possible BOM has been seen yet.
    at_start: bool,
}

impl NdjsonDecoder {
    pub fn new() -> Self {
        Self::with_max_line_bytes(DEFAULT_MAX_LINE_BYTES)
    }

    /// A decoder whose lines may be `limit` bytes long, counting a CR before the LF but not the LF.
    pub fn with_max_line_bytes(limit: usize) -> Self {
        Self {
            partial: Vec::new(),
            limit,
            at_start: true,
        }
    }

    /// Feeds the next piece, appending each complete non-blank line to `lines` without its line
    /// end.
    pub fn feed(&mut self, bytes: &[u8], lines: &mut Vec<String>) -> Result<(), WireError> {
        let Some(mut bytes) = skip_bom(&mut self.partial, &mut self.at_start, bytes) else {
            return Ok(());
        };
        while let Some(end) = memchr::memchr(b'\n', bytes) {
            if self.partial.is_empty() {
                self.check(end)?;
                push_line(&bytes[..end], lines);
            } else {
                self.check(self.partial.len() + end)?;
                self.partial.extend_from_slice(&bytes[..end]);
                push_line(&self.partial, lines);
                clear_buffer(&mut self.partial);
            }
            bytes = &bytes[end + 1..];
        }
        self.check(self.partial.len() + bytes.len())?;
        self.partial.extend_from_slice(bytes);
        Ok(())
    }

    /// Ends the body, appending a last line without newline, and resets the decoder; it cannot fail
    /// yet.
    pub fn finish(&mut self, lines: &mut Vec<String>) -> Result<(), WireError> {
        push_line(&self.partial, lines);
        *self = Self::with_max_line_bytes(self.limit);
        Ok(())
    }

    fn check(&mut self, len: usize) -> Result<(), WireError> {
        check_line(&mut self.partial, len, self.limit)
    }
}

impl Default for NdjsonDecoder {
    fn default() -> Self {
        Self::new()
    }
}

/// Appends `line` without a trailing CR, unless it is blank.
fn push_line(line: &[u8], lines: &mut Vec<String>) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        return;
    }
    lines.push(utf8_lossy(line).into_owned());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::decode::BOM;
    use proptest::prelude::*;
    use std::path::PathBuf;

    fn decode_pieces<P: AsRef<[u8]>>(pieces: &[P]) -> Vec<String> {
        let mut decoder = NdjsonDecoder::new();
        let mut lines = Vec::new();
        for piece in pieces {
            decoder.feed(piece.as_ref(), &mut lines).unwrap();
        }
        decoder.finish(&mut lines).unwrap();
        lines
    }

    fn decode_in_pieces_of(body: &[u8], size: usize) -> Vec<String> {
        decode_pieces(&body.chunks(size).collect::<Vec<_>>())
    }

    /// Decodes `body` whole and in pieces of every size from 1 to 9, asserting they agree.
    fn decode_all_ways(body: &[u8]) -> Vec<String> {
        let whole = decode_pieces(&[body]);
        for size in 1..10 {
            assert_eq!(decode_in_pieces_of(body, size), whole, "pieces of {size}");
        }
        whole
    }

    #[test]
    fn lf_and_crlf_line_ends() {
        assert_eq!(
            decode_all_ways(b"{\"a\":1}\n{\"b\":2}\r\n{\"c\":3}\n"),
            ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]
        );
    }

    #[test]
    fn crlf_split_across_pieces() {
        assert_eq!(decode_pieces(&["{}\r", "\n{}\r", "", "\n"]), ["{}", "{}"]);
    }

    #[test]
    fn a_lone_cr_is_not_a_line_end() {
        assert_eq!(decode_all_ways(b"{\"a\":\r1}\n"), ["{\"a\":\r1}"]);
        // Only one trailing CR is dropped.
        assert_eq!(decode_all_ways(b"{}\r\r\n"), ["{}\r"]);
    }

    #[test]
    fn blank_lines_are_skipped() {
        assert_eq!(
            decode_all_ways(b"\n\r\n  \n\t\r\n{}\n\n \r\n{ }\n"),
            ["{}", "{ }"]
        );
        assert_eq!(decode_all_ways(b" \r"), Vec::<String>::new());
    }

    #[test]
    fn surrounding_whitespace_is_kept() {
        assert_eq!(decode_all_ways(b"  {} \n"), ["  {} "]);
    }

    #[test]
    fn final_line_without_newline_is_a_line() {
        assert_eq!(
            decode_all_ways(b"{\"a\":1}\n{\"done\":true}"),
            ["{\"a\":1}", "{\"done\":true}"]
        );
        assert_eq!(decode_all_ways(b"{\"done\":true}\r"), ["{\"done\":true}"]);
        assert_eq!(decode_all_ways(b""), Vec::<String>::new());
    }

    #[test]
    fn utf8_split_across_pieces_is_reassembled() {
        let body = "{\"content\":\"東京 — ₆ «x»\"}\n".as_bytes();
        assert_eq!(decode_all_ways(body), ["{\"content\":\"東京 — ₆ «x»\"}"]);
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(
            decode_all_ways(b"{\xFF}\n\xE6\x9D\n"),
            ["{\u{FFFD}}", "\u{FFFD}"]
        );
    }

    #[test]
    fn leading_bom_is_skipped_only_at_the_start() {
        assert_eq!(decode_all_ways(b"\xEF\xBB\xBF{}\n"), ["{}"]);
        assert_eq!(decode_pieces(&[&b"\xEF"[..], b"\xBB", b"\xBF{}\n"]), ["{}"]);
        assert_eq!(
            decode_all_ways(b"{}\n\xEF\xBB\xBF{}\n"),
            ["{}", "\u{FEFF}{}"]
        );
        assert_eq!(decode_all_ways(b"\xEF\xBB{}\n"), ["\u{FFFD}{}"]);
        assert_eq!(decode_all_ways(b"\xEF\xBB"), ["\u{FFFD}"]);
    }

    #[test]
    fn finish_resets_for_a_new_stream() {
        let mut decoder = NdjsonDecoder::new();
        let mut lines = Vec::new();
        decoder.feed(b"{\"a\":1}\n{\"b\"", &mut lines).unwrap();
        decoder.finish(&mut lines).unwrap();
        decoder.feed(b"\xEF\xBB\xBF{}\n", &mut lines).unwrap();
        decoder.finish(&mut lines).unwrap();
        assert_eq!(lines, ["{\"a\":1}", "{\"b\"", "{}"]);
    }

    #[test]
    fn five_megabyte_line_in_seven_byte_pieces() {
        let payload: String = "0123456789abcdef東京₆«»—"
            .chars()
            .cycle()
            .take(3_500_000)
            .collect();
        let body = format!("{{\"content\":\"{payload}\"}}\n{{\"done\":true}}\n");
        assert!(body.len() > 5_000_000);
        let mut decoder = NdjsonDecoder::new();
        let mut lines = Vec::new();
        for piece in body.as_bytes().chunks(7) {
            decoder.feed(piece, &mut lines).unwrap();
        }
        decoder.finish(&mut lines).unwrap();
        assert_eq!(lines.len(), 2);
        assert!(lines[0] == format!("{{\"content\":\"{payload}\"}}"));
        assert_eq!(lines[1], "{\"done\":true}");
    }

    #[test]
    fn line_over_the_cap_is_an_error() {
        let limit = 8;
        let mut lines = Vec::new();
        let mut decoder = NdjsonDecoder::with_max_line_bytes(limit);
        decoder.feed(b"12345678\n", &mut lines).unwrap();
        decoder.feed(b"1234567\r\n", &mut lines).unwrap();
        assert_eq!(
            decoder.feed(b"123456789\n", &mut lines),
            Err(WireError::LineTooLong { limit })
        );
        assert_eq!(lines, ["12345678", "1234567"]);
        for size in 1..6 {
            let mut decoder = NdjsonDecoder::with_max_line_bytes(limit);
            let mut result = Ok(());
            for piece in b"{\"a\":\"bcdefg\"".chunks(size) {
                result = decoder.feed(piece, &mut lines);
                if result.is_err() {
                    break;
                }
                assert!(decoder.partial.len() <= limit);
            }
            assert_eq!(result, Err(WireError::LineTooLong { limit }), "{size}");
        }
        let mut decoder = NdjsonDecoder::default();
        decoder
            .feed(&vec![b'x'; DEFAULT_MAX_LINE_BYTES], &mut lines)
            .unwrap();
        assert_eq!(
            decoder.feed(b"x", &mut lines),
            Err(WireError::LineTooLong {
                limit: DEFAULT_MAX_LINE_BYTES
            })
        );
    }

    // ---- property tests -------------------------------------------------------------------

    const TEXT: &[char] = &[
        'a', '0', ' ', '\t', '{', '}', '"', ':', ',', '«', '»', '—', '東', '京', '₆', '\r',
        '\u{FEFF}',
    ];

    fn line_text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(TEXT), 0..16)
            .prop_map(|chars| chars.into_iter().collect())
    }

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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_split_gives_the_lines_of_the_whole(
            texts in prop::collection::vec((line_text(), any::<bool>()), 0..12),
            last_newline in any::<bool>(),
            bom in any::<bool>(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let mut body = Vec::new();
            let mut expected = Vec::new();
            if bom {
                body.extend_from_slice(&BOM);
            }
            for (i, (text, crlf)) in texts.iter().enumerate() {
                body.extend_from_slice(text.as_bytes());
                let last = i + 1 == texts.len();
                if !last || last_newline {
                    body.extend_from_slice(if *crlf { b"\r\n" } else { b"\n" });
                }
                // What the line is after its end is taken off.
                let mut line = text.as_str();
                if !(*crlf && (!last || last_newline)) {
                    line = line.strip_suffix('\r').unwrap_or(line);
                }
                // A BOM the text starts the body with is skipped too.
                if i == 0 && !bom {
                    line = line.strip_prefix('\u{FEFF}').unwrap_or(line);
                }
                if !line.chars().all(|c| matches!(c, ' ' | '\t' | '\r')) {
                    expected.push(line.to_owned());
                }
            }
            let whole = decode_pieces(&[&body]);
            prop_assert_eq!(&whole, &expected);
            prop_assert_eq!(decode_pieces(&split_at(&body, &cuts)), whole.clone());
            prop_assert_eq!(decode_in_pieces_of(&body, 1), whole);
        }

        #[test]
        fn any_split_of_arbitrary_bytes_gives_the_same_result(
            body in prop::collection::vec(
                prop::sample::select(&[b'{', b'a', b' ', b'\r', b'\n', 0xEF, 0xBB, 0xBF, 0xE6, 0x9D, 0xB1][..]),
                0..64,
            ),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
            limit in 0usize..10,
        ) {
            let whole = decode_pieces(&[&body]);
            prop_assert_eq!(decode_pieces(&split_at(&body, &cuts)), whole.clone());
            prop_assert_eq!(decode_in_pieces_of(&body, 1), whole);
            let run = |pieces: &[Vec<u8>]| {
                let mut decoder = NdjsonDecoder::with_max_line_bytes(limit);
                let mut lines = Vec::new();
                for piece in pieces {
                    if let Err(err) = decoder.feed(piece, &mut lines) {
                        return (lines, Err(err));
                    }
                }
                let result = decoder.finish(&mut lines);
                (lines, result)
            };
            prop_assert_eq!(run(&split_at(&body, &cuts)), run(std::slice::from_ref(&body)));
        }
    }

    // ---- recorded provider streams ---------------------------------------------------------

    /// The repository's test data (`tests/` at the workspace root, found from this crate's
    /// manifest directory).
    fn test_data_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests")
    }

    #[test]
    fn fixtures_decode_the_same_in_any_pieces() {
        let dir = test_data_dir().join("fixtures");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(name.starts_with("ollama_") && name.ends_with(".http")) {
                continue;
            }
            let raw = std::fs::read(&path).unwrap();
            let split = memchr::memmem::find(&raw, b"\r\n\r\n").unwrap();
            let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
            if !head.contains("content-type: application/x-ndjson") {
                continue;
            }
            let body = &raw[split + 4..];
            let whole = decode_pieces(&[body]);
            assert!(!whole.is_empty(), "{name}: no lines");
            assert!(
                whole
                    .iter()
                    .all(|line| line.starts_with('{') && line.ends_with('}')),
                "{name}: {whole:?}"
            );
            assert_eq!(
                whole.len(),
                body.iter().filter(|&&b| b == b'\n').count(),
                "{name}"
            );
            for size in [1, 5, 7] {
                assert_eq!(decode_in_pieces_of(body, size), whole, "{name} in {size}s");
            }
            checked += 1;
        }
        assert!(
            checked >= 2,
            "only {checked} NDJSON fixtures in {}",
            dir.display()
        );
    }
}
