//! The waits a response asks for: `retry-after` and rate-limit reset headers, Gemini's
//! `RetryInfo`, and "try again in …" messages. Nothing here sleeps or reads the clock.
//! Spec: R5.2.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;

/// Default cap on a server-requested wait, where the reference slept for whatever it said.
pub const DEFAULT_RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

/// Numbers at or above this are Unix timestamps even when past: 1e9 s is 31 years as a delay.
const UNIX_SECS_THRESHOLD: f64 = 1e9;

/// Numbers at or above this are Unix timestamps in milliseconds: 1e11 s is the year 5138.
const UNIX_MS_THRESHOLD: f64 = 1e11;

/// The wait a response's headers ask for; the first that yields a value wins: `retry-after-ms`,
/// `retry-after`, `x-ratelimit-reset`, `ratelimit-reset`, then the latest reset of Anthropic's
/// or OpenAI's exhausted buckets. Absolute times count from the response's `Date` header when
/// it has one, so a skewed local clock does not distort the wait.
pub(crate) fn retry_after_from_headers(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let get = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let clock = response_clock(headers, now);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if let Some(d) = secs(ms / 1000.0) {
            return Some(d);
        }
    }
    if let Some(d) = ["retry-after", "x-ratelimit-reset", "ratelimit-reset"]
        .iter()
        .filter_map(|name| get(name))
        .find_map(|v| parse_retry_value(v, clock))
    {
        return Some(d);
    }
    let anthropic = ["requests", "tokens", "input-tokens", "output-tokens"].map(|b| {
        (
            format!("anthropic-ratelimit-{b}-remaining"),
            format!("anthropic-ratelimit-{b}-reset"),
        )
    });
    let openai = ["requests", "tokens"].map(|b| {
        (
            format!("x-ratelimit-remaining-{b}"),
            format!("x-ratelimit-reset-{b}"),
        )
    });
    latest_exhausted_reset(headers, &anthropic, |v| {
        Some(until(parse_rfc3339(v)?, clock))
    })
    .or_else(|| latest_exhausted_reset(headers, &openai, parse_duration))
}

/// The latest reset among the `(remaining, reset)` pairs whose remaining count is 0 or missing.
fn latest_exhausted_reset(
    headers: &HeaderMap,
    buckets: &[(String, String)],
    parse: impl Fn(&str) -> Option<Duration>,
) -> Option<Duration> {
    let get = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    buckets
        .iter()
        .filter(|(remaining, _)| get(remaining).is_none_or(|r| r.parse::<u64>().ok() == Some(0)))
        .filter_map(|(_, reset)| parse(get(reset)?))
        .max()
}

/// The clock absolute reset times count from: the response's valid `Date` header, else `now`.
pub(crate) fn response_clock(headers: &HeaderMap, now: SystemTime) -> SystemTime {
    headers
        .get("date")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v.trim()).ok())
        .unwrap_or(now)
}

/// Parses one rate-limit header value into a wait: delta seconds, a Unix timestamp, an HTTP
/// date, an RFC 3339 time or a duration such as `6m0s`. A number past `now` in Unix seconds is
/// a timestamp, as the reference reads it.
pub(crate) fn parse_retry_value(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(n) = value.parse::<f64>() {
        if !n.is_finite() || n < 0.0 {
            return None;
        }
        let now_unix = now.duration_since(UNIX_EPOCH).ok()?.as_secs_f64();
        if n > now_unix || n >= UNIX_SECS_THRESHOLD {
            let at_secs = if n >= UNIX_MS_THRESHOLD {
                n / 1000.0
            } else {
                n
            };
            return Some(secs(at_secs - now_unix).unwrap_or(Duration::ZERO));
        }
        return secs(n);
    }
    if let Ok(at) = httpdate::parse_http_date(value) {
        return Some(until(at, now));
    }
    if let Some(at) = parse_rfc3339(value) {
        return Some(until(at, now));
    }
    parse_duration(value)
}

