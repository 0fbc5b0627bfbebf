//! The suite's tests of leases and of `store check`: budget leases raced for by
//! three handles never add up past the budget, an expired lease gives its amount back, slot
//! leases hold a per-minute limit over every sliding minute, and a planted difference between
//! a total and the ledger is found and repaired.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use super::fixture::StoreFixture;
use crate::limits::{RATE_WINDOW_MS, RateLimits, SlotGrant, SlotRequest};
use crate::store::{
    BudgetWindow, LeaseScope, LeaseWant, SlotLease, SlotLeaseRequest, TaskStore, TotalScope,
};

fn want(limit: f64, want: f64, need: f64) -> LeaseWant {
    LeaseWant {
        scope: LeaseScope::Key,
        id: "key_lease".into(),
        limit,
        window: BudgetWindow::Day,
        want,
        need,
    }
}

/// Three handles, twelve callers each asking for 0.3 of a $1 budget (0.1 at least): what is
/// granted never adds up past $1, nothing free is ever negative, and an expired lease's amount
/// is free again.
pub(crate) async fn leases_raced_for_by_three_handles_never_pass_the_budget(
    fixture: &dyn StoreFixture,
) {
    let stores: Vec<Arc<dyn TaskStore>> = (0..3).map(|_| fixture.open()).collect();
    let now = 5 * 86_400_000 + 1_000;
    let mut calls = Vec::new();
    for i in 0..12 {
        let store = Arc::clone(&stores[i % 3]);
        calls.push(tokio::spawn(async move {
            let holder = format!("holder{i}");
            let g = store
                .lease(&holder, now, now + 60_000, &[want(1.0, 0.3, 0.1)])
                .await;
            g.unwrap()[0]
        }));
    }
    let mut total = 0.0;
    for c in calls {
        let g = c.await.unwrap();
        assert!(g.free >= 0.0 && g.amount >= 0.0, "{g:?}");
        total += g.amount;
    }
    assert!(total <= 1.0 + 1e-9, "granted {total} of a $1 budget");
    assert!(
        total >= 0.9 - 1e-9,
        "the last cents are granted too: {total}"
    );
    // A new holder finds nothing free until the leases expire, then all of it.
    let all = [want(1.0, 1.0, 0.1)];
    let late = stores[0]
        .lease("late", now + 1, now + 60_000, &all)
        .await
        .unwrap()[0];
    assert!(late.amount < 1e-9 && !late.full, "{late:?}");
    let after = stores[1]
        .lease("later", now + 60_001, now + 120_000, &all)
        .await
        .unwrap()[0];
    assert!(
        after.full && (after.amount - 1.0).abs() < 1e-12,
        "{after:?}"
    );
    // A want of 0 ends a lease, and a release ends every lease of its holder.
    assert_eq!(
        stores[1]
            .lease("later", now + 60_002, now + 120_000, &[want(1.0, 0.0, 0.0)])
            .await
            .unwrap()[0]
            .amount,
        0.0
    );
    let back = stores[2]
        .lease("x", now + 60_003, now + 120_000, &[want(1.0, 0.4, 0.4)])
        .await
        .unwrap()[0];
    assert!(back.full, "{back:?}");
    assert_eq!(stores[2].release("x").await.unwrap(), 1);
    assert_eq!(stores[2].release("x").await.unwrap(), 0);
}

