//! Tests of the Chat Completions dialect: shared helpers (parse a body, run chunks through
//! the encoder and read the SSE back, accumulate deltas as the official SDKs do); the cases
//! are in `tests/`.

mod collect;
mod error;
mod reports;
mod request;
mod stream;

use serde_json::{Map, Value};
use switchyard_api::ApiStreamChunk;

use super::super::encode::{StopReason, StreamEncoder};
use super::super::request::{GatewayRequest, IngressError};
use super::{Encoder, parse_request};

/// Parses `body`, which must be accepted.
fn parse(body: &Value) -> GatewayRequest {
    parse_request(body.to_string().as_bytes()).unwrap_or_else(|e| panic!("{e}"))
}

/// Parses `body`, which must be refused.
fn refuse(body: &Value) -> IngressError {
    match parse_request(body.to_string().as_bytes()) {
        Ok(request) => panic!("accepted: {request:?}"),
        Err(e) => e,
    }
}

/// One SSE event read back: its JSON data, or `"[DONE]"` as a string.
fn events(bytes: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    assert!(
        text.is_empty() || text.ends_with("\n\n"),
        "unterminated: {text:?}"
    );
    text.split_terminator("\n\n")
        .map(|event| {
            assert!(!event.contains('\n'), "one line per event: {event:?}");
            let data = event.strip_prefix("data: ").expect("a data line");
            if data == "[DONE]" {
                Value::String(data.into())
            } else {
                serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"))
            }
        })
        .collect()
}

/// The events of `chunks` ended by `stop`, with or without the usage chunk. Each call's
/// output must be whole events.
fn encode(chunks: &[ApiStreamChunk], stop: StopReason, include_usage: bool) -> Vec<Value> {
    let mut encoder =
        Encoder::new("anthropic/claude-sonnet-4-5", "req_1").include_usage(include_usage);
    let mut out = Vec::new();
    encoder.start(&mut out);
    assert!(out.is_empty(), "Chat has nothing before the first chunk");
    for chunk in chunks {
        let before = out.len();
        encoder.chunk(chunk, &mut out);
        events(&out[before..]);
    }
    encoder.finish(stop, &mut out);
    events(&out)
}

/// Checks what every `chat.completion.chunk` carries and returns the content chunks' choice
/// (`choices[0]`), in order; the usage chunk (`choices: []`) and `[DONE]` are left out.
fn choices(events: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for event in events {
        if event == "[DONE]" {
            continue;
        }
        assert_eq!(event["object"], "chat.completion.chunk", "{event}");
        assert_eq!(event["id"], "chatcmpl-req_1");
        assert_eq!(event["model"], "anthropic/claude-sonnet-4-5");
        assert!(event["created"].as_u64().is_some_and(|t| t > 1_700_000_000));
        let list = event["choices"].as_array().expect("choices");
        if list.is_empty() {
            continue;
        }
        assert_eq!(list.len(), 1);
        assert_eq!(list[0]["index"], 0);
        assert!(
            list[0].get("finish_reason").is_some(),
            "finish_reason always present"
        );
        out.push(list[0].clone());
    }
    out
}

/// The message a client builds from the deltas, merging as openai-python's
/// `accumulate_delta` does — strings concatenated, objects merged, lists of objects merged by
/// `index`, other values replaced — but stricter: `type` is concatenated too, as some clients
/// do (epam/ai-dial-sdk#239). A field sent twice (a name, an id, a type) shows up doubled.
fn accumulate(choices: &[Value]) -> Value {
    let mut acc = Map::new();
    for choice in choices {
        merge(&mut acc, choice["delta"].as_object().expect("delta"));
    }
    Value::Object(acc)
}

fn merge(acc: &mut Map<String, Value>, delta: &Map<String, Value>) {
    for (key, value) in delta {
        match (acc.get_mut(key), value) {
            (Some(Value::String(a)), Value::String(b)) if key != "index" => a.push_str(b),
            (Some(Value::Object(a)), Value::Object(b)) => merge(a, b),
            (Some(Value::Array(a)), Value::Array(b)) => {
                for item in b {
                    let index = item["index"].as_u64().expect("index on every list item");
                    match a.iter_mut().find(|x| x["index"].as_u64() == Some(index)) {
                        Some(Value::Object(existing)) => {
                            merge(existing, item.as_object().expect("object"))
                        }
                        _ => a.push(item.clone()),
                    }
                }
            }
            _ => {
                acc.insert(key.clone(), value.clone());
            }
        }
    }
}