/// Gemini's `google.rpc.RetryInfo.retryDelay` in an error body, such as `"36.218s"`.
pub(crate) fn retry_delay_from_body(body: &serde_json::Value) -> Option<Duration> {
    let body = match body {
        serde_json::Value::Array(items) => items.first()?,
        other => other,
    };
    body.pointer("/error/details")?
        .as_array()?
        .iter()
        .filter(|d| {
            d.get("@type")
                .and_then(|t| t.as_str())
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| {
            let v = d.get("retryDelay")?.as_str()?.trim();
            secs(v.strip_suffix('s')?.parse::<f64>().ok()?)
        })
}

/// A wait named in an error message, such as "try again in 915ms" or "resets at" a time.
pub(crate) fn retry_after_from_message(message: &str, now: SystemTime) -> Option<Duration> {
    let lower = message.to_ascii_lowercase();
    for phrase in ["try again in ", "retry in ", "retry after ", "wait "] {
        for (at, _) in lower.match_indices(phrase) {
            if let Some(d) = duration_prefix(&lower[at + phrase.len()..]) {
                return Some(d);
            }
        }
    }
    for phrase in ["reset at ", "resets at "] {
        for (at, _) in lower.match_indices(phrase) {
            if let Some((t, _)) = parse_rfc3339_prefix(&message[at + phrase.len()..]) {
                return Some(until(t, now));
            }
        }
    }
    None
}

fn duration_prefix(s: &str) -> Option<Duration> {
    let token: String = s
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    let token = token.trim_end_matches('.');
    if let Some(d) = parse_duration(token) {
        return Some(d);
    }
    let n: f64 = token.parse().ok()?;
    let unit: String = s[token.len()..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect();
    let scale = match unit.as_str() {
        "ms" | "millisecond" | "milliseconds" => 0.001,
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hour" | "hours" => 3600.0,
        _ => return None,
    };
    secs(n * scale)
}

/// Parses a Go-style duration such as `6m0s`; a bare number has no unit and is rejected.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0_f64;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return None;
        }
        let n: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += n * scale;
    }
    secs(total)
}

/// Parses an RFC 3339 timestamp, as Anthropic's reset headers carry, also with a space for the
/// `T` and a `±HHMM` offset. One format did not justify a date crate.
pub(crate) fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let (t, rest) = parse_rfc3339_prefix(s.trim())?;
    rest.trim().is_empty().then_some(t)
}

/// Parses an RFC 3339 timestamp at the start of `s` and returns the rest; Go's `+0000 UTC` too.
fn parse_rfc3339_prefix(s: &str) -> Option<(SystemTime, &str)> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<u32> {
        let part = b.get(from..from + len)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |acc, d| acc * 10 + u32::from(d - b'0')))
    };
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || !matches!(b.get(10), Some(b'T' | b't' | b' '))
        || b.get(13) != Some(&b':')
        || b.get(16) != Some(&b':')
    {
        return None;
    }
    if year < 1970
        || !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut nanos = 0u32;
    if b.get(i) == Some(&b'.') {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        for (k, d) in b[i + 1..i + 1 + digits].iter().take(9).enumerate() {
            nanos += u32::from(d - b'0') * 10u32.pow(8 - k as u32);
        }
        i += 1 + digits;
    }
    if b.get(i) == Some(&b' ') && matches!(b.get(i + 1), Some(b'+' | b'-' | b'Z' | b'z')) {
        i += 1;
    }
    let offset_secs: i64 = match b.get(i) {
        Some(b'Z' | b'z') => {
            i += 1;
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            let oh = num(i + 1, 2)?;
            let (om, len) = if b.get(i + 3) == Some(&b':') {
                (num(i + 4, 2)?, 6)
            } else {
                (num(i + 3, 2)?, 5)
            };
            if oh > 23 || om > 59 {
                return None;
            }
            i += len;
            let off = i64::from(oh * 3600 + om * 60);
            if *sign == b'-' { -off } else { off }
        }
        _ => return None,
    };
    let mut rest = &s[i..];
    if let Some(r) = rest.strip_prefix(" UTC") {
        rest = r;
    }
    let days = days_from_civil(i64::from(year), month, day);
    let unix = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_secs;
    let unix = u64::try_from(unix).ok()?;
    Some((UNIX_EPOCH + Duration::new(unix, nanos), rest))
}

