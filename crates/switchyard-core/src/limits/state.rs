//! The limits state every process on one store shares; times are the caller's Unix ms.
//! Spec: R12, R13.2.

use switchyard_api::ChainEntry;

use crate::store::StoreFuture;

/// The sliding window of a per-minute limit, in milliseconds.
pub const RATE_WINDOW_MS: i64 = 60_000;

/// One failover entry, what a cooldown is kept for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryKey {
    /// The provider id.
    pub provider: String,
    /// The model id as the user typed it.
    pub model: String,
    /// The endpoint the entry uses, `""` for the provider's default.
    pub base_url: String,
}

impl EntryKey {
    /// The key `entry`'s cooldowns are kept under: its provider, model and base URL.
    pub fn of_chain(entry: &ChainEntry) -> Self {
        Self {
            provider: entry.provider_id.clone(),
            model: entry.model_id.clone(),
            base_url: entry.base_url.clone(),
        }
    }

    /// Whether this is `entry`'s key, without copying.
    pub fn is_of(&self, entry: &ChainEntry) -> bool {
        self.provider == entry.provider_id
            && self.model == entry.model_id
            && self.base_url == entry.base_url
    }

    /// `provider:model`, the form the CLI's `--fallback` takes and its lines print.
    pub fn label(&self) -> String {
        format!("{}:{}", self.provider, self.model)
    }
}

/// A failover entry that must not be tried before `until_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct Cooldown {
    /// The entry.
    pub entry: EntryKey,
    /// When the failure was seen.
    pub since_ms: i64,
    /// When the entry may be tried again.
    pub until_ms: i64,
    /// The failure's kind, as the `--json` names of `switchyard_api::ErrorKind`.
    pub reason: String,
}

/// Configured client-side limits of one provider and key per sliding minute; `None` is none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimits {
    /// Requests per minute.
    pub requests_per_minute: Option<u64>,
    /// Input tokens per minute, by the estimate of what each request sends.
    pub input_tokens_per_minute: Option<u64>,
}

/// What a provider's last response said about its own limits in its rate-limit headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LearntLimits {
    /// When the response was received.
    pub observed_ms: i64,
    /// Requests left in the provider's window.
    pub requests_remaining: Option<u64>,
    /// When the provider's request window resets.
    pub requests_reset_ms: Option<i64>,
    /// Tokens left in the provider's window.
    pub tokens_remaining: Option<u64>,
    /// When the provider's token window resets.
    pub tokens_reset_ms: Option<i64>,
}

/// One request asking for a rate-limit slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRequest {
    /// What the limits are per: the provider id and a fingerprint of the key, never the key.
    pub key: String,
    /// Now.
    pub now_ms: i64,
    /// The estimated input tokens of the request.
    pub input_tokens: u64,
    /// The configured limits.
    pub limits: RateLimits,
}

/// Which limit made a request wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitReason {
    /// The configured `requests_per_minute`.
    RequestsPerMinute,
    /// The configured `input_tokens_per_minute`.
    InputTokensPerMinute,
    /// The provider said no requests are left until its reset.
    LearntRequests,
    /// The provider said too few tokens are left until its reset.
    LearntTokens,
}

impl LimitReason {
    /// The name `--json` and the terminal use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RequestsPerMinute => "requests_per_minute",
            Self::InputTokensPerMinute => "input_tokens_per_minute",
            Self::LearntRequests => "provider_requests_remaining",
            Self::LearntTokens => "provider_tokens_remaining",
        }
    }
}

/// The answer to a [`SlotRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotGrant {
    /// The slot was taken: send now.
    Granted,
    /// Nothing was recorded: ask again at `until_ms`.
    Wait {
        /// When the window will have room.
        until_ms: i64,
        /// The limit that is full.
        reason: LimitReason,
    },
}

