//! [`RequestLimits`]: what the request step (SPEC R6) — a task's, or the gateway's for each
//! client request (R14.4) — consults for R12.1–R12.3 before and after each request: which
//! failover entry to send to, whether the spend caps allow it, whether the rate-limit window
//! has room, what the provider said of its limits; with every piece of state in the store.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::{ApiError, ApiHandler, ChainEntry, ErrorKind, RateLimitHeaders};

use super::state::{
    Cooldown, EntryKey, LearntLimits, RateLimits, SlotGrant, SlotRequest, utc_day_start_ms,
};
use crate::store::{StoreError, TaskStore};

/// How long an entry cools down after a failure that names no reset time (SPEC R12.1).
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(60);

/// One UTC day in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// One entry of a failover chain: a handler and what its limits are kept under.
#[derive(Clone)]
pub struct LimitedEntry {
    /// Cooldowns are kept under this key.
    pub key: EntryKey,
    /// Sends the entry's requests.
    pub handler: Arc<dyn ApiHandler>,
    /// Rate-limit slots are kept under this key (provider, endpoint and a fingerprint of the
    /// key, never the key).
    pub rate_key: String,
    /// The configured per-minute limits.
    pub rate: RateLimits,
}

impl LimitedEntry {
    /// The entry of a built failover chain (`switchyard_api::build_failover_chain`): its
    /// handler, cooldowns kept under provider + model + base URL, rate limits under its
    /// `rate_key` with its configured per-minute limits.
    pub fn from_chain(entry: &ChainEntry) -> Self {
        Self {
            key: EntryKey::of_chain(entry),
            handler: Arc::clone(&entry.handler),
            rate_key: entry.rate_key.clone(),
            rate: RateLimits {
                requests_per_minute: entry.requests_per_minute,
                input_tokens_per_minute: entry.input_tokens_per_minute,
            },
        }
    }
}

impl std::fmt::Debug for LimitedEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitedEntry")
            .field("key", &self.key)
            .field("rate_key", &self.rate_key)
            .field("rate", &self.rate)
            .finish()
    }
}

/// The spend caps of SPEC R12.2, USD. `None` is no cap.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpendCaps {
    /// What one task may spend (`max_cost_usd`, `--max-cost`).
    pub per_task: Option<f64>,
    /// What every task on the store together may spend in one UTC day
    /// (`max_cost_usd_per_day`).
    pub per_day: Option<f64>,
}

/// Wall time in Unix milliseconds as the limits read it: the system's wall clock, plus how far
/// tokio's clock has been moved ahead of real time. In a normal runtime that is 0, so
/// processes on one store compare wall times; under tokio's paused clock (tests) waits and
/// cooldowns pass virtually.
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock;

impl Clock {
    /// The clock.
    pub fn system() -> Self {
        Self
    }

    /// Now, Unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        let (virtual_now, real_now) = (
            tokio::time::Instant::now().into_std(),
            std::time::Instant::now(),
        );
        let ahead = if virtual_now >= real_now {
            (virtual_now - real_now).as_millis() as i64
        } else {
            -((real_now - virtual_now).as_millis() as i64)
        };
        crate::store::now_ms() + ahead
    }
}

/// The failover chain, spend caps and rate limits of one task (SPEC R12), over its store.
#[derive(Clone)]
pub struct RequestLimits {
    pub(crate) entries: Vec<LimitedEntry>,
    pub(crate) caps: SpendCaps,
    pub(crate) clock: Clock,
}

impl std::fmt::Debug for RequestLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestLimits")
            .field("entries", &self.entries)
            .field("caps", &self.caps)
            .finish()
    }
}

/// Where the step sends its next request ([`RequestLimits::choose`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// Send to an entry.
    Entry {
        /// The entry's position in the chain.
        index: usize,
        /// Another entry is not cooling down either, so a failure of this one moves on at
        /// once instead of waiting (R12.1).
        alternative: bool,
    },
    /// Every entry is cooling down.
    AllCooling {
        /// When the earliest comes back, Unix milliseconds.
        until_ms: i64,
        /// Its cooldown.
        first: Cooldown,
    },
}