fn is_leap(year: u32) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date, after H. Hinnant's `days_from_civil`.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn secs(s: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(s).ok()
}

fn until(at: SystemTime, now: SystemTime) -> Duration {
    at.duration_since(now).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    /// 2026-01-01T00:00:00Z, the `Date` of every case fixture.
    const CASES_DATE: u64 = 1_767_225_600;

    fn at(unix: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(unix)
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    /// The headers of a stored `.http` file (the repository.s `tests/` folder).
    fn file_headers(resp: &switchyard_testkit::HttpResponse) -> HeaderMap {
        let head = String::from_utf8(resp.head.clone()).unwrap();
        let pairs: Vec<(&str, &str)> = head
            .split("\r\n")
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect();
        headers(&pairs)
    }

    /// Far from every fixture's `Date`: results must not depend on the local clock.
    fn wall_clock() -> SystemTime {
        at(CASES_DATE + 333 * 86_400)
    }

    #[test]
    fn seconds_dates_and_timestamps() {
        let now = at(CASES_DATE);
        assert_eq!(parse_retry_value("17", now), Some(Duration::from_secs(17)));
        assert_eq!(
            parse_retry_value("0.915", now),
            Some(Duration::from_secs_f64(0.915))
        );
        assert_eq!(
            parse_retry_value("Thu, 01 Jan 2026 00:00:07 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_value("1767225630", now),
            Some(Duration::from_secs(30))
        );
        // Unix milliseconds (OpenRouter, C09): 24 h after the Date.
        assert_eq!(
            parse_retry_value("1767312000000", now),
            Some(Duration::from_secs(86_400))
        );
        // A timestamp in the past is no wait at all.
        assert_eq!(parse_retry_value("1767225000", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_value("2026-01-01T00:00:07Z", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_value("6m0s", now),
            Some(Duration::from_secs(360))
        );
        assert_eq!(parse_retry_value("soon", now), None);
        assert_eq!(parse_retry_value("-1", now), None);
        assert_eq!(parse_retry_value("NaN", now), None);
        assert_eq!(parse_retry_value("1e400", now), None);
    }

    #[test]
    fn header_precedence() {
        let now = at(CASES_DATE);
        let groups: [&[(&str, &str)]; 6] = [
            &[("retry-after-ms", "1500")],
            &[("retry-after", "7")],
            &[("x-ratelimit-reset", "9")],
            &[("ratelimit-reset", "11")],
            &[
                ("anthropic-ratelimit-tokens-remaining", "0"),
                ("anthropic-ratelimit-tokens-reset", "2026-01-01T00:00:13Z"),
            ],
            &[
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "15s"),
            ],
        ];
        let want = [1.5, 7.0, 9.0, 11.0, 13.0, 15.0];
        for (first, want) in want.iter().enumerate() {
            let pairs: Vec<(&str, &str)> = groups[first..].concat();
            assert_eq!(
                retry_after_from_headers(&headers(&pairs), now),
                Some(Duration::from_secs_f64(*want)),
                "{pairs:?}"
            );
        }
        // An unusable value falls through to the next header.
        let h = headers(&[("retry-after", "soon"), ("x-ratelimit-reset", "4")]);
        assert_eq!(
            retry_after_from_headers(&h, now),
            Some(Duration::from_secs(4))
        );
        assert_eq!(retry_after_from_headers(&HeaderMap::new(), now), None);
    }

    /// C05: `retry-after: 7` plus buckets at 0 resetting at Date + 7 s.
    #[test]
    fn c05_retry_after_header() {
        let h = headers(&[
            ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
            ("retry-after", "7"),
            ("anthropic-ratelimit-requests-remaining", "49"),
            ("anthropic-ratelimit-requests-reset", "2026-01-01T00:00:01Z"),
            ("anthropic-ratelimit-input-tokens-remaining", "0"),
            (
                "anthropic-ratelimit-input-tokens-reset",
                "2026-01-01T00:00:07Z",
            ),
        ]);
        assert_eq!(
            retry_after_from_headers(&h, wall_clock()),
            Some(Duration::from_secs(7))
        );
    }

    /// C05b: no `retry-after`; `max(reset_i − Date)` over the exhausted buckets = 7 s. The
    /// requests bucket (49 left, reset at +1 s) does not count.
    #[test]
    fn c05b_anthropic_resets_relative_to_date() {
        let h = headers(&[
            ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
            ("anthropic-ratelimit-requests-remaining", "49"),
            ("anthropic-ratelimit-requests-reset", "2026-01-01T00:00:01Z"),
            ("anthropic-ratelimit-input-tokens-remaining", "0"),
            (
                "anthropic-ratelimit-input-tokens-reset",
                "2026-01-01T00:00:07Z",
            ),
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", "2026-01-01T00:00:05Z"),
        ]);
        assert_eq!(
            retry_after_from_headers(&h, wall_clock()),
            Some(Duration::from_secs(7))
        );
        // No bucket exhausted: nothing derived.
        let h = headers(&[
            ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
            ("anthropic-ratelimit-requests-remaining", "49"),
            ("anthropic-ratelimit-requests-reset", "2026-01-01T00:00:01Z"),
        ]);
        assert_eq!(retry_after_from_headers(&h, wall_clock()), None);
        // Without a Date header the local clock is the reference.
        let h = headers(&[
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", "2026-01-01T00:00:07Z"),
        ]);
        assert_eq!(
            retry_after_from_headers(&h, at(CASES_DATE + 2)),
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn openai_duration_resets() {
        let h = headers(&[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "12ms"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        assert_eq!(
            retry_after_from_headers(&h, wall_clock()),
            Some(Duration::from_secs(360))
        );
        let h = headers(&[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-remaining-tokens", "4000"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        assert_eq!(
            retry_after_from_headers(&h, wall_clock()),
            Some(Duration::from_secs(1))
        );
    }

    /// The stored responses themselves, read with a local clock far from their `Date`.
    #[test]
    fn stored_responses() {
        use switchyard_testkit::HttpResponse;
        for (resp, want) in [
            (HttpResponse::case("C05"), 7),
            (HttpResponse::case("C05b"), 7),
            (HttpResponse::fixture("anthropic_429"), 17),
            (HttpResponse::case("C09"), 86_400),
        ] {
            assert_eq!(
                retry_after_from_headers(&file_headers(&resp), wall_clock()),
                Some(Duration::from_secs(want))
            );
        }
        // anthropic_429 without its retry-after: the input-tokens bucket (0 left) resets
        // 17 s after the Date; the others have tokens left.
        let mut h = file_headers(&HttpResponse::fixture("anthropic_429"));
        h.remove("retry-after");
        assert_eq!(
            retry_after_from_headers(&h, wall_clock()),
            Some(Duration::from_secs(17))
        );
        let gemini: serde_json::Value =
            serde_json::from_slice(&HttpResponse::fixture("gemini_429").body).unwrap();
        assert_eq!(
            retry_delay_from_body(&gemini),
            Some(Duration::from_secs(36))
        );
    }

    #[test]
    fn gemini_retry_info() {
        let body = serde_json::json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "36s"}
        ]}});
        assert_eq!(retry_delay_from_body(&body), Some(Duration::from_secs(36)));
        let array = serde_json::json!([body]);
        assert_eq!(retry_delay_from_body(&array), Some(Duration::from_secs(36)));
        let frac = serde_json::json!({"error": {"details": [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.250s"}]}});
        assert_eq!(
            retry_delay_from_body(&frac),
            Some(Duration::from_millis(1250))
        );
        assert_eq!(
            retry_delay_from_body(&serde_json::json!({"error": {}})),
            None
        );
    }

    /// C07 and the other message wordings.
    #[test]
    fn message_hints() {
        let now = at(CASES_DATE);
        let cases: &[(&str, Option<f64>)] = &[
            (
                "Rate limit reached for gpt-4o. Please try again in 915ms.",
                Some(0.915),
            ),
            (
                "Please try again in 1.5s. Visit https://platform.openai.com",
                Some(1.5),
            ),
            (
                "Limit 30000, Used 29000. Please try again in 6m0s.",
                Some(360.0),
            ),
            ("Please retry in 36.218455215s.", Some(36.218455215)),
            ("Please retry after 30 seconds", Some(30.0)),
            ("please wait 2 minutes before trying again", Some(120.0)),
            ("Too many tokens, please wait before trying again.", None),
            ("Please reduce the prompt length, or try again later.", None),
            (
                "You have exceeded the 5-hour usage quota. It will reset at 2026-01-01 05:00:00 +0000 UTC.",
                Some(18_000.0),
            ),
            ("Quota resets at 2026-01-01T00:01:00Z", Some(60.0)),
            ("", None),
        ];
        for (msg, want) in cases {
            assert_eq!(
                retry_after_from_message(msg, now),
                want.map(Duration::from_secs_f64),
                "{msg}"
            );
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("12ms"), Some(Duration::from_millis(12)));
        assert_eq!(parse_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(
            parse_duration("1h2m3.5s"),
            Some(Duration::from_secs_f64(3723.5))
        );
        assert_eq!(parse_duration("250us"), Some(Duration::from_micros(250)));
        assert_eq!(parse_duration("17"), None);
        assert_eq!(parse_duration("s"), None);
        assert_eq!(parse_duration("5 s"), None);
        assert_eq!(parse_duration("5d"), None);
        assert_eq!(parse_duration(""), None);
    }

    #[test]
    fn rfc3339() {
        let t = |s| parse_rfc3339(s).map(|t| t.duration_since(UNIX_EPOCH).unwrap());
        assert_eq!(t("1970-01-01T00:00:00Z"), Some(Duration::ZERO));
        assert_eq!(
            t("2026-01-01T00:00:07Z"),
            Some(Duration::from_secs(CASES_DATE + 7))
        );
        assert_eq!(
            t("2026-01-01t00:00:07z"),
            Some(Duration::from_secs(CASES_DATE + 7))
        );
        assert_eq!(
            t("2025-08-27T10:15:19Z"),
            Some(Duration::from_secs(1_756_289_719))
        );
        assert_eq!(
            t("2026-01-01T02:00:07.25+02:00"),
            Some(Duration::from_secs(CASES_DATE + 7) + Duration::from_millis(250))
        );
        assert_eq!(
            t("2025-12-31T23:00:00-01:00"),
            Some(Duration::from_secs(CASES_DATE))
        );
        assert_eq!(
            t("2026-01-01 00:00:00+0000"),
            Some(Duration::from_secs(CASES_DATE))
        );
        assert_eq!(
            t("2024-02-29T00:00:00Z"),
            Some(Duration::from_secs(1_709_164_800))
        );
        assert_eq!(
            t("2000-03-01T00:00:00Z"),
            Some(Duration::from_secs(951_868_800))
        );
        for bad in [
            "2025-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:00:00",
            "2026-01-01T00:00:00Zjunk",
            "2026-01-01",
            "1969-12-31T23:59:59Z",
            "2026-01-01T00:00:00.Z",
            "Thu, 01 Jan 2026 00:00:00 GMT",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
