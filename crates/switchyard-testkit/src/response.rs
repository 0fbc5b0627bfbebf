//! Raw HTTP responses and the small HTTP/1.1 parsing helpers the server shares.

use std::path::Path;

/// A raw HTTP response as bytes on the wire.
///
/// `head` is the status line, the header lines and the blank line, each ending in CRLF, exactly
/// as sent; `body` is every byte after the first `\r\n\r\n`. The server writes both unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    /// Status line + headers + the blank line, as sent (ends with `\r\n\r\n`).
    pub head: Vec<u8>,
    /// The raw body bytes, as sent (may be EOF-framed, chunk-framed or truncated).
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// Splits raw response bytes at the first `\r\n\r\n`: everything up to and including it is
    /// the head, the rest is the body.
    ///
    /// # Panics
    ///
    /// If `raw` contains no `\r\n\r\n`.
    pub fn parse(raw: &[u8]) -> Self {
        let end = find(raw, b"\r\n\r\n").unwrap_or_else(|| {
            panic!(
                "not a raw HTTP response: no \"\\r\\n\\r\\n\" ends the head (first bytes: {:?})",
                String::from_utf8_lossy(&raw[..raw.len().min(80)])
            )
        }) + 4;
        Self {
            head: raw[..end].to_vec(),
            body: raw[end..].to_vec(),
        }
    }

    /// Reads a raw response file (see [`HttpResponse::parse`]).
    ///
    /// # Panics
    ///
    /// If the file cannot be read (the message names the path) or is not a raw response.
    pub fn load(path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let raw = std::fs::read(path)
            .unwrap_or_else(|e| panic!("cannot read HTTP response file {}: {e}", path.display()));
        if find(&raw, b"\r\n\r\n").is_none() {
            panic!(
                "{} is not a raw HTTP response: no \"\\r\\n\\r\\n\" ends the head",
                path.display()
            );
        }
        Self::parse(&raw)
    }

    /// Loads `tests/fixtures/{name}.http` (see [`crate::test_data_dir`]).
    ///
    /// # Panics
    ///
    /// If the fixture is missing or malformed.
    pub fn fixture(name: &str) -> Self {
        Self::load(
            crate::test_data_dir()
                .join("fixtures")
                .join(format!("{name}.http")),
        )
    }

    /// Loads `tests/cases/{name}.http` (see [`crate::test_data_dir`]).
    ///
    /// # Panics
    ///
    /// If the case file is missing or malformed.
    pub fn case(name: &str) -> Self {
        Self::load(
            crate::test_data_dir()
                .join("cases")
                .join(format!("{name}.http")),
        )
    }

    /// Builds a response: `HTTP/1.1 {status} {reason}`, the given headers in order, and a correct
    /// `content-length` for `body`.
    ///
    /// A `content-length` in `headers` is dropped (the correct one replaces it). If `headers`
    /// contains `transfer-encoding`, no `content-length` is added and `body` must already be
    /// framed. To send a lying `content-length`, build the bytes yourself and use
    /// [`HttpResponse::parse`].
    pub fn new(status: u16, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Self {
        let body = body.into();
        let mut head = format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status));
        let mut has_transfer_encoding = false;
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("content-length") {
                continue;
            }
            if name.eq_ignore_ascii_case("transfer-encoding") {
                has_transfer_encoding = true;
            }
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !has_transfer_encoding {
            head.push_str(&format!("content-length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        Self {
            head: head.into_bytes(),
            body,
        }
    }

    /// A response with `content-type: application/json` and a correct `content-length`.
    pub fn json(status: u16, body: &str) -> Self {
        Self::new(status, &[("content-type", "application/json")], body)
    }

    /// A `200` response with `content-type: text/event-stream` and a correct `content-length`.
    pub fn sse(body: &str) -> Self {
        Self::new(200, &[("content-type", "text/event-stream")], body)
    }

    /// The status code from the status line.
    ///
    /// # Panics
    ///
    /// If the status line has no numeric status code.
    pub fn status(&self) -> u16 {
        let line = self.head_lines().next().unwrap_or_default();
        line.split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("HTTP response has a malformed status line: {line:?}"))
    }

    /// The value of the first header called `name` (case-insensitive), without surrounding
    /// whitespace. Non-UTF-8 bytes are replaced with U+FFFD.
    pub fn header(&self, name: &str) -> Option<String> {
        self.header_values(name).into_iter().next()
    }

    /// Every header value called `name` (case-insensitive), trimmed, in order.
    fn header_values(&self, name: &str) -> Vec<String> {
        self.head_lines()
            .skip(1)
            .filter_map(|line| {
                let (n, v) = line.split_once(':')?;
                n.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_string())
            })
            .collect()
    }

    /// The head as lines (status line first), without the final blank line.
    fn head_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.head
            .split(|&b| b == b'\n')
            .map(|line| String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line)).into())
            .take_while(|line: &String| !line.is_empty())
    }

    /// Whether a connection can carry another request after this response is sent in full:
    /// HTTP/1.1, no `connection: close`, and a body whose end the client can find without EOF
    /// (a `content-length` equal to the body length, or a complete chunked body).
    pub(crate) fn is_self_delimiting(&self) -> bool {
        let status_line = self.head_lines().next().unwrap_or_default();
        if !status_line.starts_with("HTTP/1.1 ") {
            return false;
        }
        let connection = self.header_values("connection").join(",");
        if has_token(&connection, "close") {
            return false;
        }
        let transfer_encoding = self.header_values("transfer-encoding");
        if !transfer_encoding.is_empty() {
            let joined = transfer_encoding.join(",");
            let last = joined.rsplit(',').next().unwrap_or_default().trim();
            return last.eq_ignore_ascii_case("chunked")
                && matches!(parse_chunked(&self.body), Chunked::Complete { consumed, .. } if consumed == self.body.len());
        }
        let lengths = self.header_values("content-length");
        match lengths.as_slice() {
            [one] => one.parse::<usize>().ok() == Some(self.body.len()),
            [] => {
                let status = self.status();
                self.body.is_empty() && (status == 204 || status == 304 || status < 200)
            }
            _ => false,
        }
    }
}