impl RequestLimits {
    /// Limits over `entries` (the mode's entry first, then its `fallbacks` in order; at least
    /// one) with `caps`, on the system clock.
    pub fn new(entries: Vec<LimitedEntry>, caps: SpendCaps) -> Self {
        Self {
            entries,
            caps,
            clock: Clock::system(),
        }
    }

    /// The chain, caps and rate limits of `mode` in `config` (SPEC R12): the mode's entry,
    /// then its `fallbacks`; the `[limits]` caps; each provider's `requests_per_minute` and
    /// `input_tokens_per_minute`.
    ///
    /// # Errors
    ///
    /// Any entry's [`switchyard_api::ConfigError`] (a missing key names its variable).
    pub fn from_config(
        config: &switchyard_api::ApiConfiguration,
        mode: switchyard_api::Mode,
    ) -> Result<Self, switchyard_api::ConfigError> {
        let entries = switchyard_api::build_failover_chain(config, mode)?
            .iter()
            .map(LimitedEntry::from_chain)
            .collect();
        Ok(Self::new(
            entries,
            SpendCaps {
                per_task: config.limits.max_cost_usd,
                per_day: config.limits.max_cost_usd_per_day,
            },
        ))
    }

    /// Limits of one handler with no caps and no configured rate limits (what the provider's
    /// headers say still applies), its state kept under the handler's provider and model.
    pub fn single(handler: Arc<dyn ApiHandler>) -> Self {
        let (provider, model) = (handler.provider_id().to_owned(), handler.get_model().id);
        Self::new(
            vec![LimitedEntry {
                key: EntryKey {
                    provider: provider.clone(),
                    model: model.clone(),
                    base_url: String::new(),
                },
                rate_key: format!("{provider}@{model}"),
                handler,
                rate: RateLimits::default(),
            }],
            SpendCaps::default(),
        )
    }

    /// The same limits with the per-task cap `usd` (`None`: none).
    pub fn with_task_cap(mut self, usd: Option<f64>) -> Self {
        self.caps.per_task = usd;
        self
    }

    /// The entries, first one first.
    pub fn entries(&self) -> &[LimitedEntry] {
        &self.entries
    }

    /// The spend caps.
    pub fn caps(&self) -> SpendCaps {
        self.caps
    }

