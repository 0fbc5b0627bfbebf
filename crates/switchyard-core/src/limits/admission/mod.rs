//! The allocator a gateway process admits keyed requests against, in memory, from slices of
//! budgets and per-minute allowances it leases from the store.
//! Spec: R14.17.

mod admit;
mod allocator;
mod allowance;
mod ask;
mod batcher;
mod config;
mod lease_call;
mod rate;
mod renewer;
mod shared;
mod slice;
#[cfg(test)]
mod tests;

pub use allocator::Allocator;
pub use ask::{Admission, AdmissionAsk, Admitted, Refusal, Refused};
pub use config::{AdmissionClock, AllocatorConfig};
pub use slice::SliceKey;
