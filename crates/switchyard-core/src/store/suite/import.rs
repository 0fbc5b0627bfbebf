//! The suite's tests of whole tasks stored at once and of reference task directories imported
//! (SPEC R10.1, R10.3).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use switchyard_api::{ContentBlock, Message};

use crate::store::{StoreError, TaskRecord, TaskStore, TaskUsage, import_reference_dir};

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
