//! The suite's tests of tasks, their messages, events, usage and range (SPEC R10.1, R10.2,
//! R8.4): one store, or two connections on it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use serde_json::json;
use switchyard_api::{ContentBlock, Message};

use super::fixture::{StoreFixture, new_task};
use crate::store::{StoreError, TaskStore, TaskUsage};

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
