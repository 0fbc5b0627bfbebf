//! What a response says about the provider's own rate limits: OpenAI's `x-ratelimit-*`
//! headers, which many servers copy, and Anthropic's `anthropic-ratelimit-*`. The task layer
//! records them so that the next request from any process waits for the reset, not a 429.
//! Spec: R12.3.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

use crate::retry_after::{parse_duration, parse_retry_value, parse_rfc3339, response_clock};

/// The provider's own view of its limits after one response; resets count from receiving it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimitHeaders {
    /// Requests left in the provider's current window.
    pub requests_remaining: Option<u64>,
    pub requests_reset: Option<Duration>,
    /// Input tokens for Anthropic, or tokens for OpenAI, left in the current window.
    pub tokens_remaining: Option<u64>,
    pub tokens_reset: Option<Duration>,
}

impl RateLimitHeaders {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Reads the rate-limit headers of a response received at `now`; `None` when it has none. A
/// header that does not parse is left out, never guessed.
pub fn rate_limit_headers(headers: &HeaderMap, now: SystemTime) -> Option<RateLimitHeaders> {
    let get = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let count = |name: &str| {
        get(name)?
            .parse::<f64>()
            .ok()
            .filter(|n| *n >= 0.0)
            .map(|n| n as u64)
    };
    let clock = response_clock(headers, now);
    let reset = |name: &str| {
        let v = get(name)?;
        parse_duration(v)
            .or_else(|| parse_rfc3339(v).map(|at| at.duration_since(clock).unwrap_or_default()))
            .or_else(|| parse_retry_value(v, clock))
    };
    let first =
        |names: &[&str], read: &dyn Fn(&str) -> Option<u64>| names.iter().find_map(|n| read(n));
    let first_reset = |names: &[&str]| names.iter().find_map(|n| reset(n));
    let found = RateLimitHeaders {
        requests_remaining: first(
            &[
                "x-ratelimit-remaining-requests",
                "anthropic-ratelimit-requests-remaining",
            ],
            &count,
        ),
        requests_reset: first_reset(&[
            "x-ratelimit-reset-requests",
            "anthropic-ratelimit-requests-reset",
        ]),
        tokens_remaining: first(
            &[
                "x-ratelimit-remaining-tokens",
                "anthropic-ratelimit-input-tokens-remaining",
                "anthropic-ratelimit-tokens-remaining",
            ],
            &count,
        ),
        tokens_reset: first_reset(&[
            "x-ratelimit-reset-tokens",
            "anthropic-ratelimit-input-tokens-reset",
            "anthropic-ratelimit-tokens-reset",
        ]),
    };
    (!found.is_empty()).then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    fn at(rfc3339: &str) -> SystemTime {
        parse_rfc3339(rfc3339).unwrap()
    }

    #[test]
    fn openai_durations_are_read() {
        let h = headers(&[
            ("x-ratelimit-limit-requests", "500"),
            ("x-ratelimit-remaining-requests", "499"),
            ("x-ratelimit-reset-requests", "120ms"),
            ("x-ratelimit-remaining-tokens", "29000"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        assert_eq!(
            rate_limit_headers(&h, SystemTime::now()),
            Some(RateLimitHeaders {
                requests_remaining: Some(499),
                requests_reset: Some(Duration::from_millis(120)),
                tokens_remaining: Some(29_000),
                tokens_reset: Some(Duration::from_secs(360)),
            })
        );
    }

    #[test]
    fn anthropic_timestamps_are_measured_from_the_date_header() {
        let h = headers(&[
            ("date", "Thu, 01 Jan 2026 00:00:00 GMT"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2026-01-01T00:00:07Z"),
            ("anthropic-ratelimit-input-tokens-remaining", "1200"),
            (
                "anthropic-ratelimit-input-tokens-reset",
                "2026-01-01T00:00:30Z",
            ),
            ("anthropic-ratelimit-tokens-remaining", "99"),
        ]);
        // A local clock a minute ahead does not change the waits.
        let got = rate_limit_headers(&h, at("2026-01-01T00:01:00Z")).unwrap();
        assert_eq!(got.requests_remaining, Some(0));
        assert_eq!(got.requests_reset, Some(Duration::from_secs(7)));
        assert_eq!(got.tokens_remaining, Some(1_200), "input tokens first");
        assert_eq!(got.tokens_reset, Some(Duration::from_secs(30)));
    }

    #[test]
    fn copies_with_seconds_or_timestamps_are_read_and_garbage_is_left_out() {
        let h = headers(&[
            ("x-ratelimit-remaining-requests", "3"),
            ("x-ratelimit-reset-requests", "1"),
            ("x-ratelimit-remaining-tokens", "many"),
            ("x-ratelimit-reset-tokens", "soon"),
        ]);
        let got = rate_limit_headers(&h, SystemTime::now()).unwrap();
        assert_eq!(got.requests_remaining, Some(3));
        assert_eq!(got.requests_reset, Some(Duration::from_secs(1)));
        assert_eq!(got.tokens_remaining, None);
        assert_eq!(got.tokens_reset, None);
        let now = at("2026-01-01T00:00:00Z");
        let ms = headers(&[("x-ratelimit-reset-requests", "1767225605000")]);
        assert_eq!(
            rate_limit_headers(&ms, now).unwrap().requests_reset,
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            rate_limit_headers(&headers(&[("retry-after", "4")]), now),
            None
        );
    }
}
