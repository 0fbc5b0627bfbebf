//! Provider-level retry policies and their loop, and the task level's retry schedule.
//! Spec: R5.1, R5.2, R5.3, R5.4, R6.7.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::error::{ApiError, ErrorKind};

pub use crate::retry_after::DEFAULT_RETRY_AFTER_CAP;

/// One provider-level retry of a request, reported before its wait.
#[derive(Debug, Clone)]
pub struct RetryStatus {
    pub attempt: u32,
    /// Requests in all, the first included.
    pub max_attempts: u32,
    /// The wait before the next attempt, jitter included.
    pub delay: Duration,
    pub error: ApiError,
}

/// Receives the retry reports of one request before each wait; keep it short.
pub type RetryObserver = Arc<dyn Fn(RetryStatus) + Send + Sync>;

/// How one provider's requests are retried before any chunk is yielded: after failed attempt
/// *n*, the reference's `min(max_delay, base_delay × 2^(n−1))`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Whether connection failures are retried too, for local servers still starting.
    pub retry_connection_errors: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::STANDARD
    }
}

impl RetryPolicy {
    /// 3 attempts in all, 1 s then 2 s, rate limits only: every provider without its own policy.
    pub const STANDARD: Self = Self {
        max_attempts: 3,
        base_delay: Duration::from_secs(1),
        max_delay: Duration::from_secs(10),
        retry_connection_errors: false,
    };

    /// Gemini: 4 attempts, 2 s, 4 s, 8 s, as the reference's options for it.
    pub const GEMINI: Self = Self {
        max_attempts: 4,
        base_delay: Duration::from_secs(2),
        max_delay: Duration::from_secs(15),
        retry_connection_errors: false,
    };

    /// Claude Code: as Gemini; a rate limit the CLI reports before any content restarts the CLI.
    pub const CLAUDE_CODE: Self = Self::GEMINI;

    /// Cerebras: 6 attempts, 5 s to 60 s.
    pub const CEREBRAS: Self = Self {
        max_attempts: 6,
        base_delay: Duration::from_secs(5),
        max_delay: Duration::from_secs(60),
        retry_connection_errors: false,
    };

    /// Local servers that may still be starting: the standard schedule, connection errors too.
    pub const LOCAL_SERVER: Self = Self {
        retry_connection_errors: true,
        ..Self::STANDARD
    };

    /// The delay before the retry that follows failed attempt `attempt`, counted from 1: the
    /// server's `hint` cut to `cap`, else the schedule. Then ±10 % jitter from `jitter_unit` in
    /// [0, 1), where 0.5 means none; a hinted delay is only jittered upward, never past `cap`.
    pub fn delay_for(
        &self,
        attempt: u32,
        hint: Option<Duration>,
        cap: Duration,
        jitter_unit: f64,
    ) -> Duration {
        match hint {
            Some(h) => jitter(h.min(cap), 0.5 + (jitter_unit - 0.5).max(0.0)).min(cap),
            None => jitter(self.scheduled_delay(attempt), jitter_unit),
        }
    }

    fn scheduled_delay(&self, attempt: u32) -> Duration {
        let exp = attempt.max(1) - 1;
        2u32.checked_pow(exp)
            .and_then(|factor| self.base_delay.checked_mul(factor))
            .map_or(self.max_delay, |d| d.min(self.max_delay))
    }
}

/// Multiplies `d` by `1 + 0.2 × (unit − 0.5)`; NaN counts as 0.5.
fn jitter(d: Duration, unit: f64) -> Duration {
    let unit = if unit.is_nan() {
        0.5
    } else {
        unit.clamp(0.0, 1.0)
    };
    let factor = 1.0 + 0.2 * (unit - 0.5);
    Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(d)
}

/// Whether the provider level retries `err` under `policy`: rate limits and, where the policy
/// says so, connection failures; never a failure waiting cannot fix, nor a wait past the cap.
pub fn is_provider_retryable(err: &ApiError, policy: &RetryPolicy) -> bool {
    if err.permanent || err.retry_after.is_some_and(|d| d > DEFAULT_RETRY_AFTER_CAP) {
        return false;
    }
    match err.kind {
        ErrorKind::RateLimited => true,
        ErrorKind::Network => policy.retry_connection_errors,
        _ => false,
    }
}