/// One provider and key's rate-limit state, for `switchyard limits`.
#[derive(Debug, Clone, PartialEq)]
pub struct RateState {
    /// The [`SlotRequest::key`].
    pub key: String,
    /// Requests in the window ending now.
    pub requests_in_window: u64,
    /// Input tokens of those requests.
    pub input_tokens_in_window: u64,
    /// The oldest of those requests, which leaves the window a minute later.
    pub oldest_ms: Option<i64>,
    /// What the provider last said, if anything.
    pub learnt: Option<LearntLimits>,
}

/// Whether a request fits the window's slots, oldest first, and what the provider last said;
/// one larger than the whole token limit passes once the window is empty.
pub fn decide_slot(
    slots: &[(i64, u64)],
    learnt: Option<&LearntLimits>,
    request: &SlotRequest,
) -> SlotGrant {
    let now = request.now_ms;
    let mut wait: Option<(i64, LimitReason)> = None;
    let mut later = |until: i64, reason: LimitReason| {
        if until > now && wait.is_none_or(|(u, _)| until > u) {
            wait = Some((until, reason));
        }
    };
    if let Some(rpm) = request.limits.requests_per_minute {
        let rpm = usize::try_from(rpm.max(1)).unwrap_or(usize::MAX);
        if slots.len() >= rpm {
            // The slot whose leaving makes room for one more.
            let (ts, _) = slots[slots.len() - rpm];
            later(ts + RATE_WINDOW_MS, LimitReason::RequestsPerMinute);
        }
    }
    if let Some(tpm) = request.limits.input_tokens_per_minute {
        let mut total: u64 = slots.iter().map(|s| s.1).sum();
        if total.saturating_add(request.input_tokens) > tpm {
            for &(ts, tokens) in slots {
                total -= tokens;
                if total.saturating_add(request.input_tokens) <= tpm || total == 0 {
                    later(ts + RATE_WINDOW_MS, LimitReason::InputTokensPerMinute);
                    break;
                }
            }
        }
    }
    if let Some(learnt) = learnt {
        let since: Vec<&(i64, u64)> = slots.iter().filter(|s| s.0 >= learnt.observed_ms).collect();
        if let (Some(left), Some(reset)) = (learnt.requests_remaining, learnt.requests_reset_ms)
            && since.len() as u64 >= left
        {
            later(reset, LimitReason::LearntRequests);
        }
        if let (Some(left), Some(reset)) = (learnt.tokens_remaining, learnt.tokens_reset_ms) {
            let used: u64 = since.iter().map(|s| s.1).sum();
            if used.saturating_add(request.input_tokens) > left {
                later(reset, LimitReason::LearntTokens);
            }
        }
    }
    match wait {
        Some((until_ms, reason)) => SlotGrant::Wait { until_ms, reason },
        None => SlotGrant::Granted,
    }
}

/// `None` when no limit applies, else a test of the window's count and tokens that is true
/// whenever [`decide_slot`] could refuse, so a store reads the rows only then.
pub fn slot_window(
    learnt: Option<&LearntLimits>,
    request: &SlotRequest,
) -> Option<impl Fn(u64, u64) -> bool> {
    let now = request.now_ms;
    let live = |left: Option<u64>, reset: Option<i64>| left.zip(reset.filter(|r| *r > now));
    let learnt_requests = learnt.and_then(|l| live(l.requests_remaining, l.requests_reset_ms));
    let learnt_tokens = learnt.and_then(|l| live(l.tokens_remaining, l.tokens_reset_ms));
    let RateLimits {
        requests_per_minute: rpm,
        input_tokens_per_minute: tpm,
    } = request.limits;
    if rpm.is_none() && tpm.is_none() && learnt_requests.is_none() && learnt_tokens.is_none() {
        return None;
    }
    let input = request.input_tokens;
    // Learnt limits count the slots since they were learnt, a part of the window.
    Some(move |count: u64, tokens: u64| {
        let over_tokens = |limit: u64| tokens.saturating_add(input) > limit;
        rpm.is_some_and(|r| count >= r.max(1))
            || tpm.is_some_and(over_tokens)
            || learnt_requests.is_some_and(|(left, _)| count >= left)
            || learnt_tokens.is_some_and(|(left, _)| over_tokens(left))
    })
}

