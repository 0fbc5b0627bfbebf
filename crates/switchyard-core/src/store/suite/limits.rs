//! The suite's tests of the R12 limits state every process on a store shares (SPEC R13.2):
//! cooldowns, spend by time, rate-limit slots, learnt limits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::fixture::{StoreFixture, new_task};
use crate::limits::{
    Cooldown, EntryKey, LearntLimits, LimitReason, RATE_WINDOW_MS, RateLimits, SlotGrant,
    SlotRequest,
};
use crate::store::{StoreError, TaskStore, TaskUsage, now_ms};

fn entry(provider: &str, model: &str) -> EntryKey {
    EntryKey {
        provider: provider.into(),
        model: model.into(),
        base_url: String::new(),
    }
}

fn cooldown(key: &EntryKey, until_ms: i64, reason: &str) -> Cooldown {
    Cooldown {
        entry: key.clone(),
        since_ms: until_ms - 1_000,
        until_ms,
        reason: reason.into(),
    }
}

fn slot(key: &str, now_ms: i64, input_tokens: u64, rpm: Option<u64>) -> SlotRequest {
    SlotRequest {
        key: key.into(),
        now_ms,
        input_tokens,
        limits: RateLimits {
            requests_per_minute: rpm,
            input_tokens_per_minute: None,
        },
    }
}

pub(crate) async fn cooldowns_keep_the_later_end_and_every_connection_sees_them(
    fixture: &dyn StoreFixture,
) {
    let a = fixture.open();
    let b = fixture.open();
    let sonnet = entry("anthropic", "claude-sonnet-5");
    let mut local = entry("openai", "my-model");
    local.base_url = "http://127.0.0.1:8089/v1".into();
    a.set_cooldown(&cooldown(&sonnet, 50_000, "rate_limited"))
        .await
        .unwrap();
    // An earlier end does not shorten it; a later one extends it with its reason.
    b.set_cooldown(&cooldown(&sonnet, 40_000, "overloaded"))
        .await
        .unwrap();
    assert_eq!(b.cooldowns(10_000).await.unwrap()[0].until_ms, 50_000);
    b.set_cooldown(&cooldown(&sonnet, 70_000, "quota"))
        .await
        .unwrap();
    a.set_cooldown(&cooldown(&local, 30_000, "server"))
        .await
        .unwrap();
    let got = a.cooldowns(10_000).await.unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].entry, local, "soonest end first");
    assert_eq!(got[1].until_ms, 70_000);
    assert_eq!(got[1].reason, "quota");
    // The same model at the default endpoint is another entry.
    assert!(!got.iter().any(|c| c.entry == entry("openai", "my-model")));
    // Ended cooldowns are not listed.
    assert_eq!(a.cooldowns(30_000).await.unwrap().len(), 1);
    a.clear_cooldown(&sonnet).await.unwrap();
    assert!(b.cooldowns(30_000).await.unwrap().is_empty());
    // Clearing what is not there is no error.
    a.clear_cooldown(&sonnet).await.unwrap();
}

pub(crate) async fn spend_is_summed_over_tasks_by_time(fixture: &dyn StoreFixture) {
    let store = fixture.open();
    let t1 = store.create_task(&new_task("one")).await.unwrap();
    let t2 = store.create_task(&new_task("two")).await.unwrap();
    let usage = |cost_usd| TaskUsage {
        tokens_in: 10,
        cost_usd,
        ..TaskUsage::default()
    };
    let before = now_ms();
    store.add_usage(&t1.id, &usage(0.25)).await.unwrap();
    store.add_usage(&t2.id, &usage(0.5)).await.unwrap();
    store
        .add_usage(
            &t2.id,
            &TaskUsage {
                unpriced_requests: 1,
                ..usage(0.0)
            },
        )
        .await
        .unwrap();
    let after = now_ms() + 1;
    let other = fixture.open();
    assert!((other.spend_between(before, after).await.unwrap() - 0.75).abs() < 1e-12);
    assert_eq!(
        other.spend_between(after, after + 1_000).await.unwrap(),
        0.0
    );
    assert_eq!(other.spend_between(0, before).await.unwrap(), 0.0);
    // A usage report for an unknown task records no spend either.
    assert!(matches!(
        store.add_usage("nope", &usage(9.0)).await,
        Err(StoreError::TaskNotFound { .. })
    ));
    assert!((other.spend_between(before, i64::MAX).await.unwrap() - 0.75).abs() < 1e-12);
}

