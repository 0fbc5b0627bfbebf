//! The request log summed over a range per hour or day (SPEC R14.8, R14.11), as every backend
//! runs it: the dashboard's spend page reads these rows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::store::{RequestOutcome, RequestRecord, TaskStore, UsageBucket, UsageBy, UsageQuery};

fn record(id: &str, started_ms: i64, key: Option<&str>, cost: Option<f64>) -> RequestRecord {
    RequestRecord {
        id: id.into(),
        started_ms,
        route: "sonnet".into(),
        dialect: "chat_completions".into(),
        stream: false,
        provider: Some("anthropic".into()),
        model: Some("claude-sonnet-4-5".into()),
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: 1,
        cache_write_tokens: 2,
        cost_usd: cost,
        first_token_ms: Some(10),
        duration_ms: 20,
        outcome: RequestOutcome::Ok,
        key_id: key.map(str::to_owned),
        team: None,
    }
}

pub(crate) async fn usage_is_summed_per_bucket_and_group_within_a_range(store: &dyn TaskStore) {
    const H: i64 = 3_600_000;
    let day = 20_000 * 86_400_000;
    let rows = [
        record("r1", day + 10, Some("key_a"), Some(0.25)),
        record("r2", day + H + 5, Some("key_a"), Some(0.5)),
        record("r3", day + H + 9, Some("key_b"), None),
        record("r4", day + H + 20, Some("key_a"), Some(0.125)),
        record("r5", day + 86_400_000 + 1, Some("key_a"), Some(1.0)),
        record("r6", day - 1, Some("key_a"), Some(8.0)),
    ];
    for r in &rows {
        store.record_request(r).await.unwrap();
    }
    let q = UsageQuery {
        by: UsageBy::Key,
        bucket: Some(UsageBucket::Hour),
        from_ms: day,
        to_ms: day + 86_400_000,
    };
    let hourly = store.usage_between(&q).await.unwrap();
    let seen: Vec<_> = (hourly.iter())
        .map(|s| {
            (
                s.bucket_ms,
                s.row.group.as_deref(),
                s.row.requests,
                s.row.cost_usd,
                s.row.unpriced,
                s.last_ms,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (Some(day), Some("key_a"), 1, 0.25, 0, day + 10),
            (Some(day + H), Some("key_a"), 2, 0.625, 0, day + H + 20),
            (Some(day + H), Some("key_b"), 1, 0.0, 1, day + H + 9),
        ]
    );
    assert_eq!(hourly[1].row.input_tokens, 20);
    assert_eq!(hourly[1].row.cache_write_tokens, 4);
    // Totals over the range (no buckets), and per day over two days.
    let totals = store
        .usage_between(&UsageQuery { bucket: None, ..q })
        .await
        .unwrap();
    assert_eq!(totals.len(), 2);
    assert_eq!((totals[0].bucket_ms, totals[0].row.requests), (None, 3));
    assert!((totals[0].row.cost_usd - 0.875).abs() < 1e-12);
    let daily = UsageQuery {
        bucket: Some(UsageBucket::Day),
        to_ms: day + 2 * 86_400_000,
        ..q
    };
    let daily = store.usage_between(&daily).await.unwrap();
    let days: Vec<_> = daily
        .iter()
        .map(|s| (s.bucket_ms, s.row.requests))
        .collect();
    assert_eq!(
        days,
        vec![(Some(day), 3), (Some(day), 1), (Some(day + 86_400_000), 1)]
    );
    // `switchyard usage` is the same SQL with no end: the row before the range counts there.
    let all = store.usage(UsageBy::Key, 0).await.unwrap();
    assert_eq!(all[0].requests, 5);
}
