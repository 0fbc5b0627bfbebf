//! One walk down a route's entries under Switchyard's limits, with the task layer's own rules:
//! the first entry not cooling down and admitted by the daily cap and its rate window.
//! Spec: R14.4, R12.1, R12.2, R12.3.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use switchyard_api::{
    ApiError, ChainEntry, ErrorKind, ResponseObserver, fails_over, rate_limit_headers,
};
use switchyard_core::limits::{
    Choice, Cooldown, LimitedEntry, RequestLimits, SlotGrant, SpendCaps,
};
use switchyard_core::store::{StoreError, TaskStore};
use tokio::time::Instant;

use super::limits_cache::{LimitsCache, Seen};

/// One request's search for an entry to send to.
pub(crate) struct Search {
    store: Arc<dyn TaskStore>,
    cache: Arc<LimitsCache>,
    limits: Arc<RequestLimits>,
    /// The request's estimated input tokens, for the token window and the spend check.
    input_tokens: u64,
    until: Instant,
    tried: Vec<bool>,
    /// The entry being sent to, and whether another one was free when it was chosen.
    current: Option<(usize, bool)>,
}

impl Search {
    pub(crate) fn new(
        (store, cache): (Arc<dyn TaskStore>, Arc<LimitsCache>),
        caps: SpendCaps,
        chain: &[ChainEntry],
        (input_tokens, until): (u64, Instant),
    ) -> Self {
        let entries = chain.iter().map(LimitedEntry::from_chain).collect();
        Self {
            store,
            cache,
            limits: Arc::new(RequestLimits::new(entries, caps)),
            input_tokens,
            until,
            tried: vec![false; chain.len()],
            current: None,
        }
    }

    /// The next entry to send to: the first not cooling down and not yet tried, once the spend
    /// cap and its rate window admit the request. `None` when every free entry was tried, so the
    /// last failure stands; an error is the request's answer.
    pub(crate) async fn next(&mut self) -> Result<Option<usize>, ApiError> {
        loop {
            let seen = self.cache.current(self.store()).await;
            let seen = seen.map_err(store_error)?;
            let choice = self.limits.choose_among(&seen.cooldowns);
            let (index, alternative) = match choice {
                Choice::Entry { index, alternative } => (index, alternative),
                // Entries this request failed on were cooled by it: the last failure stands.
                Choice::AllCooling { .. } if self.tried.contains(&true) => return Ok(None),
                Choice::AllCooling { until_ms, first } => {
                    self.wait_until(until_ms, || all_cooling(&first)).await?;
                    continue;
                }
            };
            if self.tried[index] {
                return Ok(None);
            }
            self.admit(index, &seen).await?;
            self.tried[index] = true;
            self.current = Some((index, alternative));
            return Ok(Some(index));
        }
    }

    /// Whether another entry was free when the current one was chosen: a failure then moves on
    /// at once, skipping the provider layer's retries.
    pub(crate) fn alternative(&self) -> bool {
        self.current.is_some_and(|(_, alternative)| alternative)
    }

    /// Stores what each response's headers say of the provider's limits, in a task of its own.
    pub(crate) fn hear(&self) -> Option<ResponseObserver> {
        let (index, _) = self.current?;
        let limits = Arc::clone(&self.limits);
        let (store, cache) = (Arc::clone(&self.store), Arc::clone(&self.cache));
        Some(Arc::new(move |_status: u16, headers: &hyper::HeaderMap| {
            let Some(heard) = rate_limit_headers(headers, SystemTime::now()) else {
                return;
            };
            let (limits, store, cache) =
                (Arc::clone(&limits), Arc::clone(&store), Arc::clone(&cache));
            tokio::spawn(async move {
                match limits.learn(store.as_ref(), index, &heard).await {
                    Ok(()) => cache.learnt(&limits.entries()[index].rate_key),
                    Err(e) => tracing::warn!("the provider's rate limits could not be stored: {e}"),
                }
            });
        }))
    }

    /// The current entry failed before content: with another entry free and a kind that fails
    /// over, it cools down in the store, so every later request goes to the next. The last free
    /// entry is not cooled: its provider-level retries already ran.
    pub(crate) async fn failed(&mut self, error: &ApiError) {
        let Some((index, true)) = self.current else {
            return;
        };
        if !fails_over(error.kind) {
            return;
        }
        match self.limits.cool_down(self.store(), index, error).await {
            Ok(cooldown) => self.cache.cooled(cooldown),
            Err(e) => tracing::warn!("a cooldown could not be stored: {e}"),
        }
    }

    fn store(&self) -> &dyn TaskStore {
        self.store.as_ref()
    }

    /// The daily spend cap, then a slot in entry `index`'s rate window. An entry with neither
    /// a configured nor a learnt limit takes no slot: nothing would count it.
    async fn admit(&self, index: usize, seen: &Seen) -> Result<(), ApiError> {
        let store = self.store();
        self.limits
            .check_spend(store, None, index, self.input_tokens)
            .await
            .map_err(store_error)??;
        let entry = &self.limits.entries()[index];
        let configured = entry.rate.requests_per_minute.is_some()
            || entry.rate.input_tokens_per_minute.is_some();
        if !configured && !seen.limited(&entry.rate_key) {
            return Ok(());
        }
        loop {
            let grant = self.limits.try_slot(store, index, self.input_tokens).await;
            match grant.map_err(store_error)? {
                SlotGrant::Granted => return Ok(()),
                SlotGrant::Wait { until_ms, reason } => {
                    let label = self.limits.entries()[index].key.label();
                    self.wait_until(until_ms, || {
                        ApiError::new(
                            ErrorKind::RateLimited,
                            format!(
                                "{label} is at its rate limit ({}); the window has room again after this gateway's request deadline",
                                reason.as_str()
                            ),
                        )
                    })
                    .await?;
                }
            }
        }
    }

    /// Sleeps until `until_ms` when that is within the deadline; otherwise the error `refuse`
    /// makes, with the wait as its `retry_after`.
    async fn wait_until(
        &self,
        until_ms: i64,
        refuse: impl FnOnce() -> ApiError,
    ) -> Result<(), ApiError> {
        let wait =
            Duration::from_millis(u64::try_from(until_ms - self.limits.now_ms()).unwrap_or(0))
                .max(Duration::from_millis(1));
        if Instant::now() + wait > self.until {
            let mut error = refuse();
            error.retry_after = Some(Duration::from_secs(wait.as_secs_f64().ceil() as u64));
            return Err(error);
        }
        tokio::time::sleep(wait).await;
        Ok(())
    }
}

/// The answer when every entry is cooling down past the deadline: a rate limit when the first
/// back failed with one or a quota, else an overload.
fn all_cooling(first: &Cooldown) -> ApiError {
    let kind = match first.reason.as_str() {
        "rate_limited" | "quota_exceeded" => ErrorKind::RateLimited,
        _ => ErrorKind::Overloaded,
    };
    ApiError::new(
        kind,
        format!(
            "every provider of this route is cooling down; the first back is {} (it failed with {})",
            first.entry.label(),
            first.reason
        ),
    )
}

fn store_error(e: StoreError) -> ApiError {
    ApiError::new(
        ErrorKind::Server,
        format!("the gateway's store failed: {e}"),
    )
}
