//! The suite's tests of the gateway's request log (SPEC R14.4, R14.9): every backend keeps each
//! relayed request's row as written, lists the newest first, and counts its cost toward the
//! daily spend of R12.2 (R13.2: every connection sees both).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::fixture::StoreFixture;
use crate::store::{RequestOutcome, RequestRecord, StoreError};

fn record(
    id: &str,
    started_ms: i64,
    cost_usd: Option<f64>,
    outcome: RequestOutcome,
) -> RequestRecord {
    RequestRecord {
        id: id.into(),
        started_ms,
        route: "claude-*".into(),
        dialect: "messages".into(),
        stream: true,
        provider: Some("anthropic".into()),
        model: Some("claude-sonnet-4-5".into()),
        input_tokens: 1_200,
        output_tokens: 345,
        cache_read_tokens: 6_000,
        cache_write_tokens: 70,
        cost_usd,
        first_token_ms: Some(412),
        duration_ms: 1_500,
        outcome,
        key_id: None,
        team: None,
    }
}

pub(crate) async fn gateway_requests_are_recorded_listed_newest_first_and_spent(
    fixture: &dyn StoreFixture,
) {
    let a = fixture.open();
    let b = fixture.open();
    let ok = record("req_a1", 10_000, Some(0.0125), RequestOutcome::Ok);
    let cut = record("req_a2", 20_000, Some(0.5), RequestOutcome::Cancelled);
    let failed = RequestRecord {
        provider: None,
        model: None,
        input_tokens: 0,
        output_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        first_token_ms: None,
        stream: false,
        dialect: "chat_completions".into(),
        ..record(
            "req_b1",
            30_000,
            None,
            RequestOutcome::Error("rate_limited".into()),
        )
    };
    a.record_request(&ok).await.unwrap();
    b.record_request(&failed).await.unwrap();
    a.record_request(&cut).await.unwrap();
    // Every connection reads every row back exactly, newest first.
    let all = b.recent_requests(0).await.unwrap();
    assert_eq!(all, vec![failed.clone(), cut.clone(), ok.clone()]);
    assert_eq!(
        a.recent_requests(2).await.unwrap(),
        vec![failed.clone(), cut.clone()]
    );
    // The costs count toward the daily spend, at each request's end.
    let spent = b.spend_between(0, i64::MAX).await.unwrap();
    assert!((spent - 0.5125).abs() < 1e-12, "{spent}");
    assert!((b.spend_between(11_000, 11_501).await.unwrap() - 0.0125).abs() < 1e-12);
    assert_eq!(b.spend_between(0, 11_500).await.unwrap(), 0.0);
    // An id recorded twice is a conflict that writes nothing (no second spend row).
    let again = record("req_a1", 40_000, Some(9.0), RequestOutcome::Ok);
    assert!(matches!(
        b.record_request(&again).await,
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(a.recent_requests(0).await.unwrap().len(), 3);
    assert!((a.spend_between(0, i64::MAX).await.unwrap() - 0.5125).abs() < 1e-12);
}
