//! The non-streamed `chat.completion` object.

use serde_json::json;
use switchyard_api::{ApiStreamChunk, Usage};

use super::super::super::encode::{ResponseCollector, StopReason};
use super::super::Collector;

fn collect(chunks: &[ApiStreamChunk], stop: StopReason) -> serde_json::Value {
    let mut collector = Collector::new("openai/gpt-5", "req_9");
    for chunk in chunks {
        collector.chunk(chunk);
    }
    collector.finish(stop)
}

#[test]
fn a_text_answer_with_usage() {
    let usage = Usage {
        input_tokens: 4,
        output_tokens: 2,
        cache_read_tokens: Some(6),
        ..Usage::default()
    };
    let v = collect(
        &[
            ApiStreamChunk::text("Hello"),
            ApiStreamChunk::text(" there"),
            ApiStreamChunk::Usage(usage),
        ],
        StopReason::EndTurn,
    );
    assert_eq!(v["id"], "chatcmpl-req_9");
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "openai/gpt-5");
    assert!(v["created"].as_u64().is_some());
    assert_eq!(
        v["choices"],
        json!([{"index": 0, "logprobs": null, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Hello there", "refusal": null}}])
    );
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12,
               "prompt_tokens_details": {"cached_tokens": 6},
               "completion_tokens_details": {"reasoning_tokens": 0}})
    );
}

#[test]
fn a_tool_only_answer_has_null_content_and_whole_calls() {
    let v = collect(
        &[
            ApiStreamChunk::reasoning("Need the file."),
            ApiStreamChunk::tool_call("c1", "read", "{\"p\":"),
            ApiStreamChunk::tool_call("c2", "now", ""),
            ApiStreamChunk::tool_call("c1", "read", "1}"),
        ],
        StopReason::ToolUse,
    );
    let message = &v["choices"][0]["message"];
    assert_eq!(message["content"], serde_json::Value::Null);
    assert_eq!(message["reasoning_content"], "Need the file.");
    assert_eq!(
        message["tool_calls"],
        json!([
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"p\":1}"}},
            {"id": "c2", "type": "function", "function": {"name": "now", "arguments": "{}"}},
        ])
    );
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert!(v.get("usage").is_none(), "no usage reported: none invented");
}

#[test]
fn an_answer_cut_by_the_limit_and_an_empty_one() {
    let v = collect(&[ApiStreamChunk::text("Once upon")], StopReason::MaxTokens);
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    let v = collect(&[], StopReason::EndTurn);
    assert_eq!(v["choices"][0]["message"]["content"], "");
    assert!(v["choices"][0]["message"].get("tool_calls").is_none());
    assert!(
        v["choices"][0]["message"]
            .get("reasoning_content")
            .is_none()
    );
}

#[test]
fn text_and_tool_calls_together_end_in_tool_calls() {
    let v = collect(
        &[
            ApiStreamChunk::text("Sure."),
            ApiStreamChunk::tool_call("c", "f", "{}"),
        ],
        StopReason::EndTurn,
    );
    assert_eq!(v["choices"][0]["message"]["content"], "Sure.");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
}
