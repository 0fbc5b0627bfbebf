//! Switchyard's layer under every gateway request (SPEC R14.4, R14.9): the same limits as a
//! task, with their state in the same store (R12.1 cooldowns, R12.2 the daily spend cap,
//! R12.3 rate limits, R13.2), a record of every request in that store (R9.2 cost), and the Responses answers a later
//! `previous_response_id` continues (R14.1).
//!
//! - `state.rs`: [`Layer`], the store and the caps one gateway shares over its requests;
//!   `/ready`.
//! - `search.rs`: `Search`, one request's walk down its route's failover chain under the
//!   limits: the first entry not cooling down, admitted by the caps and the rate-limit window
//!   (waiting within the request deadline), cooled down when it fails.
//! - `ledger.rs`: `Trip`, one request's record: who answered, the usage and its cost, the
//!   first-token time, how it ended; written after the answer ended, never in a chunk's way.
//! - `budget.rs`: `Layer::admit_client`, a keyed request's per-minute slot and its budget
//!   hold, taken in the store before anything is sent (R14.6, R14.7); the record settles it.
//! - `writes.rs`: `Writes`, the request log's one writer per gateway: records in batches,
//!   one transaction each, off the answer's path (R14.8); a stopping gateway waits for it.
//! - `prune.rs`: the request log's retention (`[serve] request_log_days`, R14.8).
//! - `keep.rs`: `Keeper`, a Responses answer stored for a later `previous_response_id`
//!   (R14.1), and `Layer::resolve_previous`, the stored conversation put before a request's.

mod budget;
mod keep;
mod ledger;
mod prune;
mod search;
mod state;
mod writes;

pub(crate) use keep::{Keeper, Unanswerable, settle};
pub(crate) use ledger::Trip;
pub(crate) use state::Layer;
pub use state::{DEFAULT_HOLD_LEASE, DEFAULT_RESERVE_USD};
