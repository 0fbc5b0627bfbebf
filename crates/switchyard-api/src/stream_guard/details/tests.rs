//! A key split across the text of OpenRouter `reasoning_details` objects of two and three
//! chunks: never in any chunk's details, nor in a forwarded event; the arrays stay valid and
//! in order.

use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::stream::{ApiStream, ApiStreamChunk, WireEvent};
use crate::stream_guard::{StreamBounds, guard_stream_of};

const KEY: &str = "sk-or-details-test-7a41c2e9";

/// A reasoning chunk as the Chat mapper makes it from an OpenRouter delta whose details carry
/// `text` (index 0), with `reasoning` empty (the reference's `reasoning: ""`).
fn detail(text: &str) -> ApiStreamChunk {
    ApiStreamChunk::Reasoning {
        reasoning: String::new(),
        details: Some(json!([{"type": "reasoning.text", "text": text,
            "format": "anthropic-claude-v1", "index": 0}])),
        signature: None,
        redacted_data: None,
        id: None,
    }
}

/// The OpenRouter event that carried `text` in its details, as forwarding gives it.
fn event(text: &str) -> ApiStreamChunk {
    let data = json!({"choices": [{"index": 0, "delta": {"reasoning_details": [
        {"type": "reasoning.text", "text": text, "format": "anthropic-claude-v1", "index": 0}]}}]});
    ApiStreamChunk::Wire(WireEvent {
        bytes: format!("data: {data}\n\n").into(),
        ends: false,
        held: false,
    })
}

fn guarded(chunks: Vec<ApiStreamChunk>, forwarding: bool) -> Vec<ApiStreamChunk> {
    crate::secrets::register(KEY);
    let inner: ApiStream = Box::pin(futures_util::stream::iter(chunks.into_iter().map(Ok)));
    let stream = guard_stream_of(inner, StreamBounds::default(), None, forwarding);
    let items: Vec<Result<ApiStreamChunk, ApiError>> =
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
            .block_on(stream.collect());
    items.into_iter().map(|i| i.expect("no error")).collect()
}

