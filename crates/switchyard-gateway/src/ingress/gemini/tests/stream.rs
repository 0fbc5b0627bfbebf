//! Answers as Gemini's stream and whole response, as the Gemini SDKs and Gemini CLI read them.

use serde_json::{Value, json};
use switchyard_api::{ApiError, ApiStreamChunk, ErrorKind, Usage};

use super::super::super::encode::{StopReason, StreamEncoder};
use super::{all_parts, collect, encode, encoder, events, streamed};

fn usage() -> ApiStreamChunk {
    ApiStreamChunk::Usage(Usage {
        input_tokens: 100,
        output_tokens: 30,
        cache_read_tokens: Some(50),
        cache_write_tokens: Some(10),
        thoughts_tokens: Some(12),
        ..Usage::default()
    })
}

#[test]
fn each_chunk_is_one_response_and_the_last_has_the_finish_and_the_usage() {
    let events = encode(
        &[
            ApiStreamChunk::text("Hello"),
            ApiStreamChunk::text(" world"),
            usage(),
        ],
        StopReason::EndTurn,
    );
    assert_eq!(events.len(), 3);
    for e in &events {
        assert_eq!(
            (e["modelVersion"].as_str(), e["responseId"].as_str()),
            (Some("m"), Some("req_1"))
        );
        assert_eq!(e["candidates"][0]["content"]["role"], "model");
        assert_eq!(e["candidates"][0]["index"], 0);
    }
    assert_eq!(
        all_parts(&events),
        [json!({"text": "Hello"}), json!({"text": " world"})]
    );
    assert!(events[0]["candidates"][0].get("finishReason").is_none());
    assert!(events[0].get("usageMetadata").is_none());
    let last = &events[2];
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        last["usageMetadata"],
        json!({"promptTokenCount": 160, "candidatesTokenCount": 18, "totalTokenCount": 190,
               "cachedContentTokenCount": 50, "thoughtsTokenCount": 12})
    );
}

#[test]
fn a_tool_call_is_one_whole_part_with_its_id_args_and_signature() {
    let events = encode(
        &[
            ApiStreamChunk::text("Writing it."),
            ApiStreamChunk::tool_call("toolu_1", "write_file", "{\"file_path\":"),
            ApiStreamChunk::ToolCalls {
                call_id: None,
                id: "toolu_1".into(),
                name: String::new(),
                arguments_delta: "\"a.txt\"}".into(),
                signature: Some("sig-1".into()),
            },
            ApiStreamChunk::tool_call("toolu_2", "read_file", ""),
        ],
        StopReason::ToolUse,
    );
    let parts = all_parts(&events);
    assert_eq!(
        parts,
        [
            json!({"text": "Writing it."}),
            json!({"functionCall": {"name": "write_file", "args": {"file_path": "a.txt"}, "id": "toolu_1"},
                   "thoughtSignature": "sig-1"}),
            json!({"functionCall": {"name": "read_file", "args": {}, "id": "toolu_2"}}),
        ]
    );
    let last = events.last().unwrap();
    assert_eq!(
        last["candidates"][0]["finishReason"], "STOP",
        "Gemini ends a call's turn with STOP"
    );
}

#[test]
fn a_calls_whole_arguments_sent_again_after_their_fragments_are_kept_once() {
    let events = encode(
        &[
            ApiStreamChunk::tool_call("c1", "ls", "{\"dir\":"),
            ApiStreamChunk::tool_call("c1", "", "\"src\"}"),
            ApiStreamChunk::tool_call("c1", "", "{\"dir\":\"src\"}"),
        ],
        StopReason::ToolUse,
    );
    assert_eq!(
        all_parts(&events),
        [json!({"functionCall": {"name": "ls", "args": {"dir": "src"}, "id": "c1"}})]
    );
}

#[test]
fn thoughts_are_shown_only_when_asked_and_their_signature_moves_to_the_next_part() {
    let chunks = [
        ApiStreamChunk::reasoning("Let me think."),
        ApiStreamChunk::Reasoning {
            reasoning: String::new(),
            details: None,
            signature: Some("sig-t".into()),
            redacted_data: None,
            id: None,
        },
        ApiStreamChunk::text("Done."),
    ];
    let shown = all_parts(&encode(&chunks, StopReason::EndTurn));
    assert_eq!(
        shown,
        [
            json!({"text": "Let me think.", "thought": true}),
            json!({"text": "", "thought": true, "thoughtSignature": "sig-t"}),
            json!({"text": "Done."}),
        ]
    );
    let hidden = all_parts(&events(&streamed(&chunks, StopReason::EndTurn, true, true)));
    assert_eq!(
        hidden,
        [json!({"text": "Done.", "thoughtSignature": "sig-t"})]
    );
}

