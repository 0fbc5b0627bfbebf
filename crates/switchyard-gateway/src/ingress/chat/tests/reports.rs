//! Public reports of Chat Completions going wrong through gateways and proxies, each turned
//! into a test of this dialect (the link is on each test).

use serde_json::{Value, json};
use switchyard_api::{ApiError, ApiStreamChunk, ContentBlock, ErrorKind, Usage};

use super::super::super::encode::{ResponseCollector, StopReason, StreamEncoder};
use super::super::{Collector, Encoder};
use super::{accumulate, choices, encode, events, parse};

/// A text preamble, then two calls whose arguments arrive in fragments.
fn preamble_and_two_calls() -> Vec<ApiStreamChunk> {
    vec![
        ApiStreamChunk::reasoning("Plan."),
        ApiStreamChunk::text("Let me look that up."),
        ApiStreamChunk::tool_call("call_1", "get_weather", "{\"city\":"),
        ApiStreamChunk::tool_call("call_1", "get_weather", "\"Zurich\",\"unit\":\"C\"}"),
        ApiStreamChunk::tool_call("call_2", "get_time", "{\"tz\":\"CET\"}"),
    ]
}

/// https://github.com/BerriAI/litellm/issues/28735 — the `include_usage` chunk must have
/// `choices: []` (OpenAI: "the choices field will always be an empty array"), and it comes
/// last before `[DONE]`.
#[test]
fn litellm_28735_the_usage_chunk_has_empty_choices() {
    let chunks = [
        ApiStreamChunk::text("Hello."),
        ApiStreamChunk::Usage(Usage {
            input_tokens: 13,
            output_tokens: 20,
            ..Usage::default()
        }),
    ];
    let events = encode(&chunks, StopReason::EndTurn, true);
    let n = events.len();
    assert_eq!(events[n - 2]["choices"], json!([]));
    assert_eq!(events[n - 2]["usage"]["total_tokens"], 33);
    for event in &events[..n - 2] {
        assert_eq!(event["choices"].as_array().map(Vec::len), Some(1));
        assert!(event.get("usage").is_none());
    }
}

/// https://github.com/RayBytes/ChatMock/pull/114 — a streamed answer with commentary and tool
/// calls had two `finish_reason` chunks (`tool_calls`, then `stop`); clients that honour the
/// last dropped the calls. Exactly one finish reason, and it is `tool_calls`.
#[test]
fn chatmock_114_one_finish_reason_and_it_is_tool_calls() {
    let events = encode(&preamble_and_two_calls(), StopReason::EndTurn, true);
    let reasons: Vec<Value> = choices(&events)
        .iter()
        .map(|c| c["finish_reason"].clone())
        .filter(|r| !r.is_null())
        .collect();
    assert_eq!(reasons, vec![json!("tool_calls")]);
}

/// https://github.com/router-for-me/CLIProxyAPI/pull/27 — streamed `delta.tool_calls[]` items
/// without `index` made opencode reject the chunk ("expected number, got undefined"). Every
/// item of every tool-call delta carries an integer `index`.
#[test]
fn cliproxyapi_27_every_tool_call_delta_has_an_index() {
    let events = encode(&preamble_and_two_calls(), StopReason::ToolUse, false);
    let items: Vec<Value> = choices(&events)
        .iter()
        .filter_map(|c| c["delta"].get("tool_calls").cloned())
        .flat_map(|calls| calls.as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(items.len(), 3);
    assert!(items.iter().all(|item| item["index"].is_u64()), "{items:?}");
}

/// https://github.com/router-for-me/CLIProxyAPI/issues/5851 — the first tool call came out
/// with `index: 1` (counted after the text) and a call cut by the output limit ended in
/// `stop`, so the client never resolved the call. Indexes count calls from 0, and a cut
/// answer ends in `length`.
#[test]
fn cliproxyapi_5851_indexes_count_calls_from_zero_and_a_cut_call_is_length() {
    let events = encode(&preamble_and_two_calls(), StopReason::MaxTokens, false);
    let choices = choices(&events);
    let first = choices
        .iter()
        .find_map(|c| c["delta"].get("tool_calls"))
        .unwrap();
    assert_eq!(first[0]["index"], 0);
    assert_eq!(first[0]["id"], "call_1");
    assert_eq!(choices.last().unwrap()["finish_reason"], "length");
}

/// https://github.com/Soju06/codex-lb/issues/284 and https://github.com/lidge-jun/opencodex/issues/361
/// — arguments sent both as fragments and again whole, so clients that join fragments got
/// `{…}{…}`. Joined as the SDK joins them, each call's arguments are the model's, once, in
/// the stream and in the whole answer.
#[test]
fn codex_lb_284_arguments_are_never_repeated() {
    let expected = json!([
        {"index": 0, "id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\":\"Zurich\",\"unit\":\"C\"}"}},
        {"index": 1, "id": "call_2", "type": "function",
         "function": {"name": "get_time", "arguments": "{\"tz\":\"CET\"}"}},
    ]);
    let events = encode(&preamble_and_two_calls(), StopReason::ToolUse, true);
    assert_eq!(accumulate(&choices(&events))["tool_calls"], expected);
    let mut collector = Collector::new("m", "r");
    for chunk in preamble_and_two_calls() {
        collector.chunk(&chunk);
    }
    let whole = collector.finish(StopReason::ToolUse);
    let calls = whole["choices"][0]["message"]["tool_calls"]
        .as_array()
        .unwrap()
        .clone();
    for (call, want) in calls.iter().zip(expected.as_array().unwrap()) {
        assert_eq!(call["function"], want["function"]);
    }
}

