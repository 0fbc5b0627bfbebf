//! [`RequestLimits`]: what a request step asks before and after each request: which entry,
//! whether the spend caps and the rate-limit window allow it.
//! Spec: R12.1, R12.2, R12.3.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::{ApiError, ApiHandler, ChainEntry, ErrorKind, RateLimitHeaders};

use super::state::{
    Cooldown, EntryKey, LearntLimits, RateLimits, SlotGrant, SlotRequest, utc_day_start_ms,
};
use crate::store::{StoreError, TaskStore};

/// How long an entry cools down after a failure that names no reset time.
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
    /// Rate-limit slots are kept under this key, a fingerprint and never the key itself.
    pub rate_key: String,
    /// The configured per-minute limits.
    pub rate: RateLimits,
}

impl LimitedEntry {
    /// The entry of a built failover chain, with its configured per-minute limits.
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

/// The spend caps in USD; `None` is no cap.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpendCaps {
    /// What one task may spend, `max_cost_usd` or `--max-cost`.
    pub per_task: Option<f64>,
    /// What every task on the store may spend together in a UTC day, `max_cost_usd_per_day`.
    pub per_day: Option<f64>,
}

/// The wall clock plus how far tokio's clock was moved ahead, so a paused test clock works.
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock;

impl Clock {
    /// The clock.
    pub fn system() -> Self {
        Self
    }

    /// Now.
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

/// The failover chain, spend caps and rate limits of one task, over its store.
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

/// Where the step sends its next request.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// Send to an entry.
    Entry {
        /// The entry's position in the chain.
        index: usize,
        /// Another entry is free too, so a failure of this one moves on at once.
        alternative: bool,
    },
    /// Every entry is cooling down.
    AllCooling {
        /// When the earliest comes back.
        until_ms: i64,
        /// Its cooldown.
        first: Cooldown,
    },
}

impl RequestLimits {
    /// Limits over `entries`, at least one, the mode's first, with `caps` on the system clock.
    pub fn new(entries: Vec<LimitedEntry>, caps: SpendCaps) -> Self {
        Self {
            entries,
            caps,
            clock: Clock::system(),
        }
    }

    /// The chain, caps and rate limits of `mode` in `config`.
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

    /// Limits of one handler with no caps and no configured rate limits.
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

    /// The same limits with the per-task cap `usd`.
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

    /// The first entry that is not cooling down, or when all are, the earliest to come back.
    pub async fn choose(&self, store: &dyn TaskStore) -> Result<Choice, StoreError> {
        let cooling = store.cooldowns(self.clock.now_ms()).await?;
        Ok(self.choose_among(&cooling))
    }

    /// [`RequestLimits::choose`] with the cooldowns as read: those ended by now are ignored.
    pub fn choose_among(&self, cooling: &[Cooldown]) -> Choice {
        let now = self.clock.now_ms();
        let cooling_of =
            |e: &LimitedEntry| (cooling.iter()).find(|c| c.entry == e.key && c.until_ms > now);
        let mut free = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| cooling_of(e).is_none())
            .map(|(i, _)| i);
        match free.next() {
            Some(index) => Choice::Entry {
                index,
                alternative: free.next().is_some(),
            },
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
                Choice::AllCooling {
                    until_ms: first.until_ms,
                    first,
                }
            }
        }
    }

    /// Cools entry `index` down after `error` until the reset it names and returns it.
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

    /// Checks the task's and the day's spend caps before a request to entry `index`;
    /// `Ok(Err(_))` is the `spend_cap` error that stops the task.
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

    /// Takes a rate-limit slot for entry `index`, or says how long to wait.
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

    /// Now, on this limits' clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }
}

/// What a passed spend check found in USD, for the caller to show.
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