/// Sends one request under `policy`, reporting each retry to `observer` before its wait. The
/// wait moves `deadline` by as much, since waiting is not the provider's slowness.
pub(crate) async fn send_with_retry<T, F, Fut>(
    policy: RetryPolicy,
    observer: Option<&RetryObserver>,
    deadline: &mut Option<Instant>,
    mut send: F,
) -> Result<T, ApiError>
where
    F: FnMut(Option<Instant>) -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
{
    let mut attempt = 1;
    loop {
        let err = match send(*deadline).await {
            Ok(sent) => return Ok(sent),
            Err(e) => e,
        };
        if attempt >= policy.max_attempts || !is_provider_retryable(&err, &policy) {
            return Err(err);
        }
        let delay = policy.delay_for(
            attempt,
            err.retry_after,
            DEFAULT_RETRY_AFTER_CAP,
            jitter_unit(),
        );
        if let Some(observer) = observer {
            observer(RetryStatus {
                attempt,
                max_attempts: policy.max_attempts,
                delay,
                error: err,
            });
        }
        if let Some(at) = deadline.as_mut() {
            *at += delay;
        }
        tokio::time::sleep(delay).await;
        attempt += 1;
    }
}

/// A number in [0, 1) for retry jitter. Not cryptographic: it only spreads retries apart.
fn jitter_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// The task-level wait before automatic retry `retry_number`: 2 s, 4 s, 8 s, or the error's
/// `hint` cut to `cap` when that is longer.
pub fn task_retry_delay(retry_number: u32, hint: Option<Duration>, cap: Duration) -> Duration {
    let exp = retry_number.clamp(1, 32) - 1;
    let scheduled = Duration::from_secs(2)
        .checked_mul(1u32 << exp.min(31))
        .unwrap_or(Duration::MAX);
    match hint {
        Some(h) => scheduled.max(h.min(cap)),
        None => scheduled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduled_delays_without_jitter() {
        let cap = DEFAULT_RETRY_AFTER_CAP;
        let delays = |p: RetryPolicy| -> Vec<u64> {
            (1..p.max_attempts)
                .map(|a| p.delay_for(a, None, cap, 0.5).as_secs())
                .collect()
        };
        assert_eq!(delays(RetryPolicy::default()), [1, 2]);
        assert_eq!(delays(RetryPolicy::GEMINI), [2, 4, 8]);
        assert_eq!(delays(RetryPolicy::CEREBRAS), [5, 10, 20, 40, 60]);
        let d = RetryPolicy::default();
        assert_eq!(d.delay_for(0, None, cap, 0.5), Duration::from_secs(1));
        assert_eq!(d.delay_for(5, None, cap, 0.5), Duration::from_secs(10));
        assert_eq!(
            d.delay_for(u32::MAX, None, cap, 0.5),
            Duration::from_secs(10)
        );
    }

    #[test]
    fn hints_are_honoured_and_capped() {
        let p = RetryPolicy::default();
        let cap = DEFAULT_RETRY_AFTER_CAP;
        // C05: 7 s instead of the scheduled 1 s.
        assert_eq!(
            p.delay_for(1, Some(Duration::from_secs(7)), cap, 0.5),
            Duration::from_secs(7)
        );
        // C07: 0.915 s is honoured as is at the provider level.
        assert_eq!(
            p.delay_for(1, Some(Duration::from_millis(915)), cap, 0.5),
            Duration::from_millis(915)
        );
        // gemini_429's 36 s.
        let g = RetryPolicy::GEMINI;
        assert_eq!(
            g.delay_for(1, Some(Duration::from_secs(36)), cap, 0.5),
            Duration::from_secs(36)
        );
        // C09's 24 h and any hint beyond the cap: the cap, also after upward jitter.
        for unit in [0.5, 0.999, 1.0] {
            assert_eq!(
                p.delay_for(1, Some(Duration::from_secs(86_400)), cap, unit),
                cap
            );
        }
        assert_eq!(
            p.delay_for(
                1,
                Some(Duration::from_secs(90)),
                Duration::from_secs(30),
                0.5
            ),
            Duration::from_secs(30)
        );
        // A hint is never shortened by jitter, only lengthened (up to +10 %, within the cap).
        assert_eq!(
            p.delay_for(1, Some(Duration::from_secs(7)), cap, 0.0),
            Duration::from_secs(7)
        );
        assert_eq!(
            p.delay_for(1, Some(Duration::from_secs(10)), cap, 1.0),
            Duration::from_secs(11)
        );
    }

    #[test]
    fn jitter_bounds() {
        let p = RetryPolicy::GEMINI;
        let cap = DEFAULT_RETRY_AFTER_CAP;
        // Attempt 3: 8 s scheduled, so 7.2 s … 8.8 s.
        assert_eq!(p.delay_for(3, None, cap, 0.0), Duration::from_millis(7200));
        assert_eq!(p.delay_for(3, None, cap, 0.5), Duration::from_secs(8));
        assert_eq!(p.delay_for(3, None, cap, 1.0), Duration::from_millis(8800));
        assert_eq!(p.delay_for(3, None, cap, 0.25), Duration::from_millis(7600));
        for i in 0..100 {
            let d = p.delay_for(3, None, cap, f64::from(i) / 100.0);
            assert!(
                d >= Duration::from_millis(7200) && d < Duration::from_millis(8800),
                "{d:?}"
            );
        }
        // Out of range and NaN are clamped / neutral.
        assert_eq!(p.delay_for(3, None, cap, -3.0), Duration::from_millis(7200));
        assert_eq!(p.delay_for(3, None, cap, 7.0), Duration::from_millis(8800));
        assert_eq!(p.delay_for(3, None, cap, f64::NAN), Duration::from_secs(8));
        // A huge cap cannot overflow.
        let _ = p.delay_for(1, Some(Duration::MAX), Duration::MAX, 1.0);
    }

    #[test]
    fn provider_retryable_kinds() {
        let cloud = RetryPolicy::default();
        let local = RetryPolicy::LOCAL_SERVER;
        let err = |kind| ApiError::new(kind, "x");
        for kind in [
            ErrorKind::Auth,
            ErrorKind::SpendLimit,
            ErrorKind::QuotaExceeded,
            ErrorKind::Entitlement,
            ErrorKind::Overloaded,
            ErrorKind::ContextWindowExceeded,
            ErrorKind::InvalidRequest,
            ErrorKind::Server,
            ErrorKind::Timeout,
            ErrorKind::Cancelled,
            ErrorKind::Decode,
        ] {
            assert!(!is_provider_retryable(&err(kind), &cloud), "{kind}");
            assert!(!is_provider_retryable(&err(kind), &local), "{kind}");
        }
        assert!(is_provider_retryable(&err(ErrorKind::RateLimited), &cloud));
        assert!(is_provider_retryable(&err(ErrorKind::RateLimited), &local));
        assert!(!is_provider_retryable(&err(ErrorKind::Network), &cloud));
        assert!(is_provider_retryable(&err(ErrorKind::Network), &local));
        // An OpenAI insufficient_quota 429 is a quota, not a rate limit: never retried.
        let quota = ApiError::from_provider(
            Some(429),
            Some("insufficient_quota"),
            "You exceeded your current quota",
            None,
        );
        assert!(!is_provider_retryable(&quota, &cloud));
    }

    #[test]
    fn task_level_delays() {
        let cap = DEFAULT_RETRY_AFTER_CAP;
        let s = Duration::from_secs;
        // C08: 2 s, 4 s, 8 s.
        assert_eq!(
            [1, 2, 3].map(|n| task_retry_delay(n, None, cap)),
            [s(2), s(4), s(8)]
        );
        assert_eq!(task_retry_delay(0, None, cap), s(2));
        // C05: a 7 s hint beats 2 s and 4 s but not 8 s.
        assert_eq!(
            [1, 2, 3].map(|n| task_retry_delay(n, Some(s(7)), cap)),
            [s(7), s(7), s(8)]
        );
        // C07: 0.915 s is shorter than 2 s, so 2 s.
        assert_eq!(
            task_retry_delay(1, Some(Duration::from_millis(915)), cap),
            s(2)
        );
        // A hint beyond the cap is cut to it.
        assert_eq!(task_retry_delay(1, Some(s(86_400)), cap), cap);
        assert_eq!(task_retry_delay(1, Some(s(86_400)), s(5)), s(5));
        // Large retry numbers saturate instead of overflowing.
        let _ = task_retry_delay(u32::MAX, None, cap);
    }
}
