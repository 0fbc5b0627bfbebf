//! The agent upstream's self-test: in each dialect, streamed and not, it answers a request that
//! offers `Write` with the closure's tool call, a request ending in a tool result with the
//! closure's text, and anything else with a 404; it records every request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use switchyard_testkit::{AgentTurn, AgentTurnRequest, AgentUpstream, UpstreamDialect};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The closure the agent tests use: Write when offered and not yet done, then "Done.".
fn script(r: &AgentTurnRequest) -> AgentTurn {
    if r.after_tool_result {
        AgentTurn::text("Done.")
    } else if r.offers_tool("Write") {
        AgentTurn::tool_call(
            "Write",
            json!({"file_path": "/tmp/x/hello.txt", "content": "hi"}),
        )
    } else {
        AgentTurn::text(format!(
            "echo: {}",
            r.last_user_text.clone().unwrap_or_default()
        ))
    }
}

/// POSTs `body` to `path` on a fresh connection: status, headers (lowercased head) and body
/// (chunked framing removed).
async fn post(url: &str, path: &str, body: &Value) -> (u16, String, String) {
    let addr = url.strip_prefix("http://").unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    let head = head.to_ascii_lowercase();
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    (status, head, body)
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size, 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

fn data(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap_or_else(|_| json!(d)))
        .collect()
}

/// What an answer said: (text, tool name, tool arguments as JSON, finish).
fn read_chat(body: &str, stream: bool) -> (String, String, Value, String) {
    if !stream {
        let v: Value = serde_json::from_str(body).unwrap();
        let m = &v["choices"][0]["message"];
        let call = &m["tool_calls"][0]["function"];
        let args = call["arguments"]
            .as_str()
            .map(|a| serde_json::from_str(a).unwrap());
        let finish = v["choices"][0]["finish_reason"]
            .as_str()
            .unwrap()
            .to_owned();
        let text = m["content"].as_str().unwrap_or_default().to_owned();
        let name = call["name"].as_str().unwrap_or_default().to_owned();
        return (text, name, args.unwrap_or(Value::Null), finish);
    }
    let events = data(body);
    assert_eq!(events.last().unwrap(), "[DONE]", "{body}");
    let (mut text, mut name, mut args, mut finish) =
        (String::new(), String::new(), String::new(), String::new());
    for e in events.iter().filter(|e| e.is_object()) {
        let Some(choice) = e["choices"].get(0) else {
            continue;
        };
        text.push_str(choice["delta"]["content"].as_str().unwrap_or_default());
        if let Some(call) = choice["delta"]["tool_calls"].get(0) {
            name.push_str(call["function"]["name"].as_str().unwrap_or_default());
            args.push_str(call["function"]["arguments"].as_str().unwrap_or_default());
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            finish = f.to_owned();
        }
    }
    let usage = events
        .iter()
        .rev()
        .find(|e| e["choices"] == json!([]))
        .unwrap();
    assert!(
        usage["usage"]["prompt_tokens"].as_u64().unwrap() > 0,
        "{body}"
    );
    let args = if args.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&args).unwrap()
    };
    (text, name, args, finish)
}

