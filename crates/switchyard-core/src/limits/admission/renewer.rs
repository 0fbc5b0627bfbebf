//! The background task that keeps slices leased, shrinks idle ones, returns lapsed
//! allowances and reads revoked keys and cooldowns again, once a tick.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::lease_call::call;
use super::rate::give_back;
use super::shared::Shared;
use super::slice::{Plan, SliceKey};
use crate::store::{LeaseScope, SlotLease};

/// Ticks until aborted.
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut every = tokio::time::interval(Duration::from_millis(shared.config.tick_ms.max(1)));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        tick(&shared).await;
    }
}

/// One tick: keys and cooldowns read, slices and traces renewed, lapsed allowances returned.
pub(crate) async fn tick(shared: &Arc<Shared>) {
    refresh(shared).await;
    renew(shared).await;
    renew_traces(shared).await;
    lapse(shared).await;
}

/// Keeps this process's traces from expiring while it has requests in flight: a trace
/// expires only when its process stopped renewing it.
async fn renew_traces(shared: &Shared) {
    if shared.traced.load(std::sync::atomic::Ordering::Acquire) == 0 {
        return;
    }
    let expires = shared.now_ms().saturating_add(shared.config.lease_ms);
    if let Err(e) = shared.store.renew_open(&shared.holder, expires).await {
        tracing::warn!("renewing the traces of requests in flight failed: {e}");
    }
}

/// Reads which keys are revoked or expired, and the running cooldowns.
async fn refresh(shared: &Shared) {
    let now = shared.now_ms();
    match shared.store.client_keys().await {
        Ok(keys) => {
            let revoked: HashSet<String> = (keys.into_iter())
                .filter(|k| k.revoked_ms.is_some() || k.expires_ms.is_some_and(|e| e <= now))
                .map(|k| k.id)
                .collect();
            shared.state().revoked = revoked;
        }
        Err(e) => tracing::warn!("reading the client keys failed: {e}"),
    }
    match shared.store.cooldowns(now).await {
        Ok(cooldowns) => shared.state().cooldowns = cooldowns,
        Err(e) => tracing::warn!("reading the cooldowns failed: {e}"),
    }
}

/// The most slices one renewal call carries, so the rows it locks are held briefly.
const PER_CALL: usize = 32;

/// Lease calls for every slice due: renewed with headroom for what it gave out since its
/// last call, or shrunk to what it owes when idle, tight or its key is revoked.
async fn renew(shared: &Arc<Shared>) {
    let mut one = Arc::clone(&shared.leasing).lock_owned().await;
    let now = shared.now_ms();
    let due: Vec<(SliceKey, bool)> = {
        let mut state = shared.state();
        let state = &mut *state;
        state.slices.retain(|_, s| {
            s.roll(now);
            s.held()
        });
        let revoked = &state.revoked;
        (state.slices.iter())
            .filter_map(|(key, slice)| {
                let gone = key.scope != LeaseScope::Team
                    && key.scope != LeaseScope::Gateway
                    && revoked.contains(&key.id);
                let idle = slice.demand <= 0.0 || gone;
                (slice.due(now, shared.config.lease_ms, idle)).then(|| (key.clone(), idle))
            })
            .collect()
    };
    for chunk in due.chunks(PER_CALL) {
        let plans: Vec<Plan> = {
            let mut state = shared.state();
            (chunk.iter())
                .filter_map(|(key, idle)| {
                    let slice = state.slices.get_mut(key)?;
                    Some(slice.plan(key, (0.0, *idle), (now, shared.config.max_share)))
                })
                .collect()
        };
        match call(shared, now, plans, one).await {
            Ok((_, back)) => one = back,
            Err(e) => {
                tracing::warn!("renewing the budget leases failed: {e}");
                shared
                    .state()
                    .slices
                    .values_mut()
                    .for_each(|s| s.next_tick());
                return;
            }
        }
    }
    drop(one);
    let mut state = shared.state();
    state.slices.retain(|_, s| s.held());
    state.slices.values_mut().for_each(|s| s.next_tick());
}

/// Returns the unused slots of allowances past their last instant.
async fn lapse(shared: &Shared) {
    let now = shared.now_ms();
    let lapsed: Vec<(String, SlotLease)> = {
        let mut state = shared.state();
        let keys: Vec<String> = (state.allowances.iter())
            .filter(|(_, a)| a.valid_until_ms < now)
            .map(|(k, _)| k.clone())
            .collect();
        (keys.into_iter())
            .filter_map(|k| state.allowances.remove(&k).map(|a| (k, a.unused())))
            .collect()
    };
    for (key, unused) in lapsed {
        if let Err(e) = give_back(shared, &key, unused).await {
            tracing::warn!("returning unused rate slots failed: {e}");
        }
    }
}
