//! Failover chains, spend caps and client-side rate limits, with their state in the store.
//! Spec: R12, R13.2.

pub mod admission;
pub mod guard;
pub mod state;
pub mod view;

pub use guard::{
    Choice, Clock, DEFAULT_COOLDOWN, LimitedEntry, RequestLimits, SpendCaps, SpendCheck,
};
pub use state::{
    Cooldown, EntryKey, LearntLimits, LimitReason, LimitsStore, RATE_WINDOW_MS, RateLimits,
    RateState, SlotGrant, SlotRequest, decide_slot, slot_window, utc_day_start_ms,
};
/// Which failures move a request to the next entry, the provider layer's rule.
pub use switchyard_api::fails_over;
pub use view::{EntryLimits, LimitsView};
