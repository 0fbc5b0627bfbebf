//! A forwarded stream's events under the guard: given as they came while nothing is
//! redacted, held with a possible secret's start, and ended when a secret spans two of them.

use futures_util::StreamExt;

use super::*;
use crate::stream::ApiStream;
use crate::stream_guard::{StreamBounds, guard_stream_of};

const KEY: &str = "sk-wire-guard-test-5d2e8b91";

/// An Anthropic text delta event carrying `text`, as forwarding gives it.
fn event(text: &str) -> WireEvent {
    let data = serde_json::json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": text}});
    WireEvent {
        bytes: format!("event: content_block_delta\ndata: {data}\n\n").into(),
        ends: false,
        held: false,
    }
}

/// The forwarded stream of `texts`: each text's chunk, then its event.
fn forwarded(texts: &[&str]) -> Vec<ApiStreamChunk> {
    texts
        .iter()
        .flat_map(|t| [ApiStreamChunk::text(*t), ApiStreamChunk::Wire(event(t))])
        .collect()
}

fn guarded(chunks: Vec<ApiStreamChunk>) -> Vec<ApiStreamChunk> {
    crate::secrets::register(KEY);
    let inner: ApiStream = Box::pin(futures_util::stream::iter(chunks.into_iter().map(Ok)));
    let stream = guard_stream_of(inner, StreamBounds::default(), None, true);
    let items: Vec<_> = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(stream.collect());
    items.into_iter().map(|i| i.expect("no error")).collect()
}

fn events(items: &[ApiStreamChunk]) -> Vec<String> {
    (items.iter())
        .filter_map(|c| match c {
            ApiStreamChunk::Wire(e) => Some(String::from_utf8(e.bytes.to_vec()).unwrap()),
            _ => None,
        })
        .collect()
}

fn text(items: &[ApiStreamChunk]) -> String {
    (items.iter())
        .filter_map(|c| match c {
            ApiStreamChunk::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn clean_events_go_on_as_they_came_even_when_held_a_while() {
    // "sk-w" could start the key: its event waits, then goes on unchanged.
    let texts = ["The answer is sk-w", "ise and final."];
    let items = guarded(forwarded(&texts));
    let want: Vec<String> = (texts.iter())
        .map(|t| String::from_utf8(event(t).bytes.to_vec()).unwrap())
        .collect();
    assert_eq!(events(&items), want);
    assert_eq!(text(&items), texts.concat());
}

#[test]
fn a_key_inside_one_event_is_scrubbed_from_its_bytes() {
    let inside = format!("the key {KEY} here");
    let items = guarded(forwarded(&["start ", &inside, " end"]));
    let all = events(&items).concat();
    assert!(!all.contains(KEY), "{all}");
    assert!(all.contains(crate::secrets::REDACTED), "{all}");
    assert!(
        !items
            .iter()
            .any(|c| matches!(c, ApiStreamChunk::Wire(e) if e.ends))
    );
}

#[test]
fn a_key_split_across_events_ends_them_and_the_rest_is_chunks() {
    for at in 1..KEY.len() {
        let (a, b) = KEY.split_at(at);
        let first = format!("before {a}");
        let second = format!("{b} after");
        let items = guarded(forwarded(&["lead in. ", &first, &second, " tail"]));
        let all = events(&items).concat();
        assert!(!all.contains(a) || a.len() < 4, "split at {at}: {all}");
        assert!(!format!("{items:?}").contains(KEY), "split at {at}");
        let end = (items.iter())
            .position(|c| matches!(c, ApiStreamChunk::Wire(e) if e.ends))
            .unwrap_or_else(|| panic!("split at {at}: the events did not end: {items:?}"));
        // Before the end: the clean first event, as it came; after it: no event.
        assert_eq!(
            events(&items[..end]),
            [String::from_utf8(event("lead in. ").bytes.to_vec()).unwrap()]
        );
        assert!(
            !items[end + 1..]
                .iter()
                .any(|c| matches!(c, ApiStreamChunk::Wire(_)))
        );
        // The chunks say the whole answer, scrubbed (those of the held events went on before
        // the end: the consumer writes them as their events never came).
        let want = format!("lead in. before {} after tail", crate::secrets::REDACTED);
        assert_eq!(text(&items), want, "split at {at}");
    }
}

/// A second key, with the `/` JSON may write as `\/`.
const SLASHED: &str = "aws/wire+guard/escaped-7c41";

/// `text` as a JSON string literal with each character of every key in it spelled as `how`
/// says: 0 plain, 1 `\u` in lower-case hex, 2 in upper-case hex, 3 `\/` for a `/`.
fn escaped_literal(text: &str, how: &[u8]) -> String {
    let mut out = String::from("\"");
    for (i, c) in text.chars().enumerate() {
        match (how[i % how.len()], c) {
            (_, '"' | '\\') => out.push_str(&format!("\\{c}")),
            (3, '/') => out.push_str("\\/"),
            (1, c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            (2, c) => out.push_str(&format!("\\u{:04X}", c as u32)),
            (_, c) => out.push(c),
        }
    }
    out.push('"');
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// However a server escapes a key's characters inside one event's JSON string, the event
    /// given on never holds the key once its JSON is decoded (SPEC R10.5).
    #[test]
    fn a_key_escaped_any_way_inside_one_event_never_goes_on(
        how in proptest::collection::vec(0u8..4, 1..40),
        slashed: bool,
        before in "[a-z ]{0,12}",
    ) {
        crate::secrets::register(SLASHED);
        let key = if slashed { SLASHED } else { KEY };
        let said = format!("{before}{key} after");
        let data = format!(
            r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{}}}}}"#,
            escaped_literal(&said, &how)
        );
        let wire = WireEvent {
            bytes: format!("event: content_block_delta\ndata: {data}\n\n").into(),
            ends: false,
            held: false,
        };
        let items = guarded(vec![ApiStreamChunk::text(said), ApiStreamChunk::Wire(wire)]);
        for event in events(&items) {
            let data = event.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
            let decoded: serde_json::Value = serde_json::from_str(data).unwrap();
            let decoded = decoded["delta"]["text"].as_str().unwrap().to_owned();
            proptest::prop_assert!(!decoded.contains(key), "{event}");
        }
        proptest::prop_assert!(!text(&items).contains(key));
    }
}
