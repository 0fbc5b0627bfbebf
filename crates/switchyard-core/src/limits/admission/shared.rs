//! The state an allocator's callers and its two background tasks share.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard};

use super::allowance::Allowance;
use super::config::AllocatorConfig;
use super::slice::{Slice, SliceKey};
use crate::limits::Cooldown;
use crate::store::{LeasedRecord, TaskStore};

/// A settled request on its way to the store, with the slices its cost stays in until then.
#[derive(Debug)]
pub(crate) struct Settled {
    pub(crate) record: LeasedRecord,
    pub(crate) costs: Vec<(SliceKey, i64, f64)>,
}

/// What is in memory: slices by scope, allowances by rate key, keys found revoked, cooldowns.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) slices: HashMap<SliceKey, Slice>,
    pub(crate) allowances: HashMap<String, Allowance>,
    pub(crate) revoked: HashSet<String>,
    pub(crate) cooldowns: Vec<Cooldown>,
}

/// One allocator's store, identity, settings, state and record queue.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) holder: String,
    pub(crate) config: AllocatorConfig,
    pub(crate) state: Mutex<State>,
    /// One lease call at a time: each sets amounts absolutely from the state it saw.
    pub(crate) leasing: Arc<tokio::sync::Mutex<()>>,
    /// Traced requests not settled yet: while any are, each tick renews their traces.
    pub(crate) traced: AtomicUsize,
}

impl Shared {
    pub(crate) fn now_ms(&self) -> i64 {
        self.config.clock.now_ms()
    }

    /// The state, still usable after a panic elsewhere, as every update is one step.
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lease a slice must have left to be taken from without a store call.
    pub(crate) fn margin_ms(&self) -> i64 {
        self.config.lease_ms / 2
    }
}
