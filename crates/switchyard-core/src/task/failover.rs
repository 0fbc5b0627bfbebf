//! The request step's side of failover, spend caps and rate limits.
//! Spec: R12.1, R12.2, R12.3.

use std::time::Duration;

use switchyard_api::{ApiError, ApiHandler, CancellationToken, ErrorKind, RateLimitHeaders};

use super::events::{TaskEvent, streaming_failed};
use super::observer::TurnObserver;
use super::recovery::{FailureDecider, FailureDecision, announce_and_wait, ask};
use super::settings::AttemptSettings;
use switchyard_api::fails_over;

use crate::limits::guard::{Choice, RequestLimits};
use crate::limits::state::SlotGrant;
use crate::store::TaskStore;

#[derive(Clone, Copy)]
pub(crate) struct LimitsContext<'a> {
    pub limits: &'a RequestLimits,
    pub store: &'a dyn TaskStore,
    pub task_id: &'a str,
}

#[derive(Clone, Copy)]
pub(super) struct Route<'a> {
    pub entry: usize,
    pub handler: &'a dyn ApiHandler,
    /// Another entry is free: a failure of this one fails over at once.
    pub alternative: bool,
}

pub(crate) fn rfc3339(ms: i64) -> String {
    let t = switchyard_api::time::utc(ms.div_euclid(1000));
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

fn wait_until(l: LimitsContext<'_>, until_ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(until_ms - l.limits.now_ms()).unwrap_or(0))
}

/// The entry the step sends to; when all are cooling down, the decider is asked.
pub(super) async fn choose_entry<'a>(
    l: LimitsContext<'a>,
    decider: &dyn FailureDecider,
    settings: &AttemptSettings,
    observer: &mut dyn TurnObserver,
) -> Result<Option<Route<'a>>, ApiError> {
    match l
        .limits
        .choose(l.store)
        .await
        .map_err(|e| observer.store_failed(e))?
    {
        Choice::Entry { index, alternative } => Ok(Some(Route {
            entry: index,
            handler: l.limits.entries[index].handler.as_ref(),
            alternative,
        })),
        Choice::AllCooling { until_ms, first } => {
            let wait = wait_until(l, until_ms);
            let mut error = ApiError::new(
                ErrorKind::RateLimited,
                format!(
                    "every provider of the failover chain is cooling down; the first back is {} at {} (it failed with {})",
                    first.entry.label(),
                    rfc3339(until_ms),
                    first.reason
                ),
            );
            error.retry_after = Some(wait);
            match ask(decider, &error, observer).await {
                FailureDecision::Cancel => Err(error),
                FailureDecision::Retry => {
                    announce_and_wait(settings, 1, wait, &error, observer).await;
                    observer.event(TaskEvent::ApiReqRetried).await;
                    Ok(None)
                }
            }
        }
    }
}

pub(super) async fn admit(
    l: LimitsContext<'_>,
    entry: usize,
    input_tokens: u64,
    cancel: &CancellationToken,
    observer: &mut dyn TurnObserver,
) -> Result<(), ApiError> {
    l.limits
        .check_spend(l.store, Some(l.task_id), entry, input_tokens)
        .await
        .map_err(|e| observer.store_failed(e))??;
    loop {
        let grant = l.limits.try_slot(l.store, entry, input_tokens).await;
        let (until_ms, reason) = match grant.map_err(|e| observer.store_failed(e))? {
            SlotGrant::Granted => return Ok(()),
            SlotGrant::Wait { until_ms, reason } => (until_ms, reason),
        };
        let wait = wait_until(l, until_ms).max(Duration::from_millis(1));
        let e = &l.limits.entries[entry];
        observer
            .event(TaskEvent::RateLimitWait {
                provider: e.key.provider.clone(),
                model: e.key.model.clone(),
                limit: reason.as_str().to_owned(),
                delay_seconds: wait.as_secs_f64(),
            })
            .await;
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                return Err(ApiError::new(ErrorKind::Cancelled, "the request was cancelled while waiting for the rate limit"));
            }
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

pub(super) async fn learn_limits(
    l: LimitsContext<'_>,
    entry: usize,
    heard: &mut tokio::sync::mpsc::UnboundedReceiver<RateLimitHeaders>,
    observer: &mut dyn TurnObserver,
) -> Result<(), ApiError> {
    while let Ok(heard) = heard.try_recv() {
        l.limits
            .learn(l.store, entry, &heard)
            .await
            .map_err(|e| observer.store_failed(e))?;
    }
    Ok(())
}

/// Cools down a failed entry and moves on at once when another is free, returning true.
pub(super) async fn fail_over(
    l: LimitsContext<'_>,
    route: &Route<'_>,
    request_index: u32,
    error: &ApiError,
    observer: &mut dyn TurnObserver,
) -> Result<bool, ApiError> {
    if !(route.alternative && fails_over(error.kind)) {
        return Ok(false);
    }
    let entry = route.entry;
    let cooldown = l
        .limits
        .cool_down(l.store, entry, error)
        .await
        .map_err(|e| observer.store_failed(e))?;
    observer.event(streaming_failed(request_index, error)).await;
    if let Ok(Choice::Entry { index, .. }) = l.limits.choose(l.store).await {
        observer
            .event(TaskEvent::Fallback {
                from: l.limits.entries[entry].key.label(),
                to: l.limits.entries[index].key.label(),
                reason: error.kind.as_str().to_owned(),
                message: error.to_string(),
                until: rfc3339(cooldown.until_ms),
            })
            .await;
    }
    Ok(true)
}
