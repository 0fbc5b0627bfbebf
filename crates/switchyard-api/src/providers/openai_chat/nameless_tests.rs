//! Tool-call arguments that arrive before the call's name (vercel/ai#14722, tests/cases C88):
//! held by the mapper, bounded there with the stream guard's settings and errors, scrubbed
//! by the guard once given, and a forwarded stream's events wait with them (SPEC R4.0b,
//! R10.5).

use futures_util::StreamExt;
use serde_json::json;

use super::*;
use crate::providers::forward::Forwarding;
use crate::providers::mapper::testing::sse;
use crate::stream::ApiStream;
use crate::stream_guard::{StreamBounds, TOO_LARGE, guard_stream_of};

const KEY: &str = "sk-nameless-test-4e8f1b2a";

/// A chunk whose one tool-call fragment is `fragment`.
fn fragment(fragment: serde_json::Value) -> String {
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]}).to_string()
}

/// Arguments of call `index` with no name (and no id).
fn nameless(index: u64, arguments: &str) -> String {
    fragment(json!({"index": index, "function": {"arguments": arguments}}))
}

/// The name (and id) of call `index`, with `arguments`.
fn named(index: u64, arguments: &str) -> String {
    fragment(
        json!({"index": index, "id": "call_late", "type": "function",
        "function": {"name": "write_file", "arguments": arguments}}),
    )
}

const STOP: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#;

/// `events` through `parser` with `bounds`, as the transport feeds it: it ends at its first
/// error.
fn feed<P: EventParser<Event = SseEvent>>(
    mut parser: P,
    events: &[String],
    bounds: StreamBounds,
) -> Vec<Result<ApiStreamChunk, ApiError>> {
    parser.set_bounds(bounds);
    let mut out = Vec::new();
    for data in events {
        parser.on_event(sse("", data), &mut out);
        if out.iter().any(Result::is_err) {
            return out;
        }
    }
    parser.on_end(&mut out);
    out
}

/// `events` through a Chat parser (forwarding its events when `forwarding`) with `bounds`,
/// then the stream guard, as the transport runs them.
fn run(
    events: &[String],
    bounds: StreamBounds,
    forwarding: bool,
) -> Vec<Result<ApiStreamChunk, ApiError>> {
    crate::secrets::register(KEY);
    let parser = ChatParser::new(ChatDialect::Generic, ThinkTags::Opening);
    let out = if forwarding {
        feed(Forwarding::new(parser), events, bounds)
    } else {
        feed(parser, events, bounds)
    };
    let inner: ApiStream = Box::pin(futures_util::stream::iter(out));
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(guard_stream_of(inner, bounds, None, forwarding).collect())
}

fn arguments(items: &[Result<ApiStreamChunk, ApiError>]) -> String {
    (items.iter())
        .filter_map(|i| match i {
            Ok(ApiStreamChunk::ToolCalls {
                arguments_delta, ..
            }) => Some(arguments_delta.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn endless_nameless_fragments_stop_at_the_bound_of_one_call() {
    // At the default 4 MiB bound: 8 KiB fragments that never name their call.
    let piece = "x".repeat(8192);
    let bounds = StreamBounds::default();
    let limit = bounds.max_tool_arguments_bytes;
    let events: Vec<String> = (0..limit / piece.len() + 10)
        .map(|_| nameless(0, &piece))
        .collect();
    let items = run(&events, bounds, false);
    let Some(Err(e)) = items.last() else {
        panic!("no error: {} items", items.len())
    };
    assert_eq!(e.code.as_deref(), Some(TOO_LARGE), "{e}");
    assert!(!e.is_retryable());
    assert!(
        e.message.contains("max_tool_arguments_bytes")
            && e.message.contains("4 MiB")
            && e.message.contains("whose name has not arrived"),
        "{e}"
    );
    assert_eq!(items.len(), 1, "nothing was given before the name");
}

#[test]
fn nameless_fragments_of_many_calls_stop_at_the_answer_bound() {
    let bounds = StreamBounds {
        max_tool_arguments_bytes: 100,
        max_answer_bytes: 250,
        max_line_bytes: 1 << 20,
    };
    // Each call (its own id, no name yet) holds 60 bytes, under its own bound; the fifth
    // passes the answer's.
    let events: Vec<String> = (0..10)
        .map(|i| fragment(json!({"index": i, "id": format!("call_{i}"), "function": {"arguments": "y".repeat(60)}})))
        .collect();
    let items = run(&events, bounds, false);
    let Some(Err(e)) = items.last() else {
        panic!("{items:?}")
    };
    assert!(
        e.message.contains("max_answer_bytes") && e.message.contains("250 bytes"),
        "{e}"
    );
    // Under the bounds, the held arguments are given whole once the name comes.
    let events = [
        nameless(0, "{\"a\":"),
        nameless(0, "1}"),
        named(0, ""),
        STOP.into(),
    ];
    let items = run(&events, bounds, false);
    assert_eq!(arguments(&items), "{\"a\":1}", "{items:?}");
}

#[test]
fn a_key_split_across_nameless_fragments_is_scrubbed_at_every_offset() {
    let args = format!("{{\"content\": \"{KEY}\"}}");
    let start = args.find(KEY).expect("the key");
    for at in start + 1..start + KEY.len() {
        let events = [
            nameless(0, &args[..at]),
            nameless(0, &args[at..]),
            named(0, ""),
            STOP.into(),
        ];
        for forwarding in [false, true] {
            let items = run(&events, StreamBounds::default(), forwarding);
            let all = format!("{items:?}");
            assert!(!all.contains(KEY), "split at {at}: {all}");
            assert_eq!(
                arguments(&items),
                "{\"content\": \"[redacted]\"}",
                "split at {at}"
            );
            if !forwarding {
                continue;
            }
            // The held fragments' events never reached the client: the events ended.
            let events: String = (items.iter())
                .filter_map(|i| match i {
                    Ok(ApiStreamChunk::Wire(e)) => {
                        Some(String::from_utf8_lossy(&e.bytes).into_owned())
                    }
                    _ => None,
                })
                .collect();
            assert!(
                !events.contains(&args[start..at]),
                "split at {at}: {events}"
            );
            assert!(
                items
                    .iter()
                    .any(|i| matches!(i, Ok(ApiStreamChunk::Wire(e)) if e.ends)),
                "split at {at}"
            );
        }
    }
}

#[test]
fn clean_nameless_fragments_are_forwarded_as_they_came() {
    let events = [
        nameless(0, "{\"path\":"),
        nameless(0, "\"a.txt\"}"),
        named(0, ""),
        STOP.into(),
    ];
    let items = run(&events, StreamBounds::default(), true);
    let forwarded = (items.iter())
        .filter(|i| matches!(i, Ok(ApiStreamChunk::Wire(e)) if !e.ends))
        .count();
    assert_eq!(forwarded, events.len(), "{items:?}");
    assert_eq!(arguments(&items), "{\"path\":\"a.txt\"}");
    // A call whose name never came: its events do not go on (the answer never had it).
    let events = [nameless(0, "{\"path\":"), STOP.into()];
    let items = run(&events, StreamBounds::default(), true);
    let given = (items.iter())
        .filter(|i| matches!(i, Ok(ApiStreamChunk::Wire(e)) if !e.ends))
        .count();
    assert_eq!(given, 0, "{items:?}");
}