fn read_messages(body: &str, stream: bool) -> (String, String, Value, String) {
    if !stream {
        let v: Value = serde_json::from_str(body).unwrap();
        let blocks = v["content"].as_array().unwrap();
        let text = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
        let tool = blocks.iter().find(|b| b["type"] == "tool_use");
        let name = tool.map_or("", |t| t["name"].as_str().unwrap()).to_owned();
        let args = tool.map_or(Value::Null, |t| t["input"].clone());
        return (
            text,
            name,
            args,
            v["stop_reason"].as_str().unwrap().to_owned(),
        );
    }
    let names: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(names.first(), Some(&"message_start"), "{body}");
    assert_eq!(names.last(), Some(&"message_stop"), "{body}");
    let events = data(body);
    assert_eq!(names.len(), events.len(), "one event: line per data: line");
    let starts = names
        .iter()
        .filter(|n| **n == "content_block_start")
        .count();
    let stops = names.iter().filter(|n| **n == "content_block_stop").count();
    assert_eq!(starts, stops, "{body}");
    let (mut text, mut name, mut args, mut finish) =
        (String::new(), String::new(), String::new(), String::new());
    for e in &events {
        text.push_str(e["delta"]["text"].as_str().unwrap_or_default());
        args.push_str(e["delta"]["partial_json"].as_str().unwrap_or_default());
        if e["content_block"]["type"] == "tool_use" {
            name = e["content_block"]["name"].as_str().unwrap().to_owned();
        }
        if let Some(f) = e["delta"]["stop_reason"].as_str() {
            finish = f.to_owned();
            assert!(e["usage"]["output_tokens"].as_u64().unwrap() > 0);
        }
    }
    let args = if args.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&args).unwrap()
    };
    (text, name, args, finish)
}

fn read_responses(body: &str, stream: bool) -> (String, String, Value, String) {
    let response = if stream {
        let events = data(body);
        let seq: Vec<u64> = events
            .iter()
            .map(|e| e["sequence_number"].as_u64().unwrap())
            .collect();
        assert_eq!(seq, (0..events.len() as u64).collect::<Vec<_>>());
        let deltas: String = (events.iter())
            .filter(|e| e["type"] == "response.output_text.delta")
            .filter_map(|e| e["delta"].as_str())
            .collect();
        let done = events.last().unwrap();
        assert_eq!(done["type"], "response.completed", "{body}");
        let r = done["response"].clone();
        let said: String = output_text(&r);
        assert_eq!(deltas, said);
        r
    } else {
        serde_json::from_str(body).unwrap()
    };
    let call = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call");
    let name = call.map_or("", |c| c["name"].as_str().unwrap()).to_owned();
    let args = call.map_or(Value::Null, |c| {
        serde_json::from_str(c["arguments"].as_str().unwrap()).unwrap()
    });
    assert!(response["usage"]["input_tokens"].as_u64().unwrap() > 0);
    (
        output_text(&response),
        name,
        args,
        response["status"].as_str().unwrap().to_owned(),
    )
}

fn output_text(response: &Value) -> String {
    (response["output"].as_array().unwrap().iter())
        .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .collect()
}

