//! The test suite every [`TaskStore`] implementation passes (SPEC R13.1): each test is a
//! function of the store (or of a [`StoreFixture`] when it needs a second handle), and
//! [`task_store_suite!`] turns them into `#[tokio::test]`s for one backend:
//!
//! ```ignore
//! crate::store::suite::task_store_suite!(Some(SqliteFixture::new()));
//! ```
//!
//! `$fixture` gives an `Option`: `None` when the backend is not available here (after
//! `switchyard_testkit::skip_or_fail`, which fails in CI), and the test returns at once.
//!
//! A backend-specific test (a damaged file, a read-only file, a schema migration) stays beside
//! its backend.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::json;
use switchyard_api::{ContentBlock, Message};

use super::{NewTask, StoreError, TaskRecord, TaskStore, TaskUsage, import_reference_dir};
use crate::limits::{
    Cooldown, EntryKey, LearntLimits, LimitReason, RATE_WINDOW_MS, RateLimits, SlotGrant,
    SlotRequest,
};

/// One test's store: every [`StoreFixture::open`] is a new handle (its own connection) on the
/// same, initially empty, storage.
pub(crate) trait StoreFixture: Send + Sync {
    fn open(&self) -> Arc<dyn TaskStore>;
}

/// One `#[tokio::test]` per suite test, each on a fresh store from `$fixture` (an expression
/// giving an `Option` of a [`StoreFixture`]; `None` skips).
macro_rules! task_store_suite {
    ($fixture:expr) => {
        $crate::store::suite::task_store_suite!(@store $fixture;
            appending_at_a_taken_index_is_a_conflict_and_unknown_tasks_are_named,
            task_ids_are_unique_within_one_millisecond,
            a_task_created_with_its_first_message_holds_it,
            events_are_numbered_found_by_kind_and_deleted,
            a_resumed_task_records_its_model_and_its_merged_prompt,
            importing_a_taken_id_is_a_conflict_and_leaves_nothing_behind,
            a_reference_task_directory_is_imported,
            a_directory_without_a_history_is_a_clear_error,
            learnt_limits_are_kept_per_key_and_make_requests_wait);
        $crate::store::suite::task_store_suite!(@fixture $fixture;
            a_task_round_trips_messages_events_usage_and_range,
            two_connections_write_the_same_store_without_losing_rows,
            cooldowns_keep_the_later_end_and_every_connection_sees_them,
            spend_is_summed_over_tasks_by_time,
            rate_slots_are_taken_atomically_by_concurrent_connections,
            a_slot_of_a_vanished_process_ages_out_of_the_window);
    };
    (@store $fixture:expr; $($name:ident),*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let Some(fixture) = $fixture else { return };
            let store = $crate::store::suite::StoreFixture::open(&fixture);
            $crate::store::suite::$name(&*store).await;
        }
    )*};
    (@fixture $fixture:expr; $($name:ident),*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let Some(fixture) = $fixture else { return };
            $crate::store::suite::$name(&fixture).await;
        }
    )*};
}
pub(crate) use task_store_suite;

fn new_task(prompt: &str) -> NewTask {
    NewTask {
        cwd: "/work".into(),
        mode: "act".into(),
        provider: "anthropic".into(),
        model: "claude".into(),
        first_prompt: prompt.into(),
    }
}