/// Where the limits state is kept, one transaction per method.
pub trait LimitsStore: Send + Sync {
    /// Cools `cooldown.entry` down, keeping a later end already set.
    fn set_cooldown<'a>(&'a self, cooldown: &'a Cooldown) -> StoreFuture<'a, ()>;

    /// Forgets `entry`'s cooldown, when it answered.
    fn clear_cooldown<'a>(&'a self, entry: &'a EntryKey) -> StoreFuture<'a, ()>;

    /// The cooldowns still running at `now_ms`, soonest end first.
    fn cooldowns(&self, now_ms: i64) -> StoreFuture<'_, Vec<Cooldown>>;

    /// USD spent in `[from_ms, to_ms)`; a whole UTC day is read from its running total.
    fn spend_between(&self, from_ms: i64, to_ms: i64) -> StoreFuture<'_, f64>;

    /// Takes a rate-limit slot when [`decide_slot`] finds room, else says when to ask again;
    /// no two callers both take the last one.
    fn acquire_rate_slot<'a>(&'a self, request: &'a SlotRequest) -> StoreFuture<'a, SlotGrant>;

    /// Replaces what the provider last said about `key`'s limits.
    fn record_learnt_limits<'a>(
        &'a self,
        key: &'a str,
        learnt: &'a LearntLimits,
    ) -> StoreFuture<'a, ()>;

    /// Every key with requests in the window or learnt limits still running, by key.
    fn rate_states(&self, now_ms: i64) -> StoreFuture<'_, Vec<RateState>>;
}

