//! The request log's writer: batches, a record that fails alone, a stop that waits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use switchyard_core::store::{RequestOutcome, SqliteStore, TaskStore};

fn writes() -> (Writes, Arc<dyn TaskStore>) {
    let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::in_memory().unwrap());
    (Writes::new(store.clone()), store)
}

fn record(id: &str) -> RequestRecord {
    RequestRecord {
        id: id.into(),
        started_ms: 1_000,
        route: "gpt-4.1".into(),
        dialect: "chat_completions".into(),
        stream: false,
        provider: Some("openai".into()),
        model: Some("gpt-4.1".into()),
        input_tokens: 10,
        output_tokens: 2,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost_usd: Some(0.001),
        first_token_ms: Some(5),
        duration_ms: 9,
        outcome: RequestOutcome::Ok,
        key_id: None,
        team: None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_stop_waits_for_the_writes_running_and_no_longer_than_asked() {
    let (writes, _) = writes();
    let runtime = tokio::runtime::Handle::current();
    writes.spawn(&runtime, tokio::time::sleep(Duration::from_secs(2)));
    writes.spawn(&runtime, tokio::time::sleep(Duration::from_secs(5)));
    assert_eq!(writes.running(), 2);
    assert!(
        !writes.settled(Duration::from_secs(3)).await,
        "one write still runs"
    );
    assert_eq!(writes.running(), 1);
    assert!(writes.settled(Duration::from_secs(3)).await);
    assert_eq!(writes.running(), 0);
    assert!(writes.settled(Duration::ZERO).await, "nothing to wait for");
}

#[tokio::test]
async fn records_waiting_are_written_in_batches_of_at_most_the_batch_size() {
    let (writes, store) = writes();
    let runtime = tokio::runtime::Handle::current();
    // Queued before the writer first runs (this test's runtime has one thread): 600 records
    // are three batches, 256 + 256 + 88.
    for i in 0..600 {
        writes.record(&runtime, record(&format!("req_{i:04}")));
    }
    assert_eq!(writes.running(), 600);
    assert!(writes.settled(Duration::from_secs(30)).await);
    assert_eq!(writes.batches(), 3);
    assert_eq!(store.recent_requests(0).await.unwrap().len(), 600);
    let spent = store.spend_between(0, i64::MAX).await.unwrap();
    assert!((spent - 0.6).abs() < 1e-9, "{spent}");
    // Idle, a record is a batch of its own, written at once.
    writes.record(&runtime, record("req_late"));
    assert!(writes.settled(Duration::from_secs(30)).await);
    assert_eq!(writes.batches(), 4);
}

#[tokio::test]
async fn a_record_the_store_refuses_loses_only_itself() {
    let (writes, store) = writes();
    let runtime = tokio::runtime::Handle::current();
    writes.record(&runtime, record("req_a"));
    assert!(writes.settled(Duration::from_secs(30)).await);
    // One batch: a taken id between two new ones.
    for id in ["req_b", "req_a", "req_c"] {
        writes.record(&runtime, record(id));
    }
    assert!(writes.settled(Duration::from_secs(30)).await);
    let mut ids: Vec<String> = (store.recent_requests(0).await.unwrap())
        .into_iter()
        .map(|r| r.id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["req_a", "req_b", "req_c"]);
    let spent = store.spend_between(0, i64::MAX).await.unwrap();
    assert!((spent - 0.003).abs() < 1e-9, "one spend row each: {spent}");
}
