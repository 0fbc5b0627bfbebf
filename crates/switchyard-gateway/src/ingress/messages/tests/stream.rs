//! The event stream read back event by event, and the whole answer (SPEC R14.1, R14.4).

use serde_json::{Value, json};
use switchyard_api::{ApiError, ApiStreamChunk, ContentBlock, ErrorKind, Usage};

use super::super::{Collector, Encoder};
use super::{accumulate, check_structure, read_events};
use crate::ingress::{ResponseCollector, StopReason, StreamEncoder};

fn usage(input: u64, output: u64, read: Option<u64>, write: Option<u64>) -> ApiStreamChunk {
    ApiStreamChunk::Usage(Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: read,
        cache_write_tokens: write,
        ..Usage::default()
    })
}

/// Streams `chunks` (start, each chunk, finish with `stop`) and reads the events back.
fn stream(chunks: &[ApiStreamChunk], stop: StopReason) -> Vec<(String, Value)> {
    let mut enc = Encoder::new("claude-sonnet-4-5", "req_1");
    let mut out = Vec::new();
    enc.start(&mut out);
    for c in chunks {
        enc.chunk(c, &mut out);
    }
    enc.finish(stop, &mut out);
    let events = read_events(&out);
    check_structure(&events);
    events
}

fn collect(chunks: &[ApiStreamChunk], stop: StopReason) -> Value {
    let mut col = Collector::new("claude-sonnet-4-5", "req_1");
    for c in chunks {
        col.chunk(c);
    }
    col.finish(stop)
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn text_answer_event_by_event() {
    let events = stream(
        &[
            ApiStreamChunk::text("Hel"),
            ApiStreamChunk::text("lo"),
            usage(12, 3, None, None),
        ],
        StopReason::EndTurn,
    );
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(
        events[0].1,
        json!({"type": "message_start", "message": {
            "id": "msg_req_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0}}})
    );
    assert_eq!(
        events[2].1,
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    );
    assert_eq!(
        events[3].1,
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}})
    );
    assert_eq!(
        events[5].1,
        json!({"type": "content_block_stop", "index": 0})
    );
    assert_eq!(
        events[6].1,
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
               "usage": {"input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}})
    );
    assert_eq!(events[7].1, json!({"type": "message_stop"}));
}

/// The raw bytes: `event:` lines (Claude Code silently re-sends with `stream: false`
/// without them, issue 23) and a blank line after each event.
#[test]
fn raw_bytes_have_event_lines() {
    let mut enc = Encoder::new("m", "msg_abc");
    let mut out = Vec::new();
    enc.start(&mut out);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("event: message_start\ndata: {"), "{text}");
    assert!(
        text.contains("\"id\":\"msg_abc\""),
        "an id already msg_ is kept: {text}"
    );
    assert!(
        text.ends_with("event: ping\ndata: {\"type\":\"ping\"}\n\n"),
        "{text}"
    );
}

/// Reasoning then text then a tool call: the thinking block gets `thinking_delta`s (field
/// `thinking`, not `text`) and its `signature_delta`, and is closed before the text block
/// opens, not at the end (nielspeter/claude-code-proxy#17: Claude Code dropped the turn).
#[test]
fn thinking_text_and_tool_in_order() {
    let chunks = [
        ApiStreamChunk::reasoning("Let me "),
        ApiStreamChunk::reasoning("think."),
        ApiStreamChunk::reasoning_signature("sig-1"),
        ApiStreamChunk::text("I'll write it."),
        ApiStreamChunk::tool_call("toolu_1", "Write", ""),
        ApiStreamChunk::tool_call("toolu_1", "Write", "{\"file_path\": \"hello.txt\","),
        ApiStreamChunk::tool_call("toolu_1", "Write", " \"content\": \"hi\"}"),
        usage(100, 40, Some(2000), Some(50)),
    ];
    let events = stream(&chunks, StopReason::ToolUse);
    let starts: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n == "content_block_start")
        .map(|(_, d)| &d["content_block"])
        .collect();
    assert_eq!(
        starts,
        [
            &json!({"type": "thinking", "thinking": "", "signature": ""}),
            &json!({"type": "text", "text": ""}),
            &json!({"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}),
        ]
    );
    let deltas: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| &d["delta"])
        .collect();
    assert_eq!(
        deltas[0],
        &json!({"type": "thinking_delta", "thinking": "Let me "})
    );
    assert_eq!(
        deltas[2],
        &json!({"type": "signature_delta", "signature": "sig-1"})
    );
    assert_eq!(
        deltas[4],
        &json!({"type": "input_json_delta", "partial_json": "{\"file_path\": \"hello.txt\","})
    );
    assert_eq!(deltas.len(), 6, "no empty input_json_delta: {deltas:?}");
    let message = accumulate(&events);
    assert_eq!(message["content"][0]["thinking"], "Let me think.");
    assert_eq!(message["content"][0]["signature"], "sig-1");
    assert_eq!(
        message["content"][2]["input"],
        json!({"file_path": "hello.txt", "content": "hi"})
    );
    assert_eq!(message["stop_reason"], "tool_use");
    // The client's accumulated message equals the non-streamed one.
    assert_eq!(message, collect(&chunks, StopReason::ToolUse));
}

/// A signature with no thinking text still gets its thinking block (BerriAI/litellm#38809
/// dropped signature-only blocks as empty, and the client could not replay the turn).
#[test]
fn signature_only_thinking_block() {
    let chunks = [
        ApiStreamChunk::reasoning_signature("EqQBsig"),
        ApiStreamChunk::text("Answer."),
    ];
    let events = stream(&chunks, StopReason::EndTurn);
    let message = accumulate(&events);
    assert_eq!(
        message["content"][0],
        json!({"type": "thinking", "thinking": "", "signature": "EqQBsig"})
    );
    assert_eq!(
        message["content"][1],
        json!({"type": "text", "text": "Answer."})
    );
    assert_eq!(message, collect(&chunks, StopReason::EndTurn));
}

/// Thinking after a signature is a new block (interleaved thinking between tool calls);
/// redacted thinking is a `redacted_thinking` block started and stopped at once.
#[test]
fn redacted_and_interleaved_thinking() {
    let chunks = [
        ApiStreamChunk::reasoning("first"),
        ApiStreamChunk::reasoning_signature("s1"),
        ApiStreamChunk::redacted_reasoning("EmwKAhgB"),
        ApiStreamChunk::reasoning("second"),
        ApiStreamChunk::reasoning_signature("s2"),
        ApiStreamChunk::text("done"),
    ];
    let events = stream(&chunks, StopReason::EndTurn);
    let message = accumulate(&events);
    assert_eq!(
        message["content"],
        json!([
            {"type": "thinking", "thinking": "first", "signature": "s1"},
            {"type": "redacted_thinking", "data": "EmwKAhgB"},
            {"type": "thinking", "thinking": "second", "signature": "s2"},
            {"type": "text", "text": "done"},
        ])
    );
    let redacted_at = names(&events)
        .iter()
        .position(|n| *n == "content_block_start")
        .unwrap()
        + 4;
    assert_eq!(
        events[redacted_at].1["content_block"]["type"],
        "redacted_thinking"
    );
    assert_eq!(
        events[redacted_at + 1].1,
        json!({"type": "content_block_stop", "index": 1})
    );
    assert_eq!(message, collect(&chunks, StopReason::EndTurn));
}

/// A tool-only answer starts at index 0; two calls in a row are two blocks, each stopped
/// (maximhq/bifrost#3441: overlapping blocks and tool blocks never closed).
#[test]
fn tool_only_answer_two_calls() {
    let chunks = [
        ApiStreamChunk::tool_call("call_a", "Read", "{\"path\":"),
        ApiStreamChunk::tool_call("call_a", "Read", "\"a.txt\"}"),
        ApiStreamChunk::tool_call("call_b", "Read", "{\"path\":\"b.txt\"}"),
        usage(10, 5, None, None),
    ];
    let events = stream(&chunks, StopReason::EndTurn);
    assert_eq!(events[2].1["index"], 0);
    assert_eq!(events[2].1["content_block"]["type"], "tool_use");
    let message = accumulate(&events);
    assert_eq!(message["content"].as_array().unwrap().len(), 2);
    assert_eq!(
        message["content"][1],
        json!({"type": "tool_use", "id": "call_b", "name": "Read", "input": {"path": "b.txt"}})
    );
    assert_eq!(
        message["stop_reason"], "tool_use",
        "a tool call is reported as tool_use"
    );
    assert_eq!(message, collect(&chunks, StopReason::EndTurn));
}

/// Every tool call is sent once: a provider that repeats a finished call whole at the end
/// does not make a second `tool_use` block (maximhq/bifrost#5128: Claude Code received
/// every tool call twice and ran it twice).
#[test]
fn a_tool_call_is_never_sent_twice() {
    let chunks = [
        ApiStreamChunk::tool_call("toolu_1", "Bash", "{\"command\": \"ls\"}"),
        ApiStreamChunk::text(" "),
        ApiStreamChunk::tool_call("toolu_1", "Bash", "{\"command\": \"ls\"}"),
        ApiStreamChunk::tool_call("toolu_1", "Bash", ""),
    ];
    let events = stream(&chunks, StopReason::ToolUse);
    let tool_starts = events
        .iter()
        .filter(|(n, d)| n == "content_block_start" && d["content_block"]["type"] == "tool_use")
        .count();
    assert_eq!(tool_starts, 1);
    let joined: String = events
        .iter()
        .filter_map(|(_, d)| d["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(joined, "{\"command\": \"ls\"}");
    assert_eq!(names(&events).last(), Some(&"message_stop"));
    // Repeated while its block is still open: still one call, arguments not doubled.
    let repeated = [
        ApiStreamChunk::tool_call("toolu_2", "Bash", "{\"command\":"),
        ApiStreamChunk::tool_call("toolu_2", "Bash", " \"pwd\"}"),
        ApiStreamChunk::tool_call("toolu_2", "Bash", "{\"command\": \"pwd\"}"),
    ];
    let message = accumulate(&stream(&repeated, StopReason::ToolUse));
    assert_eq!(
        message,
        collect(&repeated, StopReason::ToolUse),
        "the collector too"
    );
    assert_eq!(
        message["content"],
        json!([{"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "pwd"}}])
    );
}

/// Interleaved calls (a second id while the first's arguments are incomplete) cannot be
/// interleaved blocks: the second is held and sent whole once the first closes; nothing is
/// repeated or lost.
#[test]
fn interleaved_tool_calls_are_serialised() {
    let chunks = [
        ApiStreamChunk::tool_call("a", "f", "{\"x\":"),
        ApiStreamChunk::tool_call("b", "g", "{\"y\":"),
        ApiStreamChunk::tool_call("a", "f", "1}"),
        ApiStreamChunk::tool_call("b", "g", "2}"),
        ApiStreamChunk::tool_call("c", "h", ""),
    ];
    let events = stream(&chunks, StopReason::ToolUse);
    let message = accumulate(&events);
    assert_eq!(
        message["content"],
        json!([
            {"type": "tool_use", "id": "a", "name": "f", "input": {"x": 1}},
            {"type": "tool_use", "id": "b", "name": "g", "input": {"y": 2}},
            {"type": "tool_use", "id": "c", "name": "h", "input": {}},
        ])
    );
    assert_eq!(message, collect(&chunks, StopReason::ToolUse));
}

/// Arguments for a call whose block already closed cannot be delivered: an in-band error,
/// never a clean end with a broken call.
#[test]
fn late_arguments_end_in_an_error() {
    let mut enc = Encoder::new("m", "1");
    let mut out = Vec::new();
    enc.start(&mut out);
    enc.chunk(&ApiStreamChunk::tool_call("a", "f", "{\"x\":1}"), &mut out);
    enc.chunk(&ApiStreamChunk::text("and"), &mut out);
    enc.chunk(&ApiStreamChunk::tool_call("a", "f", ",\"y\":2}"), &mut out);
    enc.finish(StopReason::ToolUse, &mut out);
    let events = read_events(&out);
    let names = check_structure(&events);
    assert_eq!(names.last(), Some(&"error"));
    assert!(!names.contains(&"message_stop"));
    assert_eq!(events.last().unwrap().1["error"]["type"], "api_error");
}

/// Usage can come more than once: the latest wins, and `message_delta` carries the input
/// and cache counts, not only output (envoyproxy/ai-gateway#2352: `input_tokens: 0` after
/// translation; cline/cline#4346 and earendil-works/pi#1045 read them from `message_delta`).
#[test]
fn latest_usage_with_input_and_cache_in_message_delta() {
    let events = stream(
        &[
            usage(5, 0, None, None),
            ApiStreamChunk::text("x"),
            usage(180, 42, Some(1024), Some(7)),
        ],
        StopReason::EndTurn,
    );
    let delta = &events.iter().find(|(n, _)| n == "message_delta").unwrap().1;
    assert_eq!(
        delta["usage"],
        json!({"input_tokens": 180, "output_tokens": 42, "cache_read_input_tokens": 1024, "cache_creation_input_tokens": 7})
    );
    let message = accumulate(&events);
    assert_eq!(
        message["usage"]["input_tokens"], 180,
        "the SDK's final message keeps the input count"
    );
}

#[test]
fn max_tokens_stop_reason_is_kept() {
    let events = stream(
        &[ApiStreamChunk::tool_call("t", "f", "{\"a\":")],
        StopReason::MaxTokens,
    );
    let delta = &events.iter().find(|(n, _)| n == "message_delta").unwrap().1;
    assert_eq!(
        delta["delta"]["stop_reason"], "max_tokens",
        "a cut call is not reported as tool_use"
    );
    let events = stream(&[ApiStreamChunk::text("cut")], StopReason::MaxTokens);
    assert_eq!(accumulate(&events)["stop_reason"], "max_tokens");
    // `tool_use` with no tool_use block would send an SDK loop looking for calls.
    let events = stream(&[ApiStreamChunk::text("no call")], StopReason::ToolUse);
    assert_eq!(accumulate(&events)["stop_reason"], "end_turn");
    let message = collect(&[ApiStreamChunk::text("no call")], StopReason::ToolUse);
    assert_eq!(message["stop_reason"], "end_turn");
}

/// An error mid-stream: `event: error` with Anthropic's body and no `message_stop`
/// (Portkey#1797 ended a cut stream as a clean 200); later calls add nothing.
#[test]
fn error_mid_stream() {
    let mut enc = Encoder::new("m", "1");
    let mut out = Vec::new();
    enc.start(&mut out);
    enc.chunk(&ApiStreamChunk::text("partial"), &mut out);
    enc.error(
        &ApiError::new(ErrorKind::Overloaded, "busy").with_status(529),
        &mut out,
    );
    let len = out.len();
    enc.chunk(&ApiStreamChunk::text("more"), &mut out);
    enc.finish(StopReason::EndTurn, &mut out);
    enc.error(&ApiError::new(ErrorKind::Server, "x"), &mut out);
    assert_eq!(out.len(), len, "nothing after the error");
    let events = read_events(&out);
    check_structure(&events);
    let (name, data) = events.last().unwrap();
    assert_eq!(name, "error");
    assert_eq!(data["type"], "error");
    assert_eq!(data["error"]["type"], "overloaded_error");
    assert!(
        data["error"]["message"]
            .as_str()
            .unwrap()
            .contains("overloaded"),
        "{data}"
    );
    assert!(!names(&events).contains(&"message_stop"));
}

/// A chunk before `start`, or `start`/`finish` called twice, still makes one well-formed
/// stream; an empty answer is `message_start`, `ping`, `message_delta`, `message_stop`.
#[test]
fn lazy_start_and_idempotent_ends() {
    let mut enc = Encoder::new("m", "1");
    let mut out = Vec::new();
    enc.chunk(&ApiStreamChunk::text("hi"), &mut out);
    enc.start(&mut out);
    enc.finish(StopReason::EndTurn, &mut out);
    enc.finish(StopReason::EndTurn, &mut out);
    let events = read_events(&out);
    assert_eq!(
        check_structure(&events)
            .iter()
            .filter(|n| **n == "message_start")
            .count(),
        1
    );
    let empty = stream(
        &[ApiStreamChunk::text(""), ApiStreamChunk::reasoning("")],
        StopReason::EndTurn,
    );
    assert_eq!(
        names(&empty),
        ["message_start", "ping", "message_delta", "message_stop"]
    );
}

/// The non-streamed message object: blocks in order, a call without arguments has input
/// `{}`, arguments that are not JSON are kept as the string sent, usage is the latest.
#[test]
fn collector_message_object() {
    let message = collect(
        &[
            ApiStreamChunk::reasoning("hmm"),
            ApiStreamChunk::reasoning_signature("sig"),
            ApiStreamChunk::text("Sure."),
            ApiStreamChunk::tool_call("t1", "list", ""),
            ApiStreamChunk::tool_call("t2", "broken", "{\"a\": "),
            usage(1, 1, None, None),
            usage(9, 4, Some(3), None),
        ],
        StopReason::EndTurn,
    );
    assert_eq!(
        message,
        json!({
            "id": "msg_req_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "t1", "name": "list", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "broken", "input": "{\"a\": "},
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 9, "output_tokens": 4, "cache_read_input_tokens": 3, "cache_creation_input_tokens": 0},
        })
    );
    let plain = collect(
        &[ApiStreamChunk::text("a"), ApiStreamChunk::text("b")],
        StopReason::EndTurn,
    );
    assert_eq!(plain["content"], json!([{"type": "text", "text": "ab"}]));
    assert_eq!(plain["stop_reason"], "end_turn");
}

/// Newlines inside text and arguments stay escaped inside the one `data:` line (a raw
/// newline would end the SSE field and corrupt the event for every client).
#[test]
fn newlines_in_content_stay_inside_one_data_line() {
    let mut enc = Encoder::new("m", "1");
    let mut out = Vec::new();
    enc.start(&mut out);
    enc.chunk(&ApiStreamChunk::text("line one\nline two \u{e9}"), &mut out);
    enc.chunk(
        &ApiStreamChunk::tool_call("t", "f", "{\"s\": \"a\\nb\"}"),
        &mut out,
    );
    enc.finish(StopReason::ToolUse, &mut out);
    let text = std::str::from_utf8(&out).unwrap();
    let frames: Vec<&str> = text.split_terminator("\n\n").collect();
    assert!(
        frames.iter().all(|f| f.lines().count() == 2),
        "newlines in content are escaped"
    );
    let message = accumulate(&read_events(&out));
    assert_eq!(message["content"][0]["text"], "line one\nline two \u{e9}");
    assert_eq!(message["content"][1]["input"], json!({"s": "a\nb"}));
}

/// Reasoning without a signature (DeepSeek's or an OpenAI-compatible server's
/// `reasoning_content`): a thinking block whose signature stays "" (none is made up: a
/// made-up signature would be rejected when replayed to Anthropic), closed before the text.
#[test]
fn unsigned_reasoning_is_closed_before_text() {
    let chunks = [
        ApiStreamChunk::reasoning("step 1"),
        ApiStreamChunk::text("answer"),
    ];
    let events = stream(&chunks, StopReason::EndTurn);
    assert!(
        events
            .iter()
            .all(|(_, d)| d["delta"]["type"] != "signature_delta")
    );
    let stop_of_thinking = events
        .iter()
        .position(|(n, d)| n == "content_block_stop" && d["index"] == 0)
        .unwrap();
    let start_of_text = events
        .iter()
        .position(|(n, d)| n == "content_block_start" && d["index"] == 1)
        .unwrap();
    assert!(stop_of_thinking < start_of_text);
    let message = accumulate(&events);
    assert_eq!(
        message["content"][0],
        json!({"type": "thinking", "thinking": "step 1", "signature": ""})
    );
    assert_eq!(message, collect(&chunks, StopReason::EndTurn));
}

/// A failure before anything was sent is an `error` event alone.
#[test]
fn error_before_start() {
    let mut enc = Encoder::new("m", "1");
    let mut out = Vec::new();
    enc.error(&ApiError::new(ErrorKind::RateLimited, "slow"), &mut out);
    let events = read_events(&out);
    assert_eq!(names(&events), ["error"]);
    assert_eq!(events[0].1["error"]["type"], "rate_limit_error");
}

/// Round trip: the message a client received (streamed and accumulated), sent back as the
/// assistant turn of the next request (as Claude Code replays it), parses to the same
/// thinking (with its signature), text and tool call.
#[test]
fn a_received_turn_parses_back() {
    let chunks = [
        ApiStreamChunk::reasoning("plan"),
        ApiStreamChunk::reasoning_signature("sig-9"),
        ApiStreamChunk::redacted_reasoning("RED"),
        ApiStreamChunk::text("ok"),
        ApiStreamChunk::tool_call("toolu_9", "Write", "{\"path\": \"a\"}"),
    ];
    let message = accumulate(&stream(&chunks, StopReason::ToolUse));
    let body = json!({
        "model": "m", "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": message["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "done"}]}
        ]
    });
    let request = super::super::parse_request(body.to_string().as_bytes()).unwrap();
    assert!(request.dropped.is_empty(), "{:?}", request.dropped);
    assert_eq!(
        request.messages[1].content,
        vec![
            ContentBlock::Thinking {
                thinking: "plan".into(),
                signature: "sig-9".into()
            },
            ContentBlock::RedactedThinking { data: "RED".into() },
            ContentBlock::Text { text: "ok".into() },
            ContentBlock::ToolUse {
                id: "toolu_9".into(),
                name: "Write".into(),
                input: json!({"path": "a"}),
                signature: None
            },
        ]
    );
}