/// The start of the UTC day holding `ms`.
pub fn utc_day_start_ms(ms: i64) -> i64 {
    ms.div_euclid(86_400_000) * 86_400_000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(now_ms: i64, tokens: u64, rpm: Option<u64>, tpm: Option<u64>) -> SlotRequest {
        SlotRequest {
            key: "k".into(),
            now_ms,
            input_tokens: tokens,
            limits: RateLimits {
                requests_per_minute: rpm,
                input_tokens_per_minute: tpm,
            },
        }
    }

    #[test]
    fn requests_per_minute_wait_for_the_slot_that_makes_room() {
        let slots = [(1_000, 1), (5_000, 1), (9_000, 1)];
        assert_eq!(
            decide_slot(&slots, None, &req(10_000, 1, Some(4), None)),
            SlotGrant::Granted
        );
        assert_eq!(
            decide_slot(&slots, None, &req(10_000, 1, Some(3), None)),
            SlotGrant::Wait {
                until_ms: 61_000,
                reason: LimitReason::RequestsPerMinute
            }
        );
        assert_eq!(
            decide_slot(&slots, None, &req(10_000, 1, Some(2), None)),
            SlotGrant::Wait {
                until_ms: 65_000,
                reason: LimitReason::RequestsPerMinute
            }
        );
    }

    #[test]
    fn input_tokens_wait_until_enough_old_requests_leave() {
        let slots = [(1_000, 500), (2_000, 300), (3_000, 100)];
        assert_eq!(
            decide_slot(&slots, None, &req(4_000, 100, None, Some(1_000))),
            SlotGrant::Granted
        );
        // 900 + 400 > 1000: the first slot leaving leaves 400 + 400 <= 1000.
        assert_eq!(
            decide_slot(&slots, None, &req(4_000, 400, None, Some(1_000))),
            SlotGrant::Wait {
                until_ms: 61_000,
                reason: LimitReason::InputTokensPerMinute
            }
        );
        // Larger than the whole limit: once the window is empty.
        assert_eq!(
            decide_slot(&slots, None, &req(4_000, 5_000, None, Some(1_000))),
            SlotGrant::Wait {
                until_ms: 63_000,
                reason: LimitReason::InputTokensPerMinute
            }
        );
        assert_eq!(
            decide_slot(&[], None, &req(4_000, 5_000, None, Some(1_000))),
            SlotGrant::Granted
        );
    }

    #[test]
    fn learnt_limits_count_requests_sent_since_the_response() {
        let learnt = LearntLimits {
            observed_ms: 2_000,
            requests_remaining: Some(1),
            requests_reset_ms: Some(30_000),
            tokens_remaining: Some(1_000),
            tokens_reset_ms: Some(20_000),
        };
        // One request before the response does not count against what it said.
        assert_eq!(
            decide_slot(&[(1_000, 10)], Some(&learnt), &req(3_000, 10, None, None)),
            SlotGrant::Granted
        );
        assert_eq!(
            decide_slot(
                &[(1_000, 10), (2_500, 10)],
                Some(&learnt),
                &req(3_000, 10, None, None)
            ),
            SlotGrant::Wait {
                until_ms: 30_000,
                reason: LimitReason::LearntRequests
            }
        );
        assert_eq!(
            decide_slot(&[], Some(&learnt), &req(3_000, 2_000, None, None)),
            SlotGrant::Wait {
                until_ms: 20_000,
                reason: LimitReason::LearntTokens
            }
        );
        // A reset already past is no limit.
        assert_eq!(
            decide_slot(&[(2_500, 10)], Some(&learnt), &req(31_000, 10, None, None)),
            SlotGrant::Granted
        );
    }

    /// Over many windows, limits and learnt limits: whenever `slot_window` says no limit
    /// could bind, `decide_slot` on the rows grants the slot (so a store may skip the rows).
    #[test]
    fn the_window_shortcut_never_grants_what_decide_slot_would_not() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let pick = |v: u64, n: u64| (v % 3 != 0).then_some(n);
        let (mut skipped, mut waits) = (0, 0);
        for _ in 0..20_000 {
            let now = 100_000;
            let count = next(12);
            let mut slots: Vec<(i64, u64)> = (0..count)
                .map(|_| (now - 1 - next(59_999) as i64, next(400)))
                .collect();
            slots.sort_unstable();
            let (rpm, tpm) = (pick(next(9), 1 + next(12)), pick(next(9), next(3_000)));
            let learnt = (next(2) == 0).then(|| LearntLimits {
                observed_ms: now - next(60_000) as i64,
                requests_remaining: pick(next(9), next(10)),
                requests_reset_ms: pick(next(9), (now - 5_000 + next(10_000) as i64) as u64)
                    .map(|v| v as i64),
                tokens_remaining: pick(next(9), next(3_000)),
                tokens_reset_ms: pick(next(9), (now - 5_000 + next(10_000) as i64) as u64)
                    .map(|v| v as i64),
            });
            let request = req(now, next(800), rpm, tpm);
            let decided = decide_slot(&slots, learnt.as_ref(), &request);
            waits += usize::from(decided != SlotGrant::Granted);
            let tokens = slots.iter().map(|s| s.1).sum();
            let could_wait =
                slot_window(learnt.as_ref(), &request).map(|f| f(slots.len() as u64, tokens));
            if could_wait != Some(true) {
                skipped += 1;
                assert_eq!(
                    decided,
                    SlotGrant::Granted,
                    "{slots:?} {learnt:?} {request:?}"
                );
            }
        }
        // Both sides of the shortcut are exercised.
        assert!(
            skipped > 2_000 && waits > 2_000,
            "{skipped} skipped, {waits} waits"
        );
    }

    #[test]
    fn utc_days_start_at_midnight() {
        assert_eq!(utc_day_start_ms(86_400_000 * 3 + 5), 86_400_000 * 3);
        assert_eq!(utc_day_start_ms(-1), -86_400_000);
    }
}
