//! Per-minute slots leased from the store's shared window, used in memory until they lapse.

use crate::limits::RateLimits;
use crate::store::SlotLease;

/// Slots leased for one rate key: usable until `valid_until_ms`, then returned unused.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Allowance {
    pub(crate) limits: RateLimits,
    pub(crate) granted: SlotLease,
    pub(crate) used: SlotLease,
    pub(crate) valid_until_ms: i64,
}

impl Allowance {
    pub(crate) fn fits(&self, now_ms: i64, input: u64) -> bool {
        now_ms <= self.valid_until_ms
            && self.used.requests < self.granted.requests
            && self.used.tokens.saturating_add(input) <= self.granted.tokens
    }

    pub(crate) fn take(&mut self, input: u64) {
        self.used.requests += 1;
        self.used.tokens = self.used.tokens.saturating_add(input);
    }

    pub(crate) fn unused(&self) -> SlotLease {
        SlotLease {
            requests: self.granted.requests - self.used.requests.min(self.granted.requests),
            tokens: self.granted.tokens - self.used.tokens.min(self.granted.tokens),
        }
    }

    /// How many requests to lease next, from the last allowance's use and the limit.
    pub(crate) fn next_size(previous: Option<&Self>, max_share: f64) -> u64 {
        let used = previous.map_or(0, |a| a.used.requests);
        let rpm = previous.and_then(|a| a.limits.requests_per_minute);
        let most = rpm.map_or(u64::MAX, |r| ((r as f64 * max_share) as u64).max(1));
        (2 * used).clamp(1, most.min(1024))
    }
}
