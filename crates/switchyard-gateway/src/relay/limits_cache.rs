//! The cooldowns and learnt provider limits every request's entry choice reads, kept in memory
//! and read again from the store at most once a second, so a request whose entry has no rate
//! limit makes no store round trip to choose it.
//! Spec: R14.17.

use std::collections::HashSet;
use std::sync::{Arc, PoisonError, RwLock};

use switchyard_core::limits::{Clock, Cooldown, LearntLimits};
use switchyard_core::store::{StoreError, TaskStore};

/// How old what was read may be: other processes' cooldowns and learnt limits reach this one
/// within it.
const STALE_MS: i64 = 1_000;

/// What the store said, and when it was read.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    read_ms: Option<i64>,
    pub(crate) cooldowns: Vec<Cooldown>,
    /// The rate keys a provider gave a limit that has not reset yet.
    learnt: HashSet<String>,
}

impl Seen {
    /// Whether `rate_key` has a learnt limit, so its requests take slots in the store.
    pub(crate) fn limited(&self, rate_key: &str) -> bool {
        self.learnt.contains(rate_key)
    }
}

/// One gateway process's cache of the limits state its requests share.
pub(crate) struct LimitsCache {
    seen: RwLock<Arc<Seen>>,
    /// One read of the store at a time; the others use what was read before.
    reading: tokio::sync::Mutex<()>,
    clock: Clock,
}

impl Default for LimitsCache {
    fn default() -> Self {
        Self {
            seen: RwLock::default(),
            reading: tokio::sync::Mutex::new(()),
            clock: Clock::system(),
        }
    }
}

impl LimitsCache {
    /// What was read, read again first when older than a second. A request that finds another
    /// one reading uses the previous read, unless there is none.
    pub(crate) async fn current(&self, store: &dyn TaskStore) -> Result<Arc<Seen>, StoreError> {
        let seen = self.snapshot();
        let now = self.clock.now_ms();
        if seen.read_ms.is_some_and(|at| now - at < STALE_MS) {
            return Ok(seen);
        }
        let _reading = match self.reading.try_lock() {
            Ok(guard) => guard,
            Err(_) if seen.read_ms.is_some() => return Ok(seen),
            Err(_) => self.reading.lock().await,
        };
        let seen = self.snapshot();
        if seen.read_ms.is_some_and(|at| now - at < STALE_MS) {
            return Ok(seen);
        }
        let cooldowns = store.cooldowns(now).await?;
        let states = store.rate_states(now).await?;
        let learnt = (states.into_iter())
            .filter(|s| s.learnt.as_ref().is_some_and(|l| live(l, now)))
            .map(|s| s.key)
            .collect();
        // Cooldowns set here since the read began are kept.
        let mut written = self.snapshot().cooldowns.clone();
        written.retain(|c| c.until_ms > now && !cooldowns.iter().any(|r| r.entry == c.entry));
        let fresh = Arc::new(Seen {
            read_ms: Some(now),
            cooldowns: cooldowns.into_iter().chain(written).collect(),
            learnt,
        });
        *self.seen.write().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&fresh);
        Ok(fresh)
    }

    /// Keeps `cooldown`, just written to the store, so this process's next request sees it.
    pub(crate) fn cooled(&self, cooldown: Cooldown) {
        self.update(|seen| {
            seen.cooldowns.retain(|c| c.entry != cooldown.entry);
            seen.cooldowns.push(cooldown);
        });
    }

    /// Keeps that `rate_key` has a learnt limit, just written to the store.
    pub(crate) fn learnt(&self, rate_key: &str) {
        if !self.snapshot().limited(rate_key) {
            self.update(|seen| {
                seen.learnt.insert(rate_key.to_owned());
            });
        }
    }

    fn snapshot(&self) -> Arc<Seen> {
        Arc::clone(&self.seen.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn update(&self, change: impl FnOnce(&mut Seen)) {
        let mut guard = self.seen.write().unwrap_or_else(PoisonError::into_inner);
        let mut next = Seen {
            read_ms: guard.read_ms,
            cooldowns: guard.cooldowns.clone(),
            learnt: guard.learnt.clone(),
        };
        change(&mut next);
        *guard = Arc::new(next);
    }
}

/// Whether a provider's limit still stands at `now`.
fn live(learnt: &LearntLimits, now: i64) -> bool {
    let standing = |left: Option<u64>, reset: Option<i64>| left.is_some() && reset > Some(now);
    standing(learnt.requests_remaining, learnt.requests_reset_ms)
        || standing(learnt.tokens_remaining, learnt.tokens_reset_ms)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use switchyard_core::limits::EntryKey;
    use switchyard_core::store::SqliteStore;

    use super::*;

    fn cooldown(model: &str, until_ms: i64) -> Cooldown {
        Cooldown {
            entry: EntryKey {
                provider: "anthropic".to_owned(),
                model: model.to_owned(),
                base_url: String::new(),
            },
            since_ms: until_ms - 60_000,
            until_ms,
            reason: "overloaded".to_owned(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_store_is_read_at_most_once_a_second_and_this_processs_own_writes_at_once() {
        let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::in_memory().unwrap());
        let cache = LimitsCache::default();
        assert!(
            cache
                .current(store.as_ref())
                .await
                .unwrap()
                .cooldowns
                .is_empty()
        );
        let now = Clock::system().now_ms();
        // Another process cools an entry and learns a limit.
        store
            .set_cooldown(&cooldown("other", now + 60_000))
            .await
            .unwrap();
        let learnt = LearntLimits {
            observed_ms: now,
            requests_remaining: Some(0),
            requests_reset_ms: Some(now + 30_000),
            ..LearntLimits::default()
        };
        store.record_learnt_limits("rate_x", &learnt).await.unwrap();
        let seen = cache.current(store.as_ref()).await.unwrap();
        assert!(seen.cooldowns.is_empty(), "read less than a second ago");
        assert!(!seen.limited("rate_x"));
        // This process's own cooldown is seen at once.
        cache.cooled(cooldown("own", now + 60_000));
        let seen = cache.current(store.as_ref()).await.unwrap();
        assert_eq!(seen.cooldowns.len(), 1);
        // Past the second with room for the clock's millisecond rounding.
        tokio::time::advance(Duration::from_millis(1_100)).await;
        let seen = cache.current(store.as_ref()).await.unwrap();
        let mut models: Vec<_> = seen
            .cooldowns
            .iter()
            .map(|c| c.entry.model.as_str())
            .collect();
        models.sort_unstable();
        assert_eq!(
            models,
            ["other", "own"],
            "a second later the store's are read too"
        );
        assert!(seen.limited("rate_x"));
        assert!(!seen.limited("rate_y"));
    }
}