/// A key's parallel limit shared by leases and holds: a lease of two in-flight requests of a
/// limit of three leaves one hold.
pub(crate) async fn parallel_leases_and_holds_share_a_keys_limit(store: &dyn TaskStore) {
    let now = 1_000_000;
    let parallel = LeaseWant {
        scope: LeaseScope::Parallel,
        id: "key_par".into(),
        limit: 3.0,
        window: BudgetWindow::Total,
        want: 2.0,
        need: 1.0,
    };
    let g = store
        .lease("p", now, now + 60_000, std::slice::from_ref(&parallel))
        .await
        .unwrap()[0];
    assert_eq!((g.amount, g.free, g.resets_ms), (2.0, 1.0, None));
    let key = crate::store::ClientKey {
        id: "key_par".into(),
        prefix: "sk-sy-parpar".into(),
        name: "par".into(),
        team: None,
        models: vec![],
        budget: None,
        rpm: None,
        tpm: None,
        max_parallel: Some(3),
        expires_ms: None,
        admin: false,
        created_ms: 0,
        revoked_ms: None,
        owner: None,
    };
    let hold = |id: &str| crate::store::HoldRequest {
        id: id.into(),
        key: key.clone(),
        team: None,
        user: None,
        amount_usd: 0.0,
        gateway_per_day: None,
        now_ms: now,
        expires_ms: now + 60_000,
        asked: crate::store::Asked::default(),
    };
    assert_eq!(
        store.hold(&hold("a")).await.unwrap(),
        crate::store::HoldOutcome::Held
    );
    let refused = store.hold(&hold("b")).await.unwrap();
    assert!(
        matches!(refused, crate::store::HoldOutcome::Refused { .. }),
        "{refused:?}"
    );
    let more = store
        .lease("q", now, now + 60_000, &[parallel])
        .await
        .unwrap()[0];
    assert_eq!((more.amount, more.full), (0.0, false));
}

/// Three holders lease slots of one key (limit 10 a minute) with slots stamped up to 20 s
/// ahead, use what they got at times up to the stamp and give back the rest, beside a fourth
/// taking single slots; over every sliding minute the uses never pass 10.
pub(crate) async fn slot_leases_hold_the_limit_over_every_sliding_minute(
    fixture: &dyn StoreFixture,
) {
    let clock = Arc::new(AtomicI64::new(10_000_000));
    let limits = RateLimits {
        requests_per_minute: Some(10),
        input_tokens_per_minute: None,
    };
    let mut workers = Vec::new();
    for w in 0..4u64 {
        let (store, clock) = (fixture.open(), Arc::clone(&clock));
        workers.push(tokio::spawn(async move {
            let mut uses = Vec::new();
            let mut seed = 0x9e37_79b9_u64 + w;
            let mut next = move |n: u64| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed % n
            };
            for _ in 0..60 {
                let now = clock.fetch_add(next(4_000) as i64, Ordering::SeqCst);
                if w == 3 {
                    let slot = SlotRequest {
                        key: "k".into(),
                        now_ms: now,
                        input_tokens: 1,
                        limits,
                    };
                    if store.acquire_rate_slot(&slot).await.unwrap() == SlotGrant::Granted {
                        uses.push(now);
                    }
                    continue;
                }
                let until = now + next(20_000) as i64;
                let req = SlotLeaseRequest {
                    key: "k".into(),
                    holder: format!("w{w}"),
                    limits,
                    now_ms: now,
                    requests: 1 + next(4),
                    tokens: 0,
                    valid_until_ms: until,
                };
                let got = store.lease_slots(&req).await.unwrap();
                let mut used = 0;
                while used < got.requests {
                    let t = clock.fetch_add(next(3_000) as i64, Ordering::SeqCst);
                    if t > until {
                        break;
                    }
                    uses.push(t);
                    used += 1;
                }
                let unused = SlotLease {
                    requests: got.requests - used,
                    tokens: 0,
                };
                let back = store
                    .return_slots("k", &format!("w{w}"), unused)
                    .await
                    .unwrap();
                // Less comes back when another writer's pruning took the row first: a row
                // two minutes old counts in no window, so nothing is lost.
                assert!(back.requests <= unused.requests, "{back:?} of {unused:?}");
            }
            uses
        }));
    }
    let mut uses = Vec::new();
    for w in workers {
        uses.extend(w.await.unwrap());
    }
    uses.sort_unstable();
    assert!(uses.len() > 30, "the holders used slots: {}", uses.len());
    for (i, &t) in uses.iter().enumerate() {
        let in_minute = uses[i..]
            .iter()
            .take_while(|&&u| u < t + RATE_WINDOW_MS)
            .count();
        assert!(
            in_minute <= 10,
            "{in_minute} uses in the minute from {t}: {uses:?}"
        );
    }
}

