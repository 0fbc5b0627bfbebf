//! The background task that keeps slices leased, shrinks idle ones, returns lapsed
//! allowances and reads revoked keys and cooldowns again, once a tick.
//! Spec: R14.12.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::lease_call::call;
use super::rate::give_back;
use super::shared::Shared;
use super::slice::Plan;
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

/// One tick: keys and cooldowns read, slices renewed, lapsed allowances returned.
pub(crate) async fn tick(shared: &Arc<Shared>) {
    refresh(shared).await;
    renew(shared).await;
    lapse(shared).await;
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

/// One lease call for every slice holding anything: renewed with headroom for what it took
/// since the last call, or shrunk to what it owes when idle or its key is revoked.
async fn renew(shared: &Arc<Shared>) {
    let one = Arc::clone(&shared.leasing).lock_owned().await;
    let now = shared.now_ms();
    let share = shared.config.max_share;
    let plans: Vec<Plan> = {
        let mut state = shared.state();
        let state = &mut *state;
        state.slices.retain(|_, s| {
            s.roll(now);
            s.held()
        });
        let revoked = &state.revoked;
        (state.slices.iter_mut())
            .map(|(key, slice)| {
                let gone = key.scope != LeaseScope::Team
                    && key.scope != LeaseScope::Gateway
                    && revoked.contains(&key.id);
                let idle = slice.demand <= 0.0 || gone;
                slice.plan(key, (0.0, idle), (now, share))
            })
            .collect()
    };
    if plans.is_empty() {
        return;
    }
    if let Err(e) = call(shared, now, plans, one).await {
        tracing::warn!("renewing the budget leases failed: {e}");
    }
    shared.state().slices.retain(|_, s| s.held());
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