/// A first turn offering `Write` and a second turn ending in its result, in `dialect`.
fn bodies(dialect: UpstreamDialect, stream: bool) -> (Value, Value) {
    match dialect {
        UpstreamDialect::ChatCompletions => (
            json!({"model": "m", "stream": stream, "stream_options": {"include_usage": true},
                   "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "make it"}],
                   "tools": [{"type": "function", "function": {"name": "Write", "parameters": {}}}]}),
            json!({"model": "m", "stream": stream, "stream_options": {"include_usage": true},
                   "messages": [{"role": "user", "content": "make it"},
                     {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "Write", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": "c", "content": "ok"}],
                   "tools": [{"type": "function", "function": {"name": "Write", "parameters": {}}}]}),
        ),
        UpstreamDialect::Messages => (
            json!({"model": "m", "stream": stream, "max_tokens": 10,
                   "messages": [{"role": "user", "content": [{"type": "text", "text": "make it"}]}],
                   "tools": [{"name": "Write", "input_schema": {}}]}),
            json!({"model": "m", "stream": stream, "max_tokens": 10,
                   "messages": [{"role": "user", "content": "make it"},
                     {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}],
                   "tools": [{"name": "Write", "input_schema": {}}]}),
        ),
        UpstreamDialect::Responses => (
            json!({"model": "m", "stream": stream, "input": "make it",
                   "tools": [{"type": "function", "name": "Write", "parameters": {}}]}),
            json!({"model": "m", "stream": stream,
                   "input": [{"role": "user", "content": [{"type": "input_text", "text": "make it"}]},
                     {"type": "function_call", "call_id": "c", "name": "Write", "arguments": "{}"},
                     {"type": "function_call_output", "call_id": "c", "output": "ok"}],
                   "tools": [{"type": "function", "name": "Write", "parameters": {}}]}),
        ),
        // The model and the stream are the URL's.
        UpstreamDialect::Gemini => (
            json!({"contents": [{"role": "user", "parts": [{"text": "make it"}]}],
                   "tools": [{"functionDeclarations": [{"name": "Write"}]}]}),
            json!({"contents": [{"role": "user", "parts": [{"text": "make it"}]},
                     {"role": "model", "parts": [{"functionCall": {"id": "c", "name": "Write", "args": {}}}]},
                     {"role": "user", "parts": [{"functionResponse": {"id": "c", "name": "Write", "response": {"output": "ok"}}}]}],
                   "tools": [{"functionDeclarations": [{"name": "Write"}]}]}),
        ),
    }
}

/// What a Gemini answer said: (text, the call's name, its args, the last finish reason), over
/// its `data:` events or its one response.
fn read_gemini(body: &str, stream: bool) -> (String, String, Value, String) {
    let responses = if stream {
        data(body)
    } else {
        vec![serde_json::from_str(body).unwrap()]
    };
    let (mut text, mut name, mut args, mut finish) =
        (String::new(), String::new(), Value::Null, String::new());
    for r in &responses {
        let candidate = &r["candidates"][0];
        for part in candidate["content"]["parts"].as_array().unwrap() {
            text += part["text"].as_str().unwrap_or("");
            if let Some(call) = part.get("functionCall") {
                assert!(
                    call["id"].is_string() && part["thoughtSignature"].is_string(),
                    "{part}"
                );
                name = call["name"].as_str().unwrap().to_owned();
                args = call["args"].clone();
            }
        }
        if let Some(reason) = candidate["finishReason"].as_str() {
            finish = reason.to_owned();
            assert!(r["usageMetadata"]["promptTokenCount"].as_u64().unwrap() > 0);
        }
    }
    (text, name, args, finish)
}

#[tokio::test]
async fn gemini_answers_the_call_whole_then_the_text_streamed_and_not() {
    let upstream = AgentUpstream::start(UpstreamDialect::Gemini, script).await;
    assert_eq!(upstream.base_url(), upstream.url());
    for (stream, path) in [
        (false, "/v1beta/models/gemini-2.5-pro:generateContent"),
        (
            true,
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        ),
    ] {
        let (first, second) = bodies(UpstreamDialect::Gemini, stream);
        let (status, head, body) = post(&upstream.url(), path, &first).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(head.contains("text/event-stream"), stream, "{head}");
        let (text, name, args, finish) = read_gemini(&body, stream);
        assert_eq!(
            (text.as_str(), name.as_str(), finish.as_str()),
            ("", "Write", "STOP"),
            "{body}"
        );
        assert_eq!(
            args,
            json!({"file_path": "/tmp/x/hello.txt", "content": "hi"})
        );
        let (_, _, body) = post(&upstream.url(), path, &second).await;
        let (text, name, _, finish) = read_gemini(&body, stream);
        assert_eq!(
            (text.as_str(), name.as_str(), finish.as_str()),
            ("Done.", "", "STOP"),
            "{body}"
        );
    }
    let exchanges = upstream.exchanges();
    assert_eq!(exchanges.len(), 4);
    assert_eq!(exchanges.iter().filter(|e| e.streamed).count(), 2);
    assert!(
        exchanges.iter().all(|e| e.turn.is_some()),
        "the model and stream read from the path"
    );
}

#[tokio::test]
async fn each_dialect_answers_the_tool_call_then_the_text_streamed_and_not() {
    let cases = [
        (
            UpstreamDialect::ChatCompletions,
            "/v1/chat/completions",
            read_chat as fn(&str, bool) -> _,
            ("tool_calls", "stop"),
        ),
        (
            UpstreamDialect::Messages,
            "/v1/messages?beta=true",
            read_messages,
            ("tool_use", "end_turn"),
        ),
        (
            UpstreamDialect::Responses,
            "/v1/responses",
            read_responses,
            ("completed", "completed"),
        ),
    ];
    for (dialect, path, read, (call_finish, text_finish)) in cases {
        let upstream = AgentUpstream::start(dialect, script).await;
        for stream in [false, true] {
            let (first, second) = bodies(dialect, stream);
            let (status, head, body) = post(&upstream.url(), path, &first).await;
            assert_eq!(status, 200, "{dialect:?} {body}");
            assert_eq!(head.contains("text/event-stream"), stream, "{head}");
            let (text, name, args, finish) = read(&body, stream);
            assert_eq!(
                (text.as_str(), name.as_str(), finish.as_str()),
                ("", "Write", call_finish),
                "{dialect:?} {stream}: {body}"
            );
            assert_eq!(
                args,
                json!({"file_path": "/tmp/x/hello.txt", "content": "hi"})
            );

            let (status, _, body) = post(&upstream.url(), path, &second).await;
            assert_eq!(status, 200, "{dialect:?} {body}");
            let (text, name, _, finish) = read(&body, stream);
            assert_eq!(
                (text.as_str(), name.as_str(), finish.as_str()),
                ("Done.", "", text_finish),
                "{dialect:?} {stream}: {body}"
            );
        }
        let exchanges = upstream.exchanges();
        assert_eq!(exchanges.len(), 4);
        assert_eq!(exchanges.iter().filter(|e| e.streamed).count(), 2);
        assert!(
            exchanges
                .iter()
                .all(|e| e.status == 200 && e.response_bytes > 0)
        );
        assert!(
            upstream
                .summary()
                .starts_with(&format!("agent upstream ({dialect:?}): 4 request(s)")),
            "{}",
            upstream.summary()
        );
    }
}

#[tokio::test]
async fn the_closure_sees_the_parsed_request() {
    let upstream = AgentUpstream::start(UpstreamDialect::Messages, script).await;
    let body = json!({"model": "claude-haiku", "messages": [{"role": "user", "content": "name this chat"}], "max_tokens": 5});
    let (status, _, text) = post(&upstream.url(), "/v1/messages", &body).await;
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["content"][0]["text"], "echo: name this chat");
    assert_eq!(v["model"], "claude-haiku");
    assert_eq!(upstream.base_url(), upstream.url());
}

#[tokio::test]
async fn other_paths_get_a_404_and_a_panicking_closure_a_500_and_both_are_recorded() {
    let upstream = AgentUpstream::start(
        UpstreamDialect::ChatCompletions,
        |_: &AgentTurnRequest| -> AgentTurn { panic!("no answer scripted") },
    )
    .await;
    assert!(upstream.base_url().ends_with("/v1"));
    let (status, _, body) = post(&upstream.url(), "/v1/messages", &json!({})).await;
    assert_eq!(status, 404, "{body}");
    let (status, _, body) = post(
        &upstream.url(),
        "/v1/chat/completions",
        &json!({"messages": []}),
    )
    .await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("no answer scripted"), "{body}");
    let exchanges = upstream.exchanges();
    assert_eq!(exchanges.len(), 2);
    assert_eq!(exchanges[1].panic.as_deref(), Some("no answer scripted"));
}

#[test]
fn start_blocking_serves_without_a_runtime_of_the_callers() {
    let upstream = AgentUpstream::start_blocking(UpstreamDialect::Responses, script);
    let mut stream =
        std::net::TcpStream::connect(upstream.url().strip_prefix("http://").unwrap()).unwrap();
    let body = json!({"model": "m", "input": "hi"}).to_string();
    use std::io::{Read, Write};
    write!(stream, "POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 200 OK"), "{raw}");
    assert!(raw.contains("echo: hi"), "{raw}");
    assert_eq!(upstream.request_count(), 1);
}
