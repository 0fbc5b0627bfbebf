//! The suite's tests of requests lost with their process (SPEC R14.18): a trace or a store
//! hold that expires unsettled is recorded as `lost` and charged its reservation once, a
//! record written in time leaves nothing to charge, and a late record replaces its lost one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::keys::key;
use crate::store::{
    Asked, HoldOutcome, HoldRequest, LeasedRecord, OpenRequest, RequestOutcome, RequestRecord,
    TaskStore, UsageBy, hash_key,
};

const NOW: i64 = 3_000_000;

fn open(id: &str) -> OpenRequest {
    OpenRequest {
        id: id.into(),
        holder: "gw_gone".into(),
        started_ms: NOW,
        route: "claude-*".into(),
        dialect: "messages".into(),
        stream: true,
        key_id: "key_l".into(),
        team: None,
        reserved_usd: 0.25,
    }
}

fn leased(id: &str, cost: f64) -> LeasedRecord {
    let record = RequestRecord {
        id: id.into(),
        started_ms: NOW,
        route: "claude-*".into(),
        dialect: "messages".into(),
        stream: true,
        provider: Some("anthropic".into()),
        model: Some("claude-sonnet-4-5".into()),
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost_usd: Some(cost),
        first_token_ms: None,
        duration_ms: 100,
        outcome: RequestOutcome::Ok,
        key_id: Some("key_l".into()),
        team: None,
    };
    LeasedRecord {
        record,
        reserved_usd: 0.25,
    }
}

/// The key's "used", its `usage` cost and whether the totals equal the ledger.
async fn figures(store: &dyn TaskStore, at: i64) -> (f64, f64, u64) {
    let used = store.used_since(Some("key_l"), None, 0, at).await.unwrap();
    let usage = store.usage(UsageBy::Key, 0).await.unwrap();
    let check = store.check_totals(false).await.unwrap();
    assert!(check.differences.is_empty(), "{check:?}");
    (used, usage[0].cost_usd, usage[0].requests)
}

fn status(rows: &[RequestRecord], id: &str) -> RequestOutcome {
    let row = rows.iter().find(|r| r.id == id).unwrap();
    row.outcome.clone()
}

pub(crate) async fn lost_requests_are_charged_once_at_their_reservations(store: &dyn TaskStore) {
    let k = key("key_l", "sk-sy-llllll", None, Some("10/day"));
    store.create_key(&k, &hash_key("l")).await.unwrap();
    store
        .open_requests(&[open("t1"), open("t2"), open("t3")], NOW + 1_000)
        .await
        .unwrap();
    // t1 ends in time: its record ends its trace.
    store.record_leased(&[leased("t1", 0.1)]).await.unwrap();
    assert_eq!(store.charge_lost(NOW + 999, 10).await.unwrap(), 0);
    assert_eq!(store.renew_open("gw_gone", NOW + 2_000).await.unwrap(), 2);
    assert_eq!(store.charge_lost(NOW + 1_500, 10).await.unwrap(), 0);
    assert_eq!(store.charge_lost(NOW + 2_000, 10).await.unwrap(), 2);
    assert_eq!(store.charge_lost(NOW + 2_000, 10).await.unwrap(), 0);
    let rows = store.recent_requests(0).await.unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(status(&rows, "t2"), RequestOutcome::Lost);
    let t3 = rows.iter().find(|r| r.id == "t3").unwrap();
    assert_eq!((t3.cost_usd, t3.route.as_str()), (None, "claude-*"));
    let (used, usage, requests) = figures(store, NOW + 2_000).await;
    assert!(
        (used - 0.6).abs() < 1e-9,
        "t1's cost and two reservations: {used}"
    );
    assert!(
        (usage - used).abs() < 1e-9,
        "usage {usage} agrees with used {used}"
    );
    assert_eq!(requests, 3);
    // t3's own record arrives after all: it replaces the lost one.
    store.record_leased(&[leased("t3", 0.05)]).await.unwrap();
    let rows = store.recent_requests(0).await.unwrap();
    assert_eq!((rows.len(), status(&rows, "t3")), (3, RequestOutcome::Ok));
    let (used, usage, _) = figures(store, NOW + 2_000).await;
    assert!((used - 0.4).abs() < 1e-9, "{used}");
    assert!((usage - used).abs() < 1e-9, "{usage} vs {used}");
    let spent = store.spend_between(0, i64::MAX).await.unwrap();
    assert!((spent - 0.4).abs() < 1e-9, "{spent}");
    // A recorded request gets no trace.
    store.open_requests(&[open("t1")], NOW).await.unwrap();
    assert_eq!(store.charge_lost(NOW + 10_000, 10).await.unwrap(), 0);
    // A store hold that expires unsettled is lost too, charged its reservation.
    let hold = HoldRequest {
        id: "h1".into(),
        key: k.clone(),
        team: None,
        user: None,
        amount_usd: 0.3,
        gateway_per_day: None,
        now_ms: NOW,
        expires_ms: NOW + 60_000,
        asked: Asked {
            route: "gpt-4.1".into(),
            dialect: "messages".into(),
            stream: true,
        },
    };
    assert_eq!(store.hold(&hold).await.unwrap(), HoldOutcome::Held);
    assert_eq!(store.charge_lost(NOW + 59_999, 10).await.unwrap(), 0);
    assert_eq!(store.charge_lost(NOW + 60_000, 10).await.unwrap(), 1);
    let rows = store.recent_requests(0).await.unwrap();
    assert_eq!(status(&rows, "h1"), RequestOutcome::Lost);
    let h1 = rows.iter().find(|r| r.id == "h1").unwrap();
    assert_eq!(
        (h1.route.as_str(), h1.dialect.as_str(), h1.stream),
        ("gpt-4.1", "messages", true),
        "a lost hold's record names what it asked for"
    );
    let (used, usage, requests) = figures(store, NOW + 60_000).await;
    assert!((used - 0.7).abs() < 1e-9, "{used}");
    assert!((usage - used).abs() < 1e-9, "{usage} vs {used}");
    assert_eq!(requests, 4);
}