pub(crate) async fn a_task_round_trips_messages_events_usage_and_range(fixture: &dyn StoreFixture) {
    let store = fixture.open();
    let task = store.create_task(&new_task("hello")).await.unwrap();
    store
        .append_message(&task.id, 0, &Message::user_text("hello"))
        .await
        .unwrap();
    store
        .append_message(&task.id, 1, &Message::assistant_text("hi"))
        .await
        .unwrap();
    store
        .append_event(
            &task.id,
            "text",
            &json!({"type": "text", "text": "hi"}),
            false,
        )
        .await
        .unwrap();
    store
        .add_usage(
            &task.id,
            &TaskUsage {
                tokens_in: 10,
                tokens_out: 5,
                cache_writes: 1,
                cache_reads: 2,
                cost_usd: 0.5,
                unpriced_requests: 0,
            },
        )
        .await
        .unwrap();
    store
        .set_deleted_range(&task.id, Some((2, 3)), &json!({"range": [2, 3]}))
        .await
        .unwrap();
    drop(store);

    let store = fixture.open();
    let got = store.task(&task.id).await.unwrap();
    assert_eq!(got.first_prompt, "hello");
    assert_eq!(got.message_count, 2);
    assert_eq!(got.usage.tokens_in, 10);
    assert_eq!(got.usage.cost_usd, 0.5);
    assert_eq!(got.usage.cost(), Some(0.5));
    assert_eq!(got.last_request_tokens, 18);
    assert_eq!(got.conversation_history_deleted_range, Some((2, 3)));
    assert_eq!(
        store.messages(&task.id).await.unwrap(),
        vec![Message::user_text("hello"), Message::assistant_text("hi")]
    );
    let events = store.events(&task.id).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "text");
    let edits = store.context_edits(&task.id).await.unwrap();
    assert_eq!(edits[0].kind, "truncation");
    assert_eq!(store.list_tasks().await.unwrap().len(), 1);
    // A request whose cost is unknown makes the task's cost unknown, and keeps the known part.
    let unpriced = TaskUsage {
        tokens_in: 1,
        unpriced_requests: 1,
        ..TaskUsage::default()
    };
    store.add_usage(&task.id, &unpriced).await.unwrap();
    let got = store.task(&task.id).await.unwrap();
    assert_eq!((got.usage.cost_usd, got.usage.unpriced_requests), (0.5, 1));
    assert_eq!(got.usage.cost(), None);
}

