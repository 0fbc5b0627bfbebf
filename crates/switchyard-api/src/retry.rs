//! Provider-level retry hints (SPEC R5.2): how long the server asked us to wait.
//!
//! The retry loop itself (R5.1, R5.3) belongs to the task layer's first-chunk probe; this
//! module reads the hints every layer needs.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;

/// The wait a response asks for, from `retry-after` (seconds or an HTTP date), then
/// `x-ratelimit-reset`, then `ratelimit-reset` (SPEC R5.2).
///
/// A numeric value larger than the current Unix time in seconds is a timestamp, not a delay.
/// Returns `None` when no header gives a usable value.
pub fn retry_after_from_headers(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    ["retry-after", "x-ratelimit-reset", "ratelimit-reset"]
        .iter()
        .filter_map(|name| headers.get(*name)?.to_str().ok())
        .find_map(|v| parse_retry_value(v, now))
}

/// Parses one header value: delta seconds (`17`, `0.9`), a Unix timestamp, or an HTTP date.
pub fn parse_retry_value(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let now_unix = now.duration_since(UNIX_EPOCH).ok()?.as_secs_f64();
    if let Ok(n) = value.parse::<f64>() {
        if !n.is_finite() || n < 0.0 {
            return None;
        }
        if n > now_unix {
            return Some(Duration::from_secs_f64(n - now_unix));
        }
        return Some(Duration::from_secs_f64(n));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_dates_and_timestamps() {
        let now = UNIX_EPOCH + Duration::from_secs(1_767_225_600); // 2026-01-01T00:00:00Z
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
        assert_eq!(parse_retry_value("soon", now), None);
        assert_eq!(parse_retry_value("-1", now), None);
    }
}
