//! The `Retry-After` readers (SPEC R5.2): a header value (seconds, Unix times, HTTP dates,
//! RFC 3339, durations), a response's rate-limit headers, and an error message's words. No
//! panic, and a plain count of seconds is that many seconds. Input: text; its first line is
//! the value, each `name: value` line a header, the whole text the message.
#![no_main]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libfuzzer_sys::fuzz_target;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use switchyard_api::providers::fuzzing::{retry_after_headers, retry_after_message, retry_value};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // 2026-01-01T00:00:00Z: past every date a test case names as a reset.
    let now = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    let first = text.lines().next().unwrap_or("");
    let value = retry_value(first, now);
    let digits = first.trim();
    if !digits.is_empty() && digits.len() <= 8 && digits.bytes().all(|b| b.is_ascii_digit()) {
        let n: u64 = digits.parse().unwrap_or(0);
        assert_eq!(value, Some(Duration::from_secs(n)), "{first:?} seconds");
    }
    let mut headers = HeaderMap::new();
    for line in text.lines() {
        let Some((name, v)) = line.split_once(':') else {
            continue;
        };
        if let (Ok(n), Ok(v)) = (
            HeaderName::try_from(name.trim()),
            HeaderValue::try_from(v.trim()),
        ) {
            headers.append(n, v);
        }
    }
    let _ = retry_after_headers(&headers, now);
    let _ = retry_after_headers(&headers, SystemTime::UNIX_EPOCH);
    let _ = retry_after_message(text, now);
});