pub(crate) async fn rate_slots_are_taken_atomically_by_concurrent_connections(
    fixture: &dyn StoreFixture,
) {
    let now = 1_000_000;
    let mut handles = Vec::new();
    for _ in 0..6 {
        let store = fixture.open();
        handles.push(tokio::spawn(async move {
            store
                .acquire_rate_slot(&slot("anthropic#k1", now, 10, Some(2)))
                .await
                .unwrap()
        }));
    }
    let mut granted = 0;
    for h in handles {
        match h.await.unwrap() {
            SlotGrant::Granted => granted += 1,
            SlotGrant::Wait { until_ms, reason } => {
                assert_eq!(until_ms, now + RATE_WINDOW_MS);
                assert_eq!(reason, LimitReason::RequestsPerMinute);
            }
        }
    }
    assert_eq!(
        granted, 2,
        "requests_per_minute = 2 lets exactly two through"
    );
    let store = fixture.open();
    // Another key has its own window.
    assert_eq!(
        store
            .acquire_rate_slot(&slot("anthropic#k2", now, 10, Some(2)))
            .await
            .unwrap(),
        SlotGrant::Granted
    );
    let states = store.rate_states(now + 1).await.unwrap();
    assert_eq!(states.len(), 2);
    assert_eq!(states[0].key, "anthropic#k1");
    assert_eq!(states[0].requests_in_window, 2);
    assert_eq!(states[0].input_tokens_in_window, 20);
    assert_eq!(states[0].oldest_ms, Some(now));
    // Once the window has passed, the next one goes through.
    assert!(matches!(
        store
            .acquire_rate_slot(&slot("anthropic#k1", now + RATE_WINDOW_MS - 1, 10, Some(2)))
            .await
            .unwrap(),
        SlotGrant::Wait { .. }
    ));
    assert_eq!(
        store
            .acquire_rate_slot(&slot("anthropic#k1", now + RATE_WINDOW_MS, 10, Some(2)))
            .await
            .unwrap(),
        SlotGrant::Granted
    );
}

pub(crate) async fn a_slot_of_a_vanished_process_ages_out_of_the_window(
    fixture: &dyn StoreFixture,
) {
    let now = 5_000_000;
    {
        let gone = fixture.open();
        assert_eq!(
            gone.acquire_rate_slot(&slot("openai#k", now, 1, Some(1)))
                .await
                .unwrap(),
            SlotGrant::Granted
        );
    } // the process holding the slot is gone
    let store = fixture.open();
    assert_eq!(
        store
            .acquire_rate_slot(&slot("openai#k", now + 30_000, 1, Some(1)))
            .await
            .unwrap(),
        SlotGrant::Wait {
            until_ms: now + RATE_WINDOW_MS,
            reason: LimitReason::RequestsPerMinute
        }
    );
    assert_eq!(
        store
            .acquire_rate_slot(&slot("openai#k", now + RATE_WINDOW_MS + 1, 1, Some(1)))
            .await
            .unwrap(),
        SlotGrant::Granted
    );
    assert_eq!(
        store
            .rate_states(now + 2 * RATE_WINDOW_MS + 2)
            .await
            .unwrap(),
        vec![]
    );
}

pub(crate) async fn learnt_limits_are_kept_per_key_and_make_requests_wait(store: &dyn TaskStore) {
    let now = 9_000_000;
    let learnt = LearntLimits {
        observed_ms: now,
        requests_remaining: Some(1),
        requests_reset_ms: Some(now + 6_000),
        tokens_remaining: Some(5_000),
        tokens_reset_ms: Some(now + 2_000),
    };
    store
        .record_learnt_limits("openai#k", &learnt)
        .await
        .unwrap();
    let states = store.rate_states(now).await.unwrap();
    assert_eq!(states.len(), 1);
    assert_eq!(states[0].learnt, Some(learnt));
    assert_eq!(states[0].requests_in_window, 0);
    // No configured limit: the provider's word decides. One request left, then wait.
    assert_eq!(
        store
            .acquire_rate_slot(&slot("openai#k", now + 1, 100, None))
            .await
            .unwrap(),
        SlotGrant::Granted
    );
    assert_eq!(
        store
            .acquire_rate_slot(&slot("openai#k", now + 2, 100, None))
            .await
            .unwrap(),
        SlotGrant::Wait {
            until_ms: now + 6_000,
            reason: LimitReason::LearntRequests
        }
    );
    // A newer response replaces what the last one said.
    let newer = LearntLimits {
        observed_ms: now + 3,
        requests_remaining: Some(10),
        requests_reset_ms: Some(now + 6_000),
        tokens_remaining: None,
        tokens_reset_ms: None,
    };
    store
        .record_learnt_limits("openai#k", &newer)
        .await
        .unwrap();
    assert_eq!(
        store
            .acquire_rate_slot(&slot("openai#k", now + 4, 100, None))
            .await
            .unwrap(),
        SlotGrant::Granted
    );
    assert_eq!(
        store.rate_states(now + 4).await.unwrap()[0].learnt,
        Some(newer)
    );
}