#[test]
fn the_output_limit_is_max_tokens_and_bad_arguments_a_malformed_call() {
    let cut = encode(&[ApiStreamChunk::text("partial")], StopReason::MaxTokens);
    assert_eq!(
        cut.last().unwrap()["candidates"][0]["finishReason"],
        "MAX_TOKENS"
    );
    let bad = encode(
        &[ApiStreamChunk::tool_call("c1", "edit", "{\"path\": ")],
        StopReason::ToolUse,
    );
    assert_eq!(
        all_parts(&bad),
        Vec::<Value>::new(),
        "a call that is not whole is not sent"
    );
    assert_eq!(
        bad.last().unwrap()["candidates"][0]["finishReason"],
        "MALFORMED_FUNCTION_CALL"
    );
}

#[test]
fn without_alt_sse_the_stream_is_one_json_array() {
    let bytes = streamed(
        &[
            ApiStreamChunk::text("a"),
            ApiStreamChunk::text("b"),
            usage(),
        ],
        StopReason::EndTurn,
        false,
        false,
    );
    let array: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(array.len(), 3);
    assert_eq!(array[2]["candidates"][0]["finishReason"], "STOP");
    assert!(bytes.starts_with(b"[{"));
}

#[test]
fn a_failure_mid_stream_is_googles_error_object_never_a_finish() {
    let error = ApiError::new(ErrorKind::Overloaded, "The model is overloaded.");
    let mut sse = encoder(true, false);
    let mut out = Vec::new();
    sse.chunk(&ApiStreamChunk::text("half"), &mut out);
    let events_end = out.len();
    sse.error(&error, &mut out);
    sse.finish(StopReason::EndTurn, &mut out);
    let tail: Value = serde_json::from_slice(&out[events_end..]).unwrap();
    assert_eq!(
        (
            tail["error"]["code"].as_u64(),
            tail["error"]["status"].as_str()
        ),
        (Some(503), Some("UNAVAILABLE"))
    );
    assert!(!String::from_utf8_lossy(&out).contains("finishReason"));
    let mut array = encoder(false, false);
    let mut out = Vec::new();
    array.chunk(&ApiStreamChunk::text("half"), &mut out);
    array.error(&error, &mut out);
    let elements: Vec<Value> = serde_json::from_slice(&out).unwrap();
    assert_eq!(elements.len(), 2);
    assert_eq!(elements[1]["error"]["status"], "UNAVAILABLE");
}

#[test]
fn relayed_events_become_array_elements_and_mirrored_chunks_write_nothing() {
    let mut array = encoder(false, false);
    let mut out = Vec::new();
    array.mirror(&ApiStreamChunk::text("a"));
    array.relay(b"data: {\"candidates\": [{\"index\": 0}]}\n\n", &mut out);
    array.relay(
        b"data: {\"candidates\": [{\"finishReason\": \"STOP\"}]}\n\n",
        &mut out,
    );
    array.end_relayed(&mut out);
    let elements: Vec<Value> = serde_json::from_slice(&out).unwrap();
    assert_eq!(elements.len(), 2);
    assert_eq!(elements[1]["candidates"][0]["finishReason"], "STOP");
    let mut sse = encoder(true, false);
    let mut out = Vec::new();
    let event = b"data: {\"candidates\": []}\n\n";
    sse.mirror(&ApiStreamChunk::text("a"));
    sse.relay(event, &mut out);
    sse.end_relayed(&mut out);
    assert_eq!(out, event, "server-sent events go as they came");
}

#[test]
fn a_whole_answer_joins_its_text_and_keeps_calls_whole() {
    let chunks = [
        ApiStreamChunk::reasoning("Plan"),
        ApiStreamChunk::reasoning(" more."),
        ApiStreamChunk::text("Hel"),
        ApiStreamChunk::text("lo."),
        ApiStreamChunk::tool_call("c1", "ls", "{\"dir\":"),
        ApiStreamChunk::tool_call("c1", "ls", "\".\"}"),
        usage(),
    ];
    let whole = collect(&chunks, StopReason::ToolUse, false);
    assert_eq!(
        whole["candidates"][0]["content"]["parts"],
        json!([{"text": "Plan more.", "thought": true}, {"text": "Hello."},
               {"functionCall": {"name": "ls", "args": {"dir": "."}, "id": "c1"}}])
    );
    assert_eq!(whole["candidates"][0]["finishReason"], "STOP");
    assert_eq!(whole["usageMetadata"]["totalTokenCount"], 190);
    let hidden = collect(&chunks, StopReason::EndTurn, true);
    assert_eq!(
        hidden["candidates"][0]["content"]["parts"][0],
        json!({"text": "Hello."})
    );
}