pub(crate) async fn appending_at_a_taken_index_is_a_conflict_and_unknown_tasks_are_named(
    store: &dyn TaskStore,
) {
    let task = store.create_task(&new_task("x")).await.unwrap();
    store
        .append_message(&task.id, 0, &Message::user_text("a"))
        .await
        .unwrap();
    let err = store
        .append_message(&task.id, 0, &Message::user_text("b"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    let err = store
        .append_message("nope", 0, &Message::user_text("b"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::TaskNotFound { .. }), "{err}");
    assert!(err.to_string().contains("switchyard tasks"));
    assert!(matches!(
        store.task("nope").await,
        Err(StoreError::TaskNotFound { .. })
    ));
}

pub(crate) async fn task_ids_are_unique_within_one_millisecond(store: &dyn TaskStore) {
    let mut ids = HashSet::new();
    for _ in 0..20 {
        ids.insert(store.create_task(&new_task("x")).await.unwrap().id);
    }
    assert_eq!(ids.len(), 20);
}

/// `create_task_with_message`: the task and its message 0 together, ids unique as ever, and
/// the next append goes at index 1.
pub(crate) async fn a_task_created_with_its_first_message_holds_it(store: &dyn TaskStore) {
    let first = Message::user_text("first");
    let a = store
        .create_task_with_message(&new_task("first"), &first)
        .await
        .unwrap();
    let b = store
        .create_task_with_message(&new_task("first"), &first)
        .await
        .unwrap();
    assert_ne!(a.id, b.id);
    assert_eq!(a.message_count, 1);
    assert_eq!(a.first_prompt, "first");
    assert_eq!(store.messages(&a.id).await.unwrap(), vec![first.clone()]);
    let err = store
        .append_message(&a.id, 0, &Message::user_text("again"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    store
        .append_message(&a.id, 1, &Message::user_text("next"))
        .await
        .unwrap();
    assert_eq!(store.task(&a.id).await.unwrap().message_count, 2);
    assert_eq!(store.list_tasks().await.unwrap().len(), 2);
}

/// Events get increasing `seq`s; the last of a kind is found; one can be deleted (R10.3); the
/// largest `request_index` of `api_req_started` events numbers a resumed task's requests.
pub(crate) async fn events_are_numbered_found_by_kind_and_deleted(store: &dyn TaskStore) {
    let task = store.create_task(&new_task("x")).await.unwrap();
    let id = task.id.as_str();
    assert_eq!(store.max_request_index(id).await.unwrap(), 0);
    assert_eq!(
        store
            .last_event_of_kind(id, "api_req_started")
            .await
            .unwrap(),
        None
    );
    let mut seqs = Vec::new();
    for event in [
        json!({"type": "api_req_started", "request_index": 1}),
        json!({"type": "text", "text": "a"}),
        json!({"type": "api_req_started", "request_index": 2}),
        json!({"type": "text", "text": "b"}),
    ] {
        let kind = event["type"].as_str().unwrap().to_owned();
        seqs.push(
            store
                .append_event(id, &kind, &event, kind != "text")
                .await
                .unwrap(),
        );
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(store.max_request_index(id).await.unwrap(), 2);
    assert_eq!(
        store
            .last_event_of_kind(id, "api_req_started")
            .await
            .unwrap(),
        Some(seqs[2])
    );
    let tail = store.events_from(id, seqs[2]).await.unwrap();
    assert_eq!(
        tail.iter().map(|e| e.event.clone()).collect::<Vec<_>>(),
        vec![
            json!({"type": "api_req_started", "request_index": 2}),
            json!({"type": "text", "text": "b"})
        ]
    );
    store.delete_event(id, seqs[2]).await.unwrap();
    let kinds: Vec<String> = store
        .events(id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, ["api_req_started", "text", "text"]);
    assert_eq!(store.max_request_index(id).await.unwrap(), 1);
    let err = store
        .append_event("nope", "text", &json!({"type": "text"}), true)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::TaskNotFound { .. }), "{err}");
}

/// A resume with other choices records them; a prompt joins an unanswered user message in
/// place; an unknown task has no history.
pub(crate) async fn a_resumed_task_records_its_model_and_its_merged_prompt(store: &dyn TaskStore) {
    let task = store.create_task(&new_task("x")).await.unwrap();
    let id = task.id.as_str();
    store
        .set_task_model(id, "plan", "openai", "m2")
        .await
        .unwrap();
    let got = store.task(id).await.unwrap();
    assert_eq!(
        (got.mode.as_str(), got.provider.as_str(), got.model.as_str()),
        ("plan", "openai", "m2")
    );
    store
        .append_message(id, 0, &Message::user_text("a"))
        .await
        .unwrap();
    let mut merged = Message::user_text("a");
    merged.content.push(ContentBlock::Text { text: "b".into() });
    store.replace_message(id, 0, &merged).await.unwrap();
    assert_eq!(
        store.messages_of_task(id).await.unwrap(),
        vec![merged.clone()]
    );
    let err = store.replace_message(id, 5, &merged).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    let err = store.messages_of_task("nope").await.unwrap_err();
    assert!(matches!(err, StoreError::TaskNotFound { .. }), "{err}");
    let err = store
        .set_task_model("nope", "act", "openai", "m")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::TaskNotFound { .. }), "{err}");
}

/// A whole task stored at once keeps its totals, range and rows; a second one with the same id
/// is refused and adds nothing.
pub(crate) async fn importing_a_taken_id_is_a_conflict_and_leaves_nothing_behind(
    store: &dyn TaskStore,
) {
    let record = TaskRecord {
        id: "1733000000000".into(),
        created_ms: 1_733_000_000_000,
        updated_ms: 1_733_000_000_005,
        cwd: String::new(),
        mode: "act".into(),
        provider: "anthropic".into(),
        model: "m".into(),
        first_prompt: "p".into(),
        usage: TaskUsage {
            tokens_in: 3,
            tokens_out: 4,
            cache_writes: 0,
            cache_reads: 0,
            cost_usd: 0.25,
            unpriced_requests: 1,
        },
        last_request_tokens: 7,
        conversation_history_deleted_range: Some((2, 3)),
        message_count: 2,
    };
    let messages = [Message::user_text("p"), Message::assistant_text("a")];
    let events = [(
        1_733_000_000_001,
        "text".to_owned(),
        json!({"type": "text"}),
    )];
    let edits = [("truncation".to_owned(), json!({"range": [2, 3]}))];
    let got = store
        .import_task(&record, &messages, &events, &edits)
        .await
        .unwrap();
    assert_eq!(got, record);
    assert_eq!(
        store.events(&record.id).await.unwrap()[0].ts_ms,
        1_733_000_000_001
    );
    let err = store
        .import_task(&record, &messages, &events, &edits)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    assert_eq!(store.list_tasks().await.unwrap().len(), 1);
    assert_eq!(store.messages(&record.id).await.unwrap().len(), 2);
    assert_eq!(store.events(&record.id).await.unwrap().len(), 1);
    assert_eq!(store.context_edits(&record.id).await.unwrap().len(), 1);
}

pub(crate) async fn two_connections_write_the_same_store_without_losing_rows(
    fixture: &dyn StoreFixture,
) {
    let writers: Vec<_> = [fixture.open(), fixture.open()]
        .into_iter()
        .map(|store| {
            tokio::spawn(async move {
                let task = store.create_task(&new_task("p")).await.unwrap();
                for i in 0..50 {
                    store
                        .append_message(&task.id, i, &Message::user_text(format!("m{i}")))
                        .await
                        .unwrap();
                    store
                        .append_event(
                            &task.id,
                            "text",
                            &json!({"type": "text", "text": i}),
                            i % 2 == 0,
                        )
                        .await
                        .unwrap();
                }
                task.id
            })
        })
        .collect();
    let store = fixture.open();
    for writer in writers {
        let id = writer.await.unwrap();
        assert_eq!(store.messages(&id).await.unwrap().len(), 50);
        assert_eq!(store.events(&id).await.unwrap().len(), 50);
    }
}

pub(crate) async fn a_reference_task_directory_is_imported(store: &dyn TaskStore) {
    let src = tempfile::tempdir().unwrap();
    let dir = src.path().join("1733000000000");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("api_conversation_history.json"),
        r#"[{"role":"user","content":[{"type":"text","text":"<task>\nfix it\n</task>"}],"ts":1},
            {"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"t1","name":"read_file","input":{"path":"a.rs"}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"fn main() {}"}]},{"type":"document","source":{}}]},
            {"role":"assistant","content":"Done."}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("ui_messages.json"),
        r#"[{"ts":1733000000000,"type":"say","say":"task","text":"fix it"},
            {"ts":1733000000001,"type":"say","say":"api_req_started","text":"{\"request\":\"x\",\"tokensIn\":100,\"tokensOut\":20,\"cacheWrites\":5,\"cacheReads\":7,\"cost\":0.01}","conversationHistoryDeletedRange":[2,3]},
            {"ts":1733000000002,"type":"say","say":"text","text":"Reading."},
            {"ts":1733000000003,"type":"say","say":"api_req_started","text":"{\"request\":\"y\"}"}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("context_history.json"),
        r#"[[2,[0,[[0,[[1733000000001,"text",["[NOTE] removed"],[]]]]]]]]"#,
    )
    .unwrap();
    let task = import_reference_dir(store, &dir).await.unwrap();
    assert_eq!(task.id, "1733000000000");
    assert_eq!(task.first_prompt, "fix it");
    assert_eq!(task.message_count, 4);
    assert_eq!(task.usage.tokens_in, 100);
    assert_eq!(task.usage.cache_reads, 7);
    assert!((task.usage.cost_usd - 0.01).abs() < 1e-12);
    assert_eq!(task.conversation_history_deleted_range, Some((2, 3)));
    let messages = store.messages(&task.id).await.unwrap();
    assert_eq!(
        messages[2].content,
        vec![
            ContentBlock::ToolResult {
                tool_use_id: "t1".into(),
                content: "fn main() {}".into(),
                is_error: false
            },
            ContentBlock::Text {
                text: "[document block omitted on import]".into()
            }
        ]
    );
    assert_eq!(messages[3], Message::assistant_text("Done."));
    // The trailing api_req_started without cost or cancel reason was dropped (R10.3).
    let events = store.events(&task.id).await.unwrap();
    assert_eq!(events.len(), 3);
    assert_eq!(events[1].kind, "reference_say_api_req_started");
    assert_eq!(store.context_edits(&task.id).await.unwrap().len(), 1);
    // A second import of the same directory gets a new id.
    let again = import_reference_dir(store, &dir).await.unwrap();
    assert_ne!(again.id, task.id);
}

pub(crate) async fn a_directory_without_a_history_is_a_clear_error(store: &dyn TaskStore) {
    let src = tempfile::tempdir().unwrap();
    let err = import_reference_dir(store, src.path()).await.unwrap_err();
    assert!(
        err.to_string().contains("api_conversation_history.json"),
        "{err}"
    );
    std::fs::write(src.path().join("api_conversation_history.json"), "{}").unwrap();
    let err = import_reference_dir(store, src.path()).await.unwrap_err();
    assert!(err.to_string().contains("array"), "{err}");
    assert!(store.list_tasks().await.unwrap().is_empty());
}

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
    let before = super::now_ms();
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
    let after = super::now_ms() + 1;
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
