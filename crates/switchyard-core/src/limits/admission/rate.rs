//! Leasing per-minute slots for a rate key when its allowance is used up or lapsed.

use std::sync::Arc;

use super::allowance::Allowance;
use super::ask::{Refusal, Refused, store_refused};
use super::shared::Shared;
use crate::limits::{LimitReason, RateLimits};
use crate::store::{SlotLease, SlotLeaseRequest, StoreError};

/// Replaces `key`'s allowance by a new lease sized to its last one's use, returning what the
/// old one left unused; refused when the window has no room for a request of `input` tokens.
pub(crate) async fn lease_allowance(
    shared: &Arc<Shared>,
    key: &str,
    limits: RateLimits,
    input: u64,
) -> Result<(), Refused> {
    let one = Arc::clone(&shared.leasing).lock_owned().await;
    let now = shared.now_ms();
    let old = {
        let mut state = shared.state();
        if (state.allowances.get(key)).is_some_and(|a| a.fits(now, input)) {
            return Ok(());
        }
        state.allowances.remove(key)
    };
    let (shared, key) = (Arc::clone(shared), key.to_owned());
    // Its own task, so a caller that goes away cannot strand slots that were leased.
    let task = tokio::spawn(async move {
        let _one = one;
        if let Some(old) = &old {
            give_back(&shared, &key, old.unused()).await?;
        }
        let requests = Allowance::next_size(old.as_ref(), shared.config.max_share);
        let request = SlotLeaseRequest {
            key: key.clone(),
            holder: shared.holder.clone(),
            limits,
            now_ms: now,
            requests,
            tokens: input.saturating_mul(requests),
            valid_until_ms: now.saturating_add(shared.config.allowance_ms),
        };
        let granted = shared.store.lease_slots(&request).await?;
        if granted.requests == 0 || granted.tokens < input {
            give_back(&shared, &key, granted).await?;
            let wait = room_in(&shared, &key, now).await;
            return Ok(Some((short_reason(limits, granted), wait)));
        }
        let allowance = Allowance {
            limits,
            granted,
            used: SlotLease::default(),
            valid_until_ms: request.valid_until_ms,
        };
        shared.state().allowances.insert(key, allowance);
        Ok::<_, StoreError>(None)
    });
    match task.await {
        Ok(Ok(None)) => Ok(()),
        Ok(Ok(Some((reason, wait)))) => Err(Refused {
            reason: Refusal::Rate { reason },
            retry_after_ms: Some(wait),
        }),
        Ok(Err(e)) => Err(store_refused(e)),
        Err(e) => Err(Refused {
            reason: Refusal::Store {
                message: format!("the slot lease stopped: {e}"),
            },
            retry_after_ms: Some(1_000),
        }),
    }
}

/// When `key`'s window has room again, in ms from `now`: a minute after its oldest slot,
/// at least a second; a second when the store cannot say.
async fn room_in(shared: &Shared, key: &str, now: i64) -> i64 {
    let states = shared.store.rate_states(now).await.unwrap_or_default();
    let oldest = states
        .iter()
        .find(|s| s.key == key)
        .and_then(|s| s.oldest_ms);
    oldest.map_or(1_000, |ts| (ts + 60_000 - now).clamp(1_000, 60_000))
}

/// Deletes `unused` slots of `key` this process leased, which stood for no request.
pub(crate) async fn give_back(
    shared: &Shared,
    key: &str,
    unused: SlotLease,
) -> Result<(), StoreError> {
    if unused.requests == 0 && unused.tokens == 0 {
        return Ok(());
    }
    shared
        .store
        .return_slots(key, &shared.holder, unused)
        .await
        .map(drop)
}

/// The limit that left no room, as far as the grant tells.
fn short_reason(limits: RateLimits, granted: SlotLease) -> LimitReason {
    match (granted.requests, limits) {
        (
            0,
            RateLimits {
                requests_per_minute: Some(_),
                ..
            },
        ) => LimitReason::RequestsPerMinute,
        (0, _) => LimitReason::LearntRequests,
        (
            _,
            RateLimits {
                input_tokens_per_minute: Some(_),
                ..
            },
        ) => LimitReason::InputTokensPerMinute,
        _ => LimitReason::LearntTokens,
    }
}
