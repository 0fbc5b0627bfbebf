//! The stream, event by event: the SSE read back and every chunk checked.

use serde_json::{Value, json};
use switchyard_api::{ApiError, ApiStreamChunk, ErrorKind, Usage};

use super::super::super::encode::{StopReason, StreamEncoder};
use super::super::Encoder;
use super::{accumulate, choices, encode, events};

fn usage(input: u64, output: u64) -> ApiStreamChunk {
    ApiStreamChunk::Usage(Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    })
}

#[test]
fn text_opens_with_the_role_streams_content_and_ends_with_stop_and_done() {
    let events = encode(
        &[
            ApiStreamChunk::text("Hel"),
            ApiStreamChunk::text(""),
            ApiStreamChunk::text("lo"),
        ],
        StopReason::EndTurn,
        false,
    );
    assert_eq!(events.last(), Some(&json!("[DONE]")));
    let choices = choices(&events);
    let deltas: Vec<&Value> = choices.iter().map(|c| &c["delta"]).collect();
    assert_eq!(
        deltas,
        vec![
            &json!({"role": "assistant", "content": ""}),
            &json!({"content": "Hel"}),
            &json!({"content": "lo"}),
            &json!({}),
        ]
    );
    let reasons: Vec<&Value> = choices.iter().map(|c| &c["finish_reason"]).collect();
    assert_eq!(
        reasons,
        vec![&Value::Null, &Value::Null, &Value::Null, &json!("stop")]
    );
    assert!(choices.iter().all(|c| c["logprobs"].is_null()));
    assert_eq!(events.len(), 5, "no usage chunk unless asked");
}

#[test]
fn the_usage_chunk_comes_after_the_finish_with_the_latest_usage_in_openai_terms() {
    let early = usage(1, 1);
    let last = ApiStreamChunk::Usage(Usage {
        input_tokens: 10,
        output_tokens: 7,
        cache_read_tokens: Some(5),
        cache_write_tokens: Some(3),
        thoughts_tokens: Some(2),
        ..Usage::default()
    });
    let events = encode(
        &[
            early,
            ApiStreamChunk::text("a"),
            last,
            ApiStreamChunk::text("b"),
        ],
        StopReason::EndTurn,
        true,
    );
    let n = events.len();
    assert_eq!(events[n - 1], "[DONE]");
    let usage_chunk = &events[n - 2];
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["object"], "chat.completion.chunk");
    assert_eq!(
        usage_chunk["usage"],
        json!({
            "prompt_tokens": 18, "completion_tokens": 7, "total_tokens": 25,
            "prompt_tokens_details": {"cached_tokens": 5, "cache_write_tokens": 3},
            "completion_tokens_details": {"reasoning_tokens": 2},
        })
    );
    assert_eq!(events[n - 3]["choices"][0]["finish_reason"], "stop");
    let with_usage = events.iter().filter(|e| e.get("usage").is_some()).count();
    assert_eq!(with_usage, 1, "usage once, at the end");
}

#[test]
fn no_usage_reported_means_no_usage_chunk_rather_than_zeros() {
    let events = encode(&[ApiStreamChunk::text("a")], StopReason::EndTurn, true);
    assert!(events.iter().all(|e| e.get("usage").is_none()));
    assert_eq!(events.last(), Some(&json!("[DONE]")));
}

#[test]
fn reasoning_streams_as_reasoning_content_and_signatures_are_not_sent() {
    let events = encode(
        &[
            ApiStreamChunk::reasoning("Think"),
            ApiStreamChunk::reasoning("ing."),
            ApiStreamChunk::reasoning_signature("sig"),
            ApiStreamChunk::redacted_reasoning("opaque"),
            ApiStreamChunk::text("Answer"),
        ],
        StopReason::EndTurn,
        false,
    );
    let choices = choices(&events);
    assert_eq!(choices.len(), 5);
    assert_eq!(choices[1]["delta"], json!({"reasoning_content": "Think"}));
    assert_eq!(choices[2]["delta"], json!({"reasoning_content": "ing."}));
    assert_eq!(choices[3]["delta"], json!({"content": "Answer"}));
    let message = accumulate(&choices);
    assert_eq!(
        message,
        json!({"role": "assistant", "content": "Answer", "reasoning_content": "Thinking."})
    );
    let text = events.iter().map(Value::to_string).collect::<String>();
    assert!(!text.contains("sig") && !text.contains("opaque"));
}

#[test]
fn tool_calls_stream_with_a_stable_index_and_the_opening_fields_once() {
    let events = encode(
        &[
            ApiStreamChunk::text("Let me look."),
            ApiStreamChunk::tool_call("call_a", "read_file", ""),
            ApiStreamChunk::tool_call("call_a", "read_file", "{\"path\":"),
            ApiStreamChunk::tool_call("call_b", "list_files", "{\"dir\":\".\"}"),
            ApiStreamChunk::tool_call("call_a", "read_file", "\"a.txt\"}"),
            ApiStreamChunk::tool_call("call_b", "list_files", ""),
        ],
        StopReason::ToolUse,
        false,
    );
    let choices = choices(&events);
    let calls: Vec<&Value> = choices
        .iter()
        .filter_map(|c| c["delta"].get("tool_calls"))
        .collect();
    assert_eq!(
        calls,
        vec![
            &json!([{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}}]),
            &json!([{"index": 0, "function": {"arguments": "{\"path\":"}}]),
            &json!([{"index": 1, "id": "call_b", "type": "function", "function": {"name": "list_files", "arguments": "{\"dir\":\".\"}"}}]),
            &json!([{"index": 0, "function": {"arguments": "\"a.txt\"}"}}]),
        ],
        "an empty later fragment sends nothing"
    );
    let message = accumulate(&choices);
    assert_eq!(message["content"], "Let me look.");
    assert_eq!(
        message["tool_calls"],
        json!([
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
            {"index": 1, "id": "call_b", "type": "function", "function": {"name": "list_files", "arguments": "{\"dir\":\".\"}"}},
        ])
    );
    assert_eq!(choices.last().unwrap()["finish_reason"], "tool_calls");
}

