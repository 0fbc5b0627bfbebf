//! The store's limits state as shown (SPEC R12, R14.11): the cooldowns, rate-limit windows and
//! today's spend read at one instant, and the one rule matching them to a failover chain's
//! entries — a cooldown by provider, model and base URL ([`EntryKey::is_of`]), a rate window
//! and the provider's learnt limits by the entry's `rate_key` — that `switchyard limits` and
//! the dashboard's providers page both use; the callers only format what it gives.

use switchyard_api::ChainEntry;

use super::state::{Cooldown, LimitsStore, RateState, utc_day_start_ms};
use crate::store::StoreError;

/// What the store holds of the limits at `now_ms`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitsView {
    /// When it was read, Unix ms.
    pub now_ms: i64,
    /// The entries cooling down now ([`LimitsStore::cooldowns`]).
    pub cooldowns: Vec<Cooldown>,
    /// The rate-limit windows with a slot in the last 60 s or learnt limits
    /// ([`LimitsStore::rate_states`]).
    pub rates: Vec<RateState>,
    /// USD spent today (the UTC day holding `now_ms`), tasks and gateway requests alike.
    pub spent_today_usd: f64,
}

/// One entry of a chain with its state in a [`LimitsView`].
#[derive(Debug, Clone, Copy)]
pub struct EntryLimits<'a> {
    /// Its place in the chain, 0 first.
    pub position: usize,
    /// The entry.
    pub entry: &'a ChainEntry,
    /// Its cooldown, when it is cooling down.
    pub cooldown: Option<&'a Cooldown>,
    /// Its rate-limit window and learnt limits, when the store has any.
    pub rate: Option<&'a RateState>,
}

impl LimitsView {
    /// Reads the cooldowns, rate-limit windows and today's spend from `store` at `now_ms`.
    ///
    /// # Errors
    ///
    /// The store's, when any of the three reads fails.
    pub async fn read<S>(store: &S, now_ms: i64) -> Result<Self, StoreError>
    where
        S: LimitsStore + ?Sized,
    {
        let day = utc_day_start_ms(now_ms);
        let (cooldowns, rates, spent_today_usd) = tokio::try_join!(
            store.cooldowns(now_ms),
            store.rate_states(now_ms),
            store.spend_between(day, day + 86_400_000)
        )?;
        Ok(Self {
            now_ms,
            cooldowns,
            rates,
            spent_today_usd,
        })
    }

    /// Nothing stored, at `now_ms` (a store not made yet).
    pub fn empty(now_ms: i64) -> Self {
        Self {
            now_ms,
            ..Self::default()
        }
    }

    /// The cooldown of `entry`, if it is cooling down.
    pub fn cooldown_of(&self, entry: &ChainEntry) -> Option<&Cooldown> {
        self.cooldowns.iter().find(|c| c.entry.is_of(entry))
    }

    /// The rate-limit window of `entry` (kept under its `rate_key`), if the store has one.
    pub fn rate_of(&self, entry: &ChainEntry) -> Option<&RateState> {
        self.rates.iter().find(|r| r.key == entry.rate_key)
    }

    /// Each entry of `chain`, in order, with its state.
    pub fn entries<'a>(&'a self, chain: &'a [ChainEntry]) -> Vec<EntryLimits<'a>> {
        (chain.iter().enumerate())
            .map(|(position, entry)| EntryLimits {
                position,
                entry,
                cooldown: self.cooldown_of(entry),
                rate: self.rate_of(entry),
            })
            .collect()
    }

    /// The cooldowns of no entry in `shown` (a gateway's `PROVIDER/MODEL` requests, a chain
    /// since changed), oldest first as stored.
    pub fn unmatched<'a, 'e>(
        &'a self,
        shown: impl IntoIterator<Item = &'e ChainEntry> + Clone,
    ) -> Vec<&'a Cooldown> {
        (self.cooldowns.iter())
            .filter(|c| !shown.clone().into_iter().any(|e| c.entry.is_of(e)))
            .collect()
    }

    /// Seconds until `cooldown` ends, from when this view was read (0 once it has).
    pub fn seconds_left(&self, cooldown: &Cooldown) -> f64 {
        (cooldown.until_ms - self.now_ms).max(0) as f64 / 1000.0
    }
}
