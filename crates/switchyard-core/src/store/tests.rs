#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use switchyard_api::Message;

use super::*;

fn new_task(prompt: &str) -> NewTask {
    NewTask {
        cwd: "/work".into(),
        mode: "act".into(),
        provider: "anthropic".into(),
        model: "claude".into(),
        first_prompt: prompt.into(),
    }
}

#[test]
fn a_task_round_trips_messages_events_usage_and_range() {
    let dir = tempfile::tempdir().unwrap();
    let store = TaskStore::open(dir.path()).unwrap();
    let task = store.create_task(&new_task("hello")).unwrap();
    store
        .append_message(&task.id, 0, &Message::user_text("hello"))
        .unwrap();
    store
        .append_message(&task.id, 1, &Message::assistant_text("hi"))
        .unwrap();
    store
        .append_event(
            &task.id,
            "text",
            &json!({"type": "text", "text": "hi"}),
            false,
        )
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
            },
        )
        .unwrap();
    store
        .set_deleted_range(&task.id, Some((2, 3)), &json!({"range": [2, 3]}))
        .unwrap();
    drop(store);

    let store = TaskStore::open(dir.path()).unwrap();
    let got = store.task(&task.id).unwrap();
    assert_eq!(got.first_prompt, "hello");
    assert_eq!(got.message_count, 2);
    assert_eq!(got.usage.tokens_in, 10);
    assert_eq!(got.usage.cost_usd, 0.5);
    assert_eq!(got.last_request_tokens, 18);
    assert_eq!(got.conversation_history_deleted_range, Some((2, 3)));
    assert_eq!(
        store.messages(&task.id).unwrap(),
        vec![Message::user_text("hello"), Message::assistant_text("hi")]
    );
    let events = store.events(&task.id).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, "text");
    let edits = store.context_edits(&task.id).unwrap();
    assert_eq!(edits[0].kind, "truncation");
    assert_eq!(store.list_tasks().unwrap().len(), 1);
}

#[test]
fn appending_at_a_taken_index_is_a_conflict_and_unknown_tasks_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = TaskStore::open(dir.path()).unwrap();
    let task = store.create_task(&new_task("x")).unwrap();
    store
        .append_message(&task.id, 0, &Message::user_text("a"))
        .unwrap();
    let err = store
        .append_message(&task.id, 0, &Message::user_text("b"))
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    let err = store
        .append_message("nope", 0, &Message::user_text("b"))
        .unwrap_err();
    assert!(matches!(err, StoreError::TaskNotFound { .. }), "{err}");
    assert!(err.to_string().contains("switchyard tasks"));
    assert!(matches!(
        store.task("nope"),
        Err(StoreError::TaskNotFound { .. })
    ));
}

#[test]
fn task_ids_are_unique_within_one_millisecond() {
    let dir = tempfile::tempdir().unwrap();
    let store = TaskStore::open(dir.path()).unwrap();
    let ids: std::collections::HashSet<String> = (0..20)
        .map(|_| store.create_task(&new_task("x")).unwrap().id)
        .collect();
    assert_eq!(ids.len(), 20);
}

#[test]
fn a_file_that_is_not_a_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, &garbage).unwrap();
    let err = TaskStore::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("left untouched"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), garbage);
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = TaskStore::open(dir.path()).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NewerSchema {
                found: 99,
                supported: SCHEMA_VERSION,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade Switchyard"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_read_only_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    drop(TaskStore::open(dir.path()).unwrap());
    let path = dir.path().join(DB_FILE);
    let before = std::fs::read(&path).unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&path, perms).unwrap();
    let err = TaskStore::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
    assert!(err.to_string().contains("--data-dir"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn an_older_schema_is_migrated_forward() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    // An empty database at version 0 (e.g. created by an interrupted first run).
    drop(rusqlite::Connection::open(&path).unwrap());
    let store = TaskStore::open(dir.path()).unwrap();
    let version: i64 = store
        .conn()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = store
        .conn()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let fk: i64 = store
        .conn()
        .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
        .unwrap();
    assert_eq!(fk, 1);
    // Opening again is a no-op.
    drop(store);
    TaskStore::open(dir.path()).unwrap();
}

#[test]
fn two_connections_write_the_same_file_without_losing_rows() {
    let dir = tempfile::tempdir().unwrap();
    let a = std::sync::Arc::new(TaskStore::open(dir.path()).unwrap());
    let b = std::sync::Arc::new(TaskStore::open(dir.path()).unwrap());
    let handles: Vec<_> = [a, b]
        .into_iter()
        .map(|store| {
            std::thread::spawn(move || {
                let task = store.create_task(&new_task("p")).unwrap();
                for i in 0..50 {
                    store
                        .append_message(&task.id, i, &Message::user_text(format!("m{i}")))
                        .unwrap();
                    store
                        .append_event(
                            &task.id,
                            "text",
                            &json!({"type": "text", "text": i}),
                            i % 2 == 0,
                        )
                        .unwrap();
                }
                task.id
            })
        })
        .collect();
    let ids: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let store = TaskStore::open(dir.path()).unwrap();
    for id in ids {
        assert_eq!(store.messages(&id).unwrap().len(), 50);
        assert_eq!(store.events(&id).unwrap().len(), 50);
    }
}
