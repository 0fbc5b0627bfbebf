//! The store's limits state read at one instant and matched to a chain's entries, as
//! `switchyard limits` and the dashboard show it.
//! Spec: R12, R14.11.

use switchyard_api::ChainEntry;

use super::state::{Cooldown, LimitsStore, RateState, utc_day_start_ms};
use crate::store::StoreError;

/// What the store holds of the limits at `now_ms`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitsView {
    /// When it was read, Unix ms.
    pub now_ms: i64,
    /// The entries cooling down now.
    pub cooldowns: Vec<Cooldown>,
    /// The rate-limit windows with a slot in the last minute or learnt limits.
    pub rates: Vec<RateState>,
    /// USD spent today by tasks and gateway requests alike.
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

    /// Nothing stored at `now_ms`, for a store not made yet.
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

    /// The rate-limit window of `entry`, if the store has one.
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

    /// The cooldowns of no entry in `shown`, such as a chain since changed, oldest first.
    pub fn unmatched<'a, 'e>(
        &'a self,
        shown: impl IntoIterator<Item = &'e ChainEntry> + Clone,
    ) -> Vec<&'a Cooldown> {
        (self.cooldowns.iter())
            .filter(|c| !shown.clone().into_iter().any(|e| c.entry.is_of(e)))
            .collect()
    }

    /// Seconds until `cooldown` ends from when this view was read, 0 once it has.
    pub fn seconds_left(&self, cooldown: &Cooldown) -> f64 {
        (cooldown.until_ms - self.now_ms).max(0) as f64 / 1000.0
    }
}