/// https://github.com/open-webui/open-webui/pull/22235 and https://github.com/epam/ai-dial-sdk/pull/239
/// — a name (or `type`) re-sent on later fragments is doubled by clients that concatenate
/// (`my_toolmy_tool`, `functionfunction`), and the call silently fails. `id`, `type` and
/// `name` go out once per call.
#[test]
fn open_webui_22235_the_name_id_and_type_are_sent_once() {
    let events = encode(&preamble_and_two_calls(), StopReason::ToolUse, false);
    let message = accumulate(&choices(&events));
    assert_eq!(message["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(message["tool_calls"][0]["type"], "function");
    assert_eq!(message["tool_calls"][0]["id"], "call_1");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["content"], "Let me look that up.");
    assert_eq!(message["reasoning_content"], "Plan.");
}

/// https://github.com/vllm-project/vllm/pull/19662 and https://github.com/su-kaka/gcli2api/issues/403
/// — chunks without a `finish_reason` key, or with `finish_reason: "stop"` on every
/// intermediate reasoning and tool chunk, ended clients' streams early. Every chunk has the
/// key; only the last is non-null.
#[test]
fn vllm_19662_finish_reason_is_null_until_the_end() {
    let events = encode(&preamble_and_two_calls(), StopReason::ToolUse, true);
    let choices = choices(&events);
    let (last, rest) = choices.split_last().unwrap();
    assert!(
        rest.iter()
            .all(|c| c.get("finish_reason") == Some(&Value::Null))
    );
    assert_eq!(last["finish_reason"], "tool_calls");
    assert_eq!(last["delta"], json!({}));
}

/// https://github.com/algorithmicsuperintelligence/optillm/pull/329 — a proxy re-streamed
/// only `message.content`, so a tool-call answer reached agents as a bare `[DONE]`. A
/// tool-only answer streams its calls.
#[test]
fn optillm_329_a_tool_only_answer_is_not_a_bare_done() {
    let events = encode(
        &[ApiStreamChunk::tool_call("c", "ls", "{}")],
        StopReason::ToolUse,
        false,
    );
    let message = accumulate(&choices(&events));
    assert_eq!(message["tool_calls"][0]["function"]["name"], "ls");
    assert_eq!(message["content"], "", "only the opening's empty content");
}

/// https://github.com/wicm84266964/Buddy2api/pull/69 (and Portkey#1797 in GATEWAY.md) — a cut
/// upstream stream was turned into a clean `finish_reason: "stop"`, and the agent ended its
/// tool loop on half an answer. A failure after content is an error event: no finish reason,
/// no `[DONE]`.
#[test]
fn buddy2api_69_a_cut_stream_never_ends_clean() {
    let mut encoder = Encoder::new("m", "r");
    let mut out = Vec::new();
    encoder.chunk(&ApiStreamChunk::text("half an ans"), &mut out);
    encoder.chunk(
        &ApiStreamChunk::tool_call("c", "write", "{\"path\":"),
        &mut out,
    );
    encoder.error(&ApiError::new(ErrorKind::Network, "stream cut"), &mut out);
    let events = events(&out);
    assert!(events.iter().all(|e| e != "[DONE]"));
    assert!(events.last().unwrap().get("error").is_some());
    assert!(
        events
            .iter()
            .filter_map(|e| e["choices"].get(0))
            .all(|c| c["finish_reason"].is_null())
    );
}

/// https://github.com/NousResearch/hermes-agent/issues/11906 — an assistant turn with tool
/// calls and `content: ""` became an empty text block, which Anthropic rejects ("text content
/// blocks must be non-empty"). Empty text is left out.
#[test]
fn hermes_11906_empty_assistant_text_is_left_out() {
    let r = parse(&json!({"model": "m", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "t", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "t", "content": "ok"}
    ]}));
    assert!(matches!(
        r.messages[1].content.as_slice(),
        [ContentBlock::ToolUse { .. }]
    ));
}

/// https://github.com/Neroued/ninfer/pull/57 — tool messages whose `content` is an array of
/// text parts (Qwen Code's default) were refused. They are read, parts joined.
#[test]
fn ninfer_57_tool_content_may_be_text_parts() {
    let r = parse(&json!({"model": "m", "messages": [
        {"role": "tool", "tool_call_id": "t", "content": [{"type": "text", "text": "line 1"}, {"type": "text", "text": "line 2"}]}
    ]}));
    assert!(matches!(&r.messages[0].content[0],
        ContentBlock::ToolResult { content, .. } if content == "line 1\nline 2"));
}

/// https://github.com/CommandCodeAI/command-code/issues/820 — assistant messages whose
/// `content` is an array of parts were silently blanked (200, the turn lost). Text and
/// refusal parts are kept.
#[test]
fn command_code_820_assistant_parts_are_kept() {
    let r = parse(&json!({"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello!"}, {"type": "refusal", "refusal": "Not that."}]}
    ]}));
    assert_eq!(
        r.messages[1].content,
        vec![
            ContentBlock::Text {
                text: "Hello!".into()
            },
            ContentBlock::Text {
                text: "Not that.".into()
            }
        ]
    );
}

/// https://github.com/barbacane-dev/barbacane/pull/133 — tool results must reach Anthropic in
/// one user turn after the calls; parallel calls' results arrive as consecutive `tool`
/// messages and are merged.
#[test]
fn barbacane_133_parallel_results_are_one_user_turn() {
    let r = parse(&json!({"model": "m", "messages": [
        {"role": "user", "content": "weather and time?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "w", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "sunny"},
        {"role": "tool", "tool_call_id": "b", "content": "noon"}
    ]}));
    assert_eq!(r.messages.len(), 3);
    let ids: Vec<&str> = r.messages[2]
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, vec!["a", "b"]);
}
