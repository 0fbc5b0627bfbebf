//! The error-body classifier (SPEC R4.0, R7, R7.4): any failed response's status, content type,
//! headers and body give a classified error with a message, and a body that is not JSON is
//! never shown (an HTML page is never dumped). Mid-stream error events classify too. Input:
//! two bytes of status, then text: a content-type line, `name: value` header lines, an empty
//! line, then the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use switchyard_api::providers::fuzzing::{error_from_body, error_from_event};
use switchyard_fuzz::split_head;

fuzz_target!(|data: &[u8]| {
    let (status, rest) = split_head(data, 2);
    let status = match status {
        [a, b] => 100 + u16::from_be_bytes([*a, *b]) % 500,
        _ => 500,
    };
    let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&rest[..at], &rest[at + 2..]),
        None => (&rest[..0], rest),
    };
    let head = String::from_utf8_lossy(head);
    let mut lines = head.lines();
    let content_type = lines.next().unwrap_or("");
    let mut headers = HeaderMap::new();
    for line in lines {
        if let Some((n, v)) = line.split_once(':') {
            if let (Ok(n), Ok(v)) = (
                HeaderName::try_from(n.trim()),
                HeaderValue::try_from(v.trim()),
            ) {
                headers.append(n, v);
            }
        }
    }
    let err = error_from_body(status, content_type, body, &headers);
    let shown = err.to_string();
    assert!(!shown.trim().is_empty(), "an error without a message");
    let json = serde_json::from_slice::<serde_json::Value>(body);
    if let (Err(_), Ok(text)) = (&json, std::str::from_utf8(body)) {
        let text = text.trim();
        // The text counts as shown only if a body that is not its own would not have given
        // those words: a body that spells out our own sentence, content type included, is not
        // a leak (tests/fuzz/error_body/body_spells_the_message.body).
        let other = error_from_body(status, content_type, b"<", &headers).to_string();
        if text.len() >= 24 && !head.contains(text) && !other.contains(text) {
            assert!(!shown.contains(text), "the body was shown: {shown}");
        }
    }
    if let Ok(v) = json {
        let _ = error_from_event(&v).to_string();
    }
});