#[test]
fn a_call_that_got_no_arguments_gets_an_empty_object_before_the_finish() {
    let events = encode(
        &[ApiStreamChunk::tool_call("c", "now", "")],
        StopReason::ToolUse,
        false,
    );
    let message = accumulate(&choices(&events));
    assert_eq!(message["tool_calls"][0]["function"]["arguments"], "{}");
    serde_json::from_str::<serde_json::Map<String, Value>>(
        message["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
}

#[test]
fn finish_reasons() {
    let last = |chunks: &[ApiStreamChunk], stop| {
        choices(&encode(chunks, stop, false)).last().unwrap()["finish_reason"].clone()
    };
    assert_eq!(
        last(&[ApiStreamChunk::text("a")], StopReason::MaxTokens),
        "length"
    );
    assert_eq!(
        last(&[ApiStreamChunk::text("a")], StopReason::ToolUse),
        "tool_calls"
    );
    assert_eq!(
        last(
            &[ApiStreamChunk::tool_call("c", "f", "{}")],
            StopReason::EndTurn
        ),
        "tool_calls",
        "an answer that called tools ends in tool_calls"
    );
    assert_eq!(
        last(
            &[ApiStreamChunk::tool_call("c", "f", "{}")],
            StopReason::MaxTokens
        ),
        "length"
    );
}

#[test]
fn an_empty_answer_still_opens_finishes_and_ends() {
    let events = encode(&[usage(3, 0)], StopReason::EndTurn, true);
    let choices = choices(&events);
    assert_eq!(choices.len(), 2);
    assert_eq!(choices[0]["delta"]["role"], "assistant");
    assert_eq!(choices[1]["finish_reason"], "stop");
    assert_eq!(events[events.len() - 2]["usage"]["prompt_tokens"], 3);
}

#[test]
fn a_failure_mid_stream_is_an_error_event_and_no_done() {
    let mut encoder = Encoder::new("anthropic/claude-sonnet-4-5", "req_1").include_usage(true);
    let mut out = Vec::new();
    encoder.chunk(&ApiStreamChunk::text("partial"), &mut out);
    encoder.chunk(&usage(5, 1), &mut out);
    let mut error = ApiError::new(ErrorKind::Network, "connection reset");
    error.provider_id = Some("anthropic".into());
    encoder.error(&error, &mut out);
    let before = out.len();
    encoder.finish(StopReason::EndTurn, &mut out);
    encoder.chunk(&ApiStreamChunk::text("late"), &mut out);
    encoder.error(&error, &mut out);
    assert_eq!(out.len(), before, "nothing after the error");
    let events = events(&out);
    assert_eq!(events.len(), 3);
    let last = events.last().unwrap();
    assert_eq!(last["error"]["type"], "server_error");
    assert_eq!(last["error"]["code"], "upstream_error");
    assert_eq!(
        last["error"]["message"],
        "anthropic could not be reached: connection reset"
    );
    assert!(!events.iter().any(|e| e == "[DONE]"));
    assert!(events.iter().all(|e| e.get("usage").is_none()));
}

#[test]
fn a_failure_before_content_is_the_error_event_alone() {
    let mut encoder = Encoder::new("m", "r");
    let mut out = Vec::new();
    encoder.start(&mut out);
    encoder.error(
        &ApiError::new(ErrorKind::RateLimited, "slow down"),
        &mut out,
    );
    let events = events(&out);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["error"]["type"], "rate_limit_error");
}

#[test]
fn finish_is_written_once() {
    let mut encoder = Encoder::new("m", "r");
    let mut out = Vec::new();
    encoder.chunk(&ApiStreamChunk::text("a"), &mut out);
    encoder.finish(StopReason::EndTurn, &mut out);
    let len = out.len();
    encoder.finish(StopReason::EndTurn, &mut out);
    encoder.chunk(&ApiStreamChunk::text("b"), &mut out);
    assert_eq!(out.len(), len);
    assert!(out.ends_with(b"data: [DONE]\n\n"));
}

#[test]
fn the_id_is_a_chatcmpl_id_and_kept_when_it_already_is_one() {
    let mut out = Vec::new();
    let mut encoder = Encoder::new("m", "chatcmpl-xyz");
    encoder.chunk(&ApiStreamChunk::text("a"), &mut out);
    let events = events(&out);
    assert!(events.iter().all(|e| e["id"] == "chatcmpl-xyz"));
}

#[test]
fn gemini_thought_signatures_ride_on_the_first_fragment_and_come_back() {
    let chunk = ApiStreamChunk::ToolCalls {
        call_id: None,
        id: "g1".into(),
        name: "ls".into(),
        arguments_delta: "{}".into(),
        signature: Some("c2ln".into()),
    };
    let events = encode(&[chunk], StopReason::ToolUse, false);
    let message = accumulate(&choices(&events));
    assert_eq!(
        message["tool_calls"][0]["extra_content"]["google"]["thought_signature"],
        "c2ln"
    );
    let mut call = message["tool_calls"][0].clone();
    call.as_object_mut().unwrap().remove("index");
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [call]}
    ]});
    let request = super::parse(&body);
    assert!(matches!(
        &request.messages[1].content[0],
        switchyard_api::ContentBlock::ToolUse { signature: Some(s), .. } if s == "c2ln"
    ));
}
