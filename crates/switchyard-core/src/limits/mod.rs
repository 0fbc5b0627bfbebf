//! Failover chains, spend caps and client-side rate limits (SPEC R12), with their state in
//! the store so every process on it shares one view (R13.2).
//!
//! - [`state`]: what is kept, and the [`LimitsStore`] trait every store backend implements
//!   (cooldowns, spend by time, rate-limit slots, learnt limits), with [`decide_slot`], the
//!   one rule for whether a request fits its window.
//! - [`guard`]: [`RequestLimits`], what the request step (`task/attempt.rs`, and the gateway's
//!   relay for each client request, SPEC R14.4) asks before and after each request: which
//!   entry, whether the caps allow it, whether the window has room.
//! - [`view`]: [`LimitsView`], the state read at one instant and matched to a chain's entries
//!   (`switchyard limits` and the dashboard's providers page, SPEC R14.11).

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
/// Which failures move a request to the next entry (SPEC R12.1); its home is the failover
/// chain's, in the provider layer, so the gateway applies the same rule.
pub use switchyard_api::fails_over;
pub use view::{EntryLimits, LimitsView};
