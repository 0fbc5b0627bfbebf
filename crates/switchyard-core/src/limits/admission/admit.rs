//! Admission: take from the slices and the allowance in memory, else lease what is short.

use std::sync::Arc;

use tokio::sync::OwnedMutexGuard;

use super::ask::{
    Admission, AdmissionAsk, Admitted, Need, Refusal, Refused, Taken, hold_scope, store_refused,
};
use super::lease_call::call;
use super::rate::lease_allowance;
use super::shared::Shared;
use super::slice::{Plan, Slice};
use crate::limits::RateLimits;
use crate::store::{LeaseGrant, LeaseScope};

/// What memory alone could do with a request.
enum Step {
    Done(Admitted),
    Refused(Refused),
    Short { rate: bool, slices: bool },
}

/// Admits `ask`: from memory when everything it needs fits, else after at most a few store
/// calls for what is short.
pub(crate) async fn admit(shared: &Arc<Shared>, ask: &AdmissionAsk) -> Admission {
    let needs = ask.needs();
    let rate = ask.rate();
    // Held from a lease call to the next take, so no tick shrinks what was leased between.
    let mut leased: Option<OwnedMutexGuard<()>> = None;
    // Each round leases what was short; requests admitted meanwhile may take it first.
    for _ in 0..4 {
        let step = try_take(shared, ask, &needs, rate.as_ref());
        drop(leased.take());
        let (rate_short, slices_short) = match step {
            Step::Done(admitted) => return Admission::Admitted(admitted),
            Step::Refused(refused) => return Admission::Refused(refused),
            Step::Short { rate, slices } => (rate, slices),
        };
        if let (true, Some((key, limits))) = (rate_short, &rate)
            && let Err(refused) = lease_allowance(shared, key, *limits, ask.input_tokens).await
        {
            return Admission::Refused(refused);
        }
        if slices_short {
            match lease_short(shared, &needs).await {
                Ok(one) => leased = one,
                Err(refused) => return Admission::Refused(refused),
            }
        }
    }
    Admission::Refused(Refused {
        reason: Refusal::Store {
            message: "other requests took what was leased for this one; ask again".to_owned(),
        },
        retry_after_ms: Some(shared.config.tick_ms as i64),
    })
}

/// Takes every slice and the allowance `ask` needs in one step under the state's lock.
fn try_take(
    shared: &Shared,
    ask: &AdmissionAsk,
    needs: &[Need],
    rate: Option<&(String, RateLimits)>,
) -> Step {
    let now = shared.now_ms();
    let margin = shared.margin_ms();
    let mut state = shared.state();
    if let Some(k) = &ask.key {
        let expired = k.expires_ms.is_some_and(|e| e <= now);
        if k.revoked_ms.is_some() || expired || state.revoked.contains(&k.id) {
            return Step::Refused(Refused {
                reason: Refusal::Revoked,
                retry_after_ms: None,
            });
        }
    }
    let mut slices = false;
    for n in needs {
        let slice = (state.slices.entry(n.key.clone()))
            .or_insert_with(|| Slice::new(n.limit, n.window, now));
        slice.relimit(n.limit, n.window, now);
        slice.roll(now);
        slices |= slice.room(now, margin) + 1e-12 < n.amount;
    }
    let input = ask.input_tokens;
    // An allowance leased under other limits is replaced, so an edited RPM or TPM binds at once.
    let rate_short = rate.is_some_and(|(key, limits)| {
        !(state.allowances.get(key)).is_some_and(|a| a.limits == *limits && a.fits(now, input))
    });
    if slices || rate_short {
        return Step::Short {
            rate: rate_short,
            slices,
        };
    }
    if let Some(a) = rate.and_then(|(key, _)| state.allowances.get_mut(key)) {
        a.take(input);
    }
    let mut taken = Vec::with_capacity(needs.len());
    for n in needs {
        if let Some(slice) = state.slices.get_mut(&n.key) {
            slice.take(n.amount);
            taken.push(Taken {
                key: n.key.clone(),
                bucket: slice.bucket,
                amount: n.amount,
            });
        }
    }
    Step::Done(Admitted {
        reserved_usd: ask.reserve_usd.max(0.0),
        at_ms: now,
        key_id: ask.key.as_ref().map(|k| k.id.clone()),
        team: ask.key.as_ref().and_then(|k| k.team.clone()),
        taken,
        traced: false,
    })
}

/// One lease call for the slices of `needs` without room, each wanting its request's amount
/// on top of what it owes; refused when the answer still leaves no room.
async fn lease_short(
    shared: &Arc<Shared>,
    needs: &[Need],
) -> Result<Option<OwnedMutexGuard<()>>, Refused> {
    let one = Arc::clone(&shared.leasing).lock_owned().await;
    let now = shared.now_ms();
    let (margin, share) = (shared.margin_ms(), shared.config.max_share);
    let plans: Vec<Plan> = {
        let mut state = shared.state();
        let mut plans = Vec::new();
        for n in needs {
            let slice = (state.slices.entry(n.key.clone()))
                .or_insert_with(|| Slice::new(n.limit, n.window, now));
            slice.roll(now);
            if slice.room(now, margin) + 1e-12 < n.amount {
                plans.push(slice.plan(&n.key, (n.amount, false), (now, share)));
            }
        }
        plans
    };
    if plans.is_empty() {
        return Ok(Some(one));
    }
    let (answers, one) = call(shared, now, plans, one).await.map_err(store_refused)?;
    let state = shared.state();
    for (plan, grant) in &answers {
        let (Some(n), Some(slice)) = (
            needs.iter().find(|n| n.key == plan.key),
            state.slices.get(&plan.key),
        ) else {
            continue;
        };
        if slice.room(now, margin) + 1e-12 < n.amount {
            return Err(refusal(shared, n, (plan, grant), slice, now));
        }
    }
    Ok(Some(one))
}

/// Why `n` does not fit after the store's `grant`, and when it may.
fn refusal(
    shared: &Shared,
    n: &Need,
    (plan, grant): (&Plan, &LeaseGrant),
    slice: &Slice,
    now: i64,
) -> Refused {
    if plan.key.scope == LeaseScope::Parallel {
        return Refused {
            reason: Refusal::Parallel {
                limit: n.limit as u64,
            },
            retry_after_ms: Some(1_000),
        };
    }
    let left = grant.free + (slice.granted - slice.usage()).max(0.0);
    // What is left but held by other processes comes free at their next tick.
    let retry_after_ms = if left + 1e-12 >= n.amount {
        Some(shared.config.tick_ms as i64)
    } else {
        grant.resets_ms.map(|r| (r - now).max(0))
    };
    Refused {
        reason: Refusal::Budget {
            scope: hold_scope(plan.key.scope),
            limit: n.limit,
            left,
            resets_ms: grant.resets_ms,
        },
        retry_after_ms,
    }
}
