//! The suite's tests of the gateway's stored Responses (SPEC R14.1): every backend reads a
//! stored answer back exactly on every connection, refuses a second row under one id, finds
//! nothing once it expired, and deletes expired rows when the next is stored.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use switchyard_api::{ContentBlock, Message, Role};

use super::fixture::StoreFixture;
use crate::store::{RESPONSE_TTL_MS, StoreError, StoredResponse};

fn stored(id: &str, created_ms: i64) -> StoredResponse {
    StoredResponse {
        id: id.into(),
        created_ms,
        expires_ms: created_ms + RESPONSE_TTL_MS,
        route: "claude-*".into(),
        system_prompt: "Be brief.".into(),
        messages: vec![Message::user_text("create hello.txt")],
        answer: Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "A file, then.".into(),
                    signature: "sig-1".into(),
                },
                ContentBlock::Text {
                    text: "Writing it.".into(),
                },
                ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "write_file".into(),
                    input: json!({"path": "hello.txt", "content": "hi"}),
                    signature: None,
                },
            ],
        },
    }
}

pub(crate) async fn stored_responses_round_trip_conflict_and_expire(fixture: &dyn StoreFixture) {
    let a = fixture.open();
    let b = fixture.open();
    let first = stored("resp_req_1", 1_000);
    a.store_response(&first).await.unwrap();
    // Every connection reads it back exactly, until it expires.
    assert_eq!(
        b.stored_response("resp_req_1", 2_000).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(b.stored_response("resp_other", 2_000).await.unwrap(), None);
    let expiry = first.expires_ms;
    assert_eq!(b.stored_response("resp_req_1", expiry).await.unwrap(), None);
    // One id is stored once.
    let again = StoredResponse {
        route: "other".into(),
        ..stored("resp_req_1", 3_000)
    };
    assert!(matches!(
        b.store_response(&again).await,
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(
        a.stored_response("resp_req_1", 4_000).await.unwrap(),
        Some(first.clone())
    );
    // Storing one after the first expired deletes the first, so it cannot come back.
    let later = stored("resp_req_2", expiry + 1);
    b.store_response(&later).await.unwrap();
    assert_eq!(a.stored_response("resp_req_1", 0).await.unwrap(), None);
    assert_eq!(
        a.stored_response("resp_req_2", expiry + 2).await.unwrap(),
        Some(later)
    );
}