    /// The first entry that is not cooling down (SPEC R12.1), or when all are, the earliest
    /// to come back.
    ///
    /// # Errors
    ///
    /// The store's.
    pub async fn choose(&self, store: &dyn TaskStore) -> Result<Choice, StoreError> {
        let now = self.clock.now_ms();
        let cooling = store.cooldowns(now).await?;
        let cooling_of = |e: &LimitedEntry| cooling.iter().find(|c| c.entry == e.key);
        let mut free = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| cooling_of(e).is_none())
            .map(|(i, _)| i);
        match free.next() {
            Some(index) => Ok(Choice::Entry {
                index,
                alternative: free.next().is_some(),
            }),
            None => {
                let first = self
                    .entries
                    .iter()
                    .filter_map(cooling_of)
                    .min_by_key(|c| c.until_ms)
                    .cloned()
                    .unwrap_or_else(|| Cooldown {
                        entry: self.entries[0].key.clone(),
                        since_ms: now,
                        until_ms: now,
                        reason: String::new(),
                    });
                Ok(Choice::AllCooling {
                    until_ms: first.until_ms,
                    first,
                })
            }
        }
    }

    /// Records that entry `index` failed with `error` and cools it down until the error's
    /// reset (retry-after, rate-limit headers, a quota's stated reset) or
    /// [`DEFAULT_COOLDOWN`]; returns the cooldown.
    ///
    /// # Errors
    ///
    /// The store's.
    pub async fn cool_down(
        &self,
        store: &dyn TaskStore,
        index: usize,
        error: &ApiError,
    ) -> Result<Cooldown, StoreError> {
        let now = self.clock.now_ms();
        let wait = error
            .retry_after
            .filter(|d| !d.is_zero())
            .unwrap_or(DEFAULT_COOLDOWN);
        let cooldown = Cooldown {
            entry: self.entries[index].key.clone(),
            since_ms: now,
            until_ms: now.saturating_add(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX)),
            reason: error.kind.as_str().to_owned(),
        };
        store.set_cooldown(&cooldown).await?;
        Ok(cooldown)
    }

    /// Checks the spend caps before a request to entry `index` estimated at
    /// `estimated_input_tokens` (SPEC R12.2): the task's cost so far (`task_id`'s stored
    /// totals; no task, as for a gateway request: no per-task cap) and today's over the store,
    /// plus this request's estimated input cost, must stay under each cap. `Ok(Err(_))` is
    /// the `spend_cap` error that stops the task.
    ///
    /// # Errors
    ///
    /// The store's.
    pub async fn check_spend(
        &self,
        store: &dyn TaskStore,
        task_id: Option<&str>,
        index: usize,
        estimated_input_tokens: u64,
    ) -> Result<Result<SpendCheck, ApiError>, StoreError> {
        if self.caps.per_task.is_none() && self.caps.per_day.is_none() {
            return Ok(Ok(SpendCheck::default()));
        }
        let model = self.entries[index].handler.get_model();
        let estimate = crate::cost::effective_prices(
            &model.info,
            estimated_input_tokens,
            model.thinking_budget_tokens,
        )
        .map_or(0.0, |p| {
            estimated_input_tokens as f64 * p.input / 1_000_000.0
        });
        let mut check = SpendCheck {
            estimate_usd: estimate,
            ..SpendCheck::default()
        };
        if let (Some(cap), Some(task_id)) = (self.caps.per_task, task_id) {
            let spent = store.task(task_id).await?.usage.cost_usd;
            check.task_spent_usd = Some(spent);
            if spent + estimate >= cap {
                return Ok(Err(spend_cap_error("task", spent, estimate, cap)));
            }
        }
        if let Some(cap) = self.caps.per_day {
            let day = utc_day_start_ms(self.clock.now_ms());
            let spent = store.spend_between(day, day + DAY_MS).await?;
            check.day_spent_usd = Some(spent);
            if spent + estimate >= cap {
                return Ok(Err(spend_cap_error("day", spent, estimate, cap)));
            }
        }
        Ok(Ok(check))
    }

    /// Takes a rate-limit slot for entry `index` (SPEC R12.3), or says how long to wait.
    ///
    /// # Errors
    ///
    /// The store's.
    pub async fn try_slot(
        &self,
        store: &dyn TaskStore,
        index: usize,
        input_tokens: u64,
    ) -> Result<SlotGrant, StoreError> {
        let entry = &self.entries[index];
        store
            .acquire_rate_slot(&SlotRequest {
                key: entry.rate_key.clone(),
                now_ms: self.clock.now_ms(),
                input_tokens,
                limits: entry.rate,
            })
            .await
    }

    /// Records what entry `index`'s provider said about its limits in a response.
    ///
    /// # Errors
    ///
    /// The store's.
    pub async fn learn(
        &self,
        store: &dyn TaskStore,
        index: usize,
        headers: &RateLimitHeaders,
    ) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        let at = |d: Option<Duration>| {
            d.map(|d| now.saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)))
        };
        let learnt = LearntLimits {
            observed_ms: now,
            requests_remaining: headers.requests_remaining,
            requests_reset_ms: at(headers.requests_reset),
            tokens_remaining: headers.tokens_remaining,
            tokens_reset_ms: at(headers.tokens_reset),
        };
        store
            .record_learnt_limits(&self.entries[index].rate_key, &learnt)
            .await
    }

    /// Now, Unix milliseconds, on this limits' clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }
}

/// What a passed spend check found (USD), for the caller to show.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpendCheck {
    /// The task's cost so far, when a task cap is set.
    pub task_spent_usd: Option<f64>,
    /// Today's cost over the store, when a daily cap is set.
    pub day_spent_usd: Option<f64>,
    /// The estimated input cost of the request about to be sent.
    pub estimate_usd: f64,
}

/// The `spend_cap` error: what was spent, the cap, and what to change.
fn spend_cap_error(scope: &str, spent: f64, estimate: f64, cap: f64) -> ApiError {
    let (what, setting) = match scope {
        "task" => ("this task", "--max-cost or max_cost_usd under [limits]"),
        _ => ("today (UTC)", "max_cost_usd_per_day under [limits]"),
    };
    ApiError::new(
        ErrorKind::SpendCap,
        format!(
            "the spend cap of ${cap:.2} for {what} is reached: ${spent:.4} spent and the next request would add about ${estimate:.4}; raise {setting} to go on"
        ),
    )
}