/// Every details object of `items`, in order.
fn objects(items: &[ApiStreamChunk]) -> Vec<Value> {
    (items.iter())
        .filter_map(|c| match c {
            ApiStreamChunk::Reasoning {
                details: Some(d), ..
            } => Some(d.as_array().expect("details stay an array").clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

fn joined_text(objects: &[Value]) -> String {
    (objects.iter())
        .filter_map(|o| o.get("text").and_then(Value::as_str))
        .collect()
}

/// `texts` as a details chunk each, then a text chunk (another channel).
fn answer(texts: &[&str]) -> Vec<ApiStreamChunk> {
    let mut chunks: Vec<ApiStreamChunk> = texts.iter().map(|t| detail(t)).collect();
    chunks.push(ApiStreamChunk::text("The answer."));
    chunks
}

fn check(texts: &[&str], what: &str) {
    let items = guarded(answer(texts), false);
    let all = serde_json::to_string(&items).expect("chunks serialise");
    assert!(!all.contains(KEY), "{what}: {all}");
    let objects = objects(&items);
    let want = "think [redacted] done";
    assert_eq!(joined_text(&objects), want, "{what}");
    for o in &objects {
        // Every object keeps its fields, in the order they came.
        assert_eq!(o["type"], "reasoning.text", "{what}: {o}");
        assert_eq!(o["index"], 0, "{what}: {o}");
        assert_eq!(o["format"], "anthropic-claude-v1", "{what}: {o}");
    }
    // The details before the text, as they came.
    let text_at = (items.iter())
        .position(|c| matches!(c, ApiStreamChunk::Text { .. }))
        .expect("the text");
    assert!(
        items[text_at..]
            .iter()
            .all(|c| !matches!(c, ApiStreamChunk::Reasoning { .. })),
        "{what}: {items:?}"
    );
}

#[test]
fn a_key_split_at_every_offset_across_two_and_three_details_objects_is_scrubbed() {
    let whole = format!("think {KEY} done");
    let start = "think ".len();
    let end = start + KEY.len();
    for a in start..=end {
        check(&[&whole[..a], &whole[a..]], &format!("cut at {a}"));
        for b in a..=end {
            let what = format!("cuts at {a}, {b}");
            check(&[&whole[..a], &whole[a..b], &whole[b..]], &what);
        }
    }
}

#[test]
fn a_held_tail_goes_out_alone_without_the_signature_or_with_it() {
    // The answer moves to text while "sk-or" is held: the tail goes in an object of its own,
    // a copy of the one it came from.
    let items = guarded(answer(&["plan sk-or"]), false);
    let first = objects(&items);
    assert_eq!(
        first,
        [
            json!({"type": "reasoning.text", "text": "plan ", "format": "anthropic-claude-v1", "index": 0}),
            json!({"type": "reasoning.text", "text": "sk-or", "format": "anthropic-claude-v1", "index": 0}),
        ]
    );
    // A signature closes the part: the tail goes with it, and once.
    let signed = ApiStreamChunk::Reasoning {
        reasoning: String::new(),
        details: Some(
            json!([{"type": "reasoning.text", "text": "", "signature": "c2ln", "index": 0}]),
        ),
        signature: Some("c2ln".into()),
        redacted_data: None,
        id: None,
    };
    let items = guarded(vec![detail("plan sk-or"), signed], false);
    let closed = objects(&items);
    assert_eq!(joined_text(&closed), "plan sk-or");
    assert_eq!(closed.last().expect("two")["signature"], "c2ln");
    assert_eq!(closed.len(), 2, "{closed:?}");
    // Another type closes the part: the tail goes just before, in its own type.
    let summary = ApiStreamChunk::Reasoning {
        reasoning: String::new(),
        details: Some(json!([{"type": "reasoning.summary", "summary": "In short", "index": 0}])),
        signature: None,
        redacted_data: None,
        id: None,
    };
    let typed = objects(&guarded(vec![detail("plan sk-or"), summary], false));
    let parts: Vec<String> = (typed.iter())
        .map(|o| {
            let text = o.get("text").or_else(|| o.get("summary"));
            format!(
                "{}: {}",
                o["type"].as_str().unwrap_or_default(),
                text.and_then(Value::as_str).unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        parts,
        [
            "reasoning.text: plan ",
            "reasoning.text: sk-or",
            "reasoning.summary: In short"
        ]
    );
}

#[test]
fn a_key_split_across_two_forwarded_details_events_ends_the_events() {
    for at in 1..KEY.len() {
        let (a, b) = KEY.split_at(at);
        let (first, second) = (format!("think {a}"), format!("{b} done"));
        let chunks = vec![
            detail(&first),
            event(&first),
            detail(&second),
            event(&second),
            ApiStreamChunk::text("The answer."),
        ];
        let items = guarded(chunks, true);
        let bytes: String = (items.iter())
            .filter_map(|c| match c {
                ApiStreamChunk::Wire(e) => Some(String::from_utf8_lossy(&e.bytes).into_owned()),
                _ => None,
            })
            .collect();
        // Neither half's event reached the client when the halves make the key.
        assert!(!bytes.contains(&first), "split at {at}: {bytes}");
        assert!(
            items
                .iter()
                .any(|c| matches!(c, ApiStreamChunk::Wire(e) if e.ends)),
            "split at {at}: the events did not end: {items:?}"
        );
        let all = format!("{items:?}");
        assert!(!all.contains(KEY), "split at {at}");
        assert_eq!(joined_text(&objects(&items)), "think [redacted] done");
    }
    // Clean details events go on as they came, even when held a while.
    let chunks = vec![
        detail("think sk-o"),
        event("think sk-o"),
        detail("k done"),
        event("k done"),
    ];
    let items = guarded(chunks, true);
    let events = (items.iter())
        .filter(|c| matches!(c, ApiStreamChunk::Wire(e) if !e.ends))
        .count();
    assert_eq!(events, 2, "{items:?}");
}