/// `store check` finds a total planted with SQL that disagrees with the ledger, and a repair
/// rewrites it to the ledger's amount.
pub(crate) async fn store_check_finds_a_planted_difference_and_repairs_it(
    fixture: &dyn StoreFixture,
) {
    let store = fixture.open();
    let task = store
        .create_task(&super::fixture::new_task("spend"))
        .await
        .unwrap();
    let usage = crate::store::TaskUsage {
        cost_usd: 0.25,
        ..Default::default()
    };
    store.add_usage(&task.id, &usage).await.unwrap();
    let clean = store.check_totals(false).await.unwrap();
    assert!(
        clean.differences.is_empty() && clean.checked == 1,
        "{clean:?}"
    );
    fixture.execute("UPDATE budget_totals SET settled_usd = settled_usd + 1.5");
    fixture.execute(
        "INSERT INTO budget_totals (scope, id, span, bucket_ms, settled_usd)
         VALUES ('team', 'ghost', 'total', 0, 2.0)",
    );
    let found = store.check_totals(false).await.unwrap();
    assert_eq!(found.differences.len(), 2, "{found:?}");
    assert!(!found.repaired);
    let day = &found.differences[1];
    assert_eq!(
        (day.key.scope, day.key.window),
        (TotalScope::Gateway, BudgetWindow::Day)
    );
    assert!((day.stored_usd - 1.75).abs() < 1e-9 && (day.recomputed_usd - 0.25).abs() < 1e-9);
    let repaired = store.check_totals(true).await.unwrap();
    assert!(
        repaired.repaired && repaired.differences.len() == 2,
        "{repaired:?}"
    );
    let after = store.check_totals(false).await.unwrap();
    assert!(after.differences.is_empty(), "{after:?}");
    let day = crate::limits::utc_day_start_ms(crate::store::now_ms());
    let spent = store.spend_between(day, day + 86_400_000).await.unwrap();
    assert!((spent - 0.25).abs() < 1e-9, "{spent}");
}

/// A slot row holding tokens counts a request even when its `requests` is 0, as an older
/// version could leave it, and giving slots back keeps one request in a row that keeps tokens.
pub(crate) async fn a_slot_row_holding_tokens_counts_a_request(fixture: &dyn StoreFixture) {
    let store = fixture.open();
    let now = 10_000_000;
    fixture.execute(&format!(
        "INSERT INTO rate_slots (key, ts_ms, input_tokens, requests) VALUES ('old', {now}, 5, 0)"
    ));
    let one = RateLimits {
        requests_per_minute: Some(1),
        input_tokens_per_minute: None,
    };
    let slot = SlotRequest {
        key: "old".into(),
        now_ms: now + 1,
        input_tokens: 0,
        limits: one,
    };
    let grant = store.acquire_rate_slot(&slot).await.unwrap();
    assert!(matches!(grant, SlotGrant::Wait { .. }), "{grant:?}");
    let lease = |key: &str, holder: &str, requests: u64, tokens: u64, limits: RateLimits| {
        SlotLeaseRequest {
            key: key.into(),
            holder: holder.into(),
            limits,
            now_ms: now + 1,
            requests,
            tokens,
            valid_until_ms: now + 1_000,
        }
    };
    let got = store
        .lease_slots(&lease("old", "h", 1, 0, one))
        .await
        .unwrap();
    assert_eq!(got, SlotLease::default());

    let three = RateLimits {
        requests_per_minute: Some(3),
        input_tokens_per_minute: Some(100),
    };
    let got = store
        .lease_slots(&lease("new", "h", 2, 50, three))
        .await
        .unwrap();
    assert_eq!(
        got,
        SlotLease {
            requests: 2,
            tokens: 50
        }
    );
    let unused = SlotLease {
        requests: 2,
        tokens: 20,
    };
    let back = store.return_slots("new", "h", unused).await.unwrap();
    assert_eq!(
        back,
        SlotLease {
            requests: 1,
            tokens: 20
        }
    );
    let rest = store
        .lease_slots(&lease("new", "h2", 3, 0, three))
        .await
        .unwrap();
    assert_eq!(
        rest.requests, 2,
        "the row that keeps 30 tokens counts one request"
    );
}
