//! The target `serve_headers`: a client request's header block and a dashboard form body read
//! as `switchyard serve` reads them (SPEC R14.2, R14.6, R14.11), each reader checked against
//! its rule as stated there, written again here from the rule.

use std::net::IpAddr;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use switchyard_gateway::fuzzing::{KEY_MAX, form_decode, form_field, read_headers};

/// `data`'s lines up to the first blank one as `name: value` headers (lines that are not a
/// valid header are skipped, as hyper refuses them before the gateway sees them); the rest is
/// a urlencoded form body.
pub fn check(data: &[u8]) {
    let blank = data.windows(2).position(|w| w == b"\n\n");
    let (head, form) = blank.map_or((data, &[][..]), |i| (&data[..i], &data[i + 2..]));
    let headers = header_map(head);
    check_headers(&headers);
    check_form(&String::from_utf8_lossy(form));
}

fn header_map(head: &[u8]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for line in head.split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let name = HeaderName::from_bytes(line[..colon].trim_ascii());
        let value = HeaderValue::from_bytes(line[colon + 1..].trim_ascii());
        if let (Ok(name), Ok(value)) = (name, value) {
            headers.append(name, value);
        }
    }
    headers
}

/// The values of header `name` that are text.
fn texts<'h>(headers: &'h HeaderMap, name: &str) -> Vec<&'h str> {
    (headers.get_all(name).iter())
        .filter_map(|v| v.to_str().ok())
        .collect()
}

/// The comma-separated values of header `name` over all its lines, trimmed, empty ones left out.
fn values<'h>(headers: &'h HeaderMap, name: &str) -> Vec<&'h str> {
    (texts(headers, name).into_iter())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect()
}

/// The key the rule names: the first `Authorization` line if it is `Bearer KEY`, else the first
/// `x-api-key` line, else the first `x-goog-api-key` line; trimmed; none if empty or longer
/// than [`KEY_MAX`].
fn key_by_rule(headers: &HeaderMap) -> Option<&str> {
    let first = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let bearer = first("authorization").and_then(|v| {
        let (scheme, rest) = v.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
    });
    let key = bearer
        .or_else(|| first("x-api-key").map(str::trim))
        .or_else(|| first("x-goog-api-key").map(str::trim))?;
    (!key.is_empty() && key.len() <= KEY_MAX).then_some(key)
}

fn check_headers(headers: &HeaderMap) {
    let peer = IpAddr::from([192, 0, 2, 7]);
    let read = read_headers(headers, peer);
    assert_eq!(read.key, key_by_rule(headers), "the client key");
    if let Some(id) = read.session {
        assert!(
            id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id:?}"
        );
        let cookies = texts(headers, "cookie").join(";");
        assert!(
            cookies.contains(&format!("switchyard_session={id}")),
            "{id:?}"
        );
    }
    // Only `anthropic-beta`, only on Messages: its first line when it is text of at most 4 KiB.
    let [chat, responses, messages] = &read.forwarded;
    assert!(
        chat.is_empty() && responses.is_empty(),
        "{:?}",
        read.forwarded
    );
    let beta = headers.get("anthropic-beta").and_then(|v| v.to_str().ok());
    let want: Vec<(String, String)> = (beta.filter(|v| v.len() <= 4096).into_iter())
        .map(|v| ("anthropic-beta".to_owned(), v.to_owned()))
        .collect();
    assert_eq!(messages, &want);
    // A trusted proxy: the last X-Forwarded-For address (the one it appended), the first
    // X-Forwarded-Proto value; untrusted, neither counts.
    assert_eq!(read.address_untrusted, peer);
    let last = values(headers, "x-forwarded-for")
        .pop()
        .and_then(|a| a.parse().ok());
    assert_eq!(read.address_when_trusted, last.unwrap_or(peer));
    let first_proto = values(headers, "x-forwarded-proto").first().copied();
    let https = first_proto.is_some_and(|p| p.eq_ignore_ascii_case("https"));
    assert_eq!(read.secure_when_trusted, https, "{first_proto:?}");
}

/// `text` as a browser encodes a form value (application/x-www-form-urlencoded): ASCII letters,
/// digits and `*-._` as they are, a space as `+`, every other byte `%XX`, in upper-case hex for
/// even bytes and lower-case for odd ones (both are valid).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"*-._".contains(&b) {
            out.push(char::from(b));
        } else if b == b' ' {
            out.push('+');
        } else if b % 2 == 0 {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

fn check_form(text: &str) {
    let _ = form_field(text, "key");
    let _ = form_decode(text);
    // What a browser encodes reads back as it was, as a value among others.
    let encoded = encode(text);
    assert_eq!(form_decode(&encoded), text);
    let body = format!("next=%2Fui&key={encoded}&x");
    assert_eq!(form_field(&body, "key").as_deref(), Some(text));
}
