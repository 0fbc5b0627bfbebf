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
            events_are_numbered_found_by_kind_and_deleted,
            a_resumed_task_records_its_model_and_its_merged_prompt,
            importing_a_taken_id_is_a_conflict_and_leaves_nothing_behind,
            a_reference_task_directory_is_imported,
            a_directory_without_a_history_is_a_clear_error);
        $crate::store::suite::task_store_suite!(@fixture $fixture;
            a_task_round_trips_messages_events_usage_and_range,
            two_connections_write_the_same_store_without_losing_rows);
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
