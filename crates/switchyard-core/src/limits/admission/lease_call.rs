//! One lease call: the plans of some slices sent to the store and its answer applied.

use std::sync::Arc;

use tokio::sync::OwnedMutexGuard;

use super::shared::Shared;
use super::slice::Plan;
use crate::store::{LeaseGrant, LeaseWant, StoreError};

/// The answer to each plan, and the lock on lease calls, still held.
pub(crate) type Answers = (Vec<(Plan, LeaseGrant)>, OwnedMutexGuard<()>);

/// Sends `plans` in one call and applies the answer, in a task of its own so a caller that
/// goes away cannot leave a slice capped; `one` keeps other calls out until it is applied,
/// and is handed back so the caller can take what it leased before a tick shrinks it.
pub(crate) async fn call(
    shared: &Arc<Shared>,
    now_ms: i64,
    plans: Vec<Plan>,
    one: OwnedMutexGuard<()>,
) -> Result<Answers, StoreError> {
    let shared = Arc::clone(shared);
    let task = tokio::spawn(async move {
        let wants: Vec<LeaseWant> = plans.iter().map(|p| p.want.clone()).collect();
        let expires = now_ms.saturating_add(shared.config.lease_ms);
        let answer = (shared.store)
            .lease(&shared.holder, now_ms, expires, &wants)
            .await;
        let mut state = shared.state();
        match answer {
            Ok(grants) => {
                for (plan, grant) in plans.iter().zip(&grants) {
                    if let Some(slice) = state.slices.get_mut(&plan.key) {
                        slice.apply(plan, grant, expires);
                    }
                }
                Ok((plans.into_iter().zip(grants).collect(), one))
            }
            Err(e) => {
                for plan in &plans {
                    if let Some(slice) = state.slices.get_mut(&plan.key) {
                        slice.failed(plan);
                    }
                }
                Err(e)
            }
        }
    });
    match task.await {
        Ok(answer) => answer,
        Err(e) => Err(StoreError::Backend {
            location: "lease".to_owned(),
            source: format!("the lease call stopped: {e}").into(),
        }),
    }
}