/// Standard reason phrases for the codes a provider test is likely to use.
fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        424 => "Failed Dependency",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Whether a comma-separated header value contains `token` (case-insensitive).
pub(crate) fn has_token(value: &str, token: &str) -> bool {
    value
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Position of the first occurrence of `needle` in `haystack`.
pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Result of decoding a chunked body from the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Chunked {
    /// The terminating chunk and trailers were found; `consumed` bytes make up the body.
    Complete { data: Vec<u8>, consumed: usize },
    /// More bytes are needed.
    Incomplete,
    /// The framing is broken.
    Invalid,
}

/// Decodes `Transfer-Encoding: chunked` framing (chunk extensions and trailers are skipped).
pub(crate) fn parse_chunked(buf: &[u8]) -> Chunked {
    let mut data = Vec::new();
    let mut pos = 0;
    loop {
        let Some(line_len) = find(&buf[pos..], b"\r\n") else {
            return Chunked::Incomplete;
        };
        let line = &buf[pos..pos + line_len];
        let size_text = line.split(|&b| b == b';').next().unwrap_or_default();
        let Some(size) = std::str::from_utf8(size_text)
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
        else {
            return Chunked::Invalid;
        };
        pos += line_len + 2;
        if size == 0 {
            // Trailer section: header lines until an empty line.
            loop {
                let Some(trailer_len) = find(&buf[pos..], b"\r\n") else {
                    return Chunked::Incomplete;
                };
                pos += trailer_len + 2;
                if trailer_len == 0 {
                    return Chunked::Complete {
                        data,
                        consumed: pos,
                    };
                }
            }
        }
        let Some(chunk_end) = pos.checked_add(size) else {
            return Chunked::Invalid;
        };
        if buf.len() < chunk_end + 2 {
            return Chunked::Incomplete;
        }
        if &buf[chunk_end..chunk_end + 2] != b"\r\n" {
            return Chunked::Invalid;
        }
        data.extend_from_slice(&buf[pos..chunk_end]);
        pos = chunk_end + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_splits_at_first_blank_line() {
        let r = HttpResponse::parse(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nx\r\n\r\ny");
        assert_eq!(r.head, b"HTTP/1.1 200 OK\r\nA: b\r\n\r\n");
        assert_eq!(r.body, b"x\r\n\r\ny");
        assert_eq!(r.status(), 200);
        assert_eq!(r.header("a").as_deref(), Some("b"));
        assert_eq!(r.header("missing"), None);
    }

    #[test]
    #[should_panic(expected = "no \"\\r\\n\\r\\n\"")]
    fn parse_without_blank_line_panics() {
        HttpResponse::parse(b"HTTP/1.1 200 OK\r\nA: b\r\n");
    }

    #[test]
    #[should_panic(expected = "definitely-missing.http")]
    fn missing_fixture_names_the_path() {
        HttpResponse::fixture("definitely-missing");
    }

    #[test]
    fn new_adds_content_length_and_drops_a_wrong_one() {
        let r = HttpResponse::new(429, &[("Retry-After", "3"), ("Content-Length", "99")], "hé");
        assert_eq!(
            r.head,
            b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\ncontent-length: 3\r\n\r\n"
        );
        assert_eq!(r.status(), 429);
        assert_eq!(r.header("retry-after").as_deref(), Some("3"));
        assert_eq!(r.header("CONTENT-LENGTH").as_deref(), Some("3"));
        assert!(r.is_self_delimiting());
    }

    #[test]
    fn json_and_sse_helpers() {
        let j = HttpResponse::json(400, "{}");
        assert_eq!(j.status(), 400);
        assert_eq!(
            j.header("content-type").as_deref(),
            Some("application/json")
        );
        assert_eq!(j.body, b"{}");
        let s = HttpResponse::sse("data: x\n\n");
        assert_eq!(s.status(), 200);
        assert_eq!(
            s.header("Content-Type").as_deref(),
            Some("text/event-stream")
        );
        assert_eq!(s.header("content-length").as_deref(), Some("9"));
    }

    #[test]
    fn transfer_encoding_suppresses_content_length() {
        let r = HttpResponse::new(
            200,
            &[("transfer-encoding", "chunked")],
            "1\r\na\r\n0\r\n\r\n",
        );
        assert_eq!(r.header("content-length"), None);
        assert!(r.is_self_delimiting());
    }

    #[test]
    fn chunked_decoding() {
        assert_eq!(
            parse_chunked(b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\nrest"),
            Chunked::Complete {
                data: b"abcde".to_vec(),
                consumed: 34
            }
        );
        assert_eq!(parse_chunked(b"3\r\nabc\r\n"), Chunked::Incomplete);
        assert_eq!(parse_chunked(b"3\r\nab"), Chunked::Incomplete);
        assert_eq!(parse_chunked(b"zz\r\n"), Chunked::Invalid);
        assert_eq!(parse_chunked(b"1\r\nabc"), Chunked::Invalid);
    }

    #[test]
    fn self_delimiting_rules() {
        let eof = HttpResponse::parse(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabc");
        assert!(!eof.is_self_delimiting());
        let no_len = HttpResponse::parse(b"HTTP/1.1 200 OK\r\n\r\nabc");
        assert!(!no_len.is_self_delimiting());
        let lying = HttpResponse::parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc");
        assert!(!lying.is_self_delimiting());
        let close = HttpResponse::parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive, Close\r\n\r\nabc",
        );
        assert!(!close.is_self_delimiting());
        let truncated = HttpResponse::parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
        );
        assert!(!truncated.is_self_delimiting());
        let http10 = HttpResponse::parse(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc");
        assert!(!http10.is_self_delimiting());
        let no_content = HttpResponse::parse(b"HTTP/1.1 204 No Content\r\n\r\n");
        assert!(no_content.is_self_delimiting());
    }
}
