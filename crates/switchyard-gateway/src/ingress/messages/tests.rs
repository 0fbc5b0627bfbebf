//! Tests of the Anthropic Messages dialect (SPEC R14.1, R14.4, R14.5): request bodies real clients send
//! (`tests/parse.rs`), the event stream read back event by event and the whole answer
//! (`tests/stream.rs`), errors (`tests/errors.rs`). The helpers here read the encoder's
//! bytes back as a client does.

mod errors;
mod parse;
mod stream;

use serde_json::Value;

/// Splits SSE bytes into `(event name, data)`, checking the framing the clients need:
/// every event is exactly an `event:` line and a `data:` line then a blank line, and the
/// event name equals the data's `type`.
pub(super) fn read_events(bytes: &[u8]) -> Vec<(String, Value)> {
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    assert!(
        text.is_empty() || text.ends_with("\n\n"),
        "ends with a blank line: {text:?}"
    );
    let mut events = Vec::new();
    for frame in text.split_terminator("\n\n") {
        let mut lines = frame.split('\n');
        let name = lines
            .next()
            .and_then(|l| l.strip_prefix("event: "))
            .expect("event line");
        let data = lines
            .next()
            .and_then(|l| l.strip_prefix("data: "))
            .expect("data line");
        assert!(lines.next().is_none(), "two lines per event: {frame:?}");
        let data: Value = serde_json::from_str(data).expect("data is JSON");
        assert_eq!(data["type"], name, "event line == data.type in {frame:?}");
        events.push((name.to_owned(), data));
    }
    events
}

/// Checks the block structure of a stream: `message_start`, `ping`, then blocks with
/// consecutive indices from 0, each started, given deltas at its own index only, and stopped
/// before the next starts; then `message_delta` and `message_stop` (or an `error` last).
/// Returns the names, for order checks.
pub(super) fn check_structure(events: &[(String, Value)]) -> Vec<&str> {
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"), "{names:?}");
    assert_eq!(names.get(1), Some(&"ping"), "{names:?}");
    let mut open: Option<u64> = None;
    let mut next = 0;
    for (name, data) in &events[2..] {
        let index = data["index"].as_u64();
        match name.as_str() {
            "content_block_start" => {
                assert_eq!(
                    open, None,
                    "a block starts while another is open: {names:?}"
                );
                assert_eq!(index, Some(next), "indices are consecutive");
                open = index;
                next += 1;
            }
            "content_block_delta" => assert_eq!(index, open, "a delta of the open block"),
            "content_block_stop" => {
                assert_eq!(index, open, "stops the open block");
                open = None;
            }
            "message_delta" | "message_stop" | "error" => {
                if name != "error" {
                    assert_eq!(open, None, "every started block was stopped: {names:?}");
                }
            }
            other => panic!("unexpected event {other}"),
        }
    }
    let tail = &names[names.len().saturating_sub(2)..];
    assert!(
        tail == ["message_delta", "message_stop"] || names.last() == Some(&"error"),
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| **n == "message_stop").count(),
        names.iter().filter(|n| **n == "message_delta").count()
    );
    names
}

/// The message a client builds from the events, as the official SDKs' `MessageStream`
/// accumulates it: blocks by index, deltas appended (`input_json_delta` joined and parsed
/// at the stop), `message_delta` setting the stop reason and the usage fields it carries.
pub(super) fn accumulate(events: &[(String, Value)]) -> Value {
    let mut message = events[0].1["message"].clone();
    let mut json_parts: Vec<String> = Vec::new();
    for (name, data) in events {
        let i = data["index"].as_u64().unwrap_or(0) as usize;
        match name.as_str() {
            "content_block_start" => {
                message["content"]
                    .as_array_mut()
                    .unwrap()
                    .push(data["content_block"].clone());
                json_parts.push(String::new());
            }
            "content_block_delta" => {
                let block = &mut message["content"][i];
                let d = &data["delta"];
                let append = |block: &mut Value, key: &str, add: &Value| {
                    let s = format!("{}{}", block[key].as_str().unwrap(), add.as_str().unwrap());
                    block[key] = Value::String(s);
                };
                match d["type"].as_str().unwrap() {
                    "text_delta" => append(block, "text", &d["text"]),
                    "thinking_delta" => append(block, "thinking", &d["thinking"]),
                    "signature_delta" => append(block, "signature", &d["signature"]),
                    "input_json_delta" => {
                        json_parts[i].push_str(d["partial_json"].as_str().unwrap())
                    }
                    other => panic!("unknown delta {other}"),
                }
            }
            "content_block_stop" => {
                let block = &mut message["content"][i];
                if block["type"] == "tool_use" && !json_parts[i].is_empty() {
                    block["input"] =
                        serde_json::from_str(&json_parts[i]).expect("tool input is JSON");
                }
            }
            "message_delta" => {
                message["stop_reason"] = data["delta"]["stop_reason"].clone();
                message["stop_sequence"] = data["delta"]["stop_sequence"].clone();
                for (k, v) in data["usage"].as_object().unwrap() {
                    if !v.is_null() {
                        message["usage"][k] = v.clone();
                    }
                }
            }
            _ => {}
        }
    }
    message
}
