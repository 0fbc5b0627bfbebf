//! Public reports of Gemini-API gateways and translators going wrong, each turned into a test of
//! this dialect (the link is on each test).

use serde_json::{Value, json};
use switchyard_api::{ApiError, ApiStreamChunk, ContentBlock, ErrorKind, Usage};

use super::super::super::encode::{StopReason, StreamEncoder};
use super::super::parse::parse_call;
use super::{all_parts, encode, encoder, parse};

/// The tool-use id of each tool result in `body`'s conversation, in order.
fn result_ids(body: &Value) -> Vec<String> {
    let request = parse(body);
    (request.messages.iter().flat_map(|m| &m.content))
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
            _ => None,
        })
        .collect()
}

/// The id of each call in `body`'s conversation, in order.
fn call_ids(body: &Value) -> Vec<String> {
    let request = parse(body);
    (request.messages.iter().flat_map(|m| &m.content))
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// https://github.com/BerriAI/litellm/issues/18847 — Gemini CLI through LiteLLM's Gemini door
/// failed with "multiple values for keyword argument 'stream'": the URL's method and the body
/// each said whether to stream. Here only the URL does; a `stream` field is not Gemini's.
#[test]
fn litellm_18847_the_url_alone_decides_the_stream() {
    let body = json!({"contents": [{"parts": [{"text": "hi"}]}], "stream": false});
    let target = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    let r = parse_call(target, body.to_string().as_bytes()).unwrap();
    assert!(r.stream);
    let whole = "/v1beta/models/gemini-2.5-flash:generateContent";
    let body = json!({"contents": [{"parts": [{"text": "hi"}]}], "stream": true});
    assert!(
        !parse_call(whole, body.to_string().as_bytes())
            .unwrap()
            .stream
    );
}

/// https://github.com/BerriAI/litellm/issues/7830 — "invalid literal for int() with base 10:
/// 'generateContent'": the `model:method` path was split at the wrong colon. The method follows
/// the last colon, so a model id holding one (Ollama's `qwen3:8b`) keeps it.
#[test]
fn litellm_7830_the_method_follows_the_last_colon() {
    let body = br#"{"contents": [{"parts": [{"text": "hi"}]}]}"#;
    let r = parse_call(
        "/v1beta/models/ollama/qwen3:8b:streamGenerateContent?alt=sse",
        body,
    )
    .unwrap();
    assert_eq!((r.model.as_str(), r.stream), ("ollama/qwen3:8b", true));
}

/// https://github.com/router-for-me/CLIProxyAPI/issues/3878 — the Gemini → Claude translator
/// ignored the ids a client gave its `functionCall`s and `functionResponse`s and paired them in
/// arrival order, so responses sent in another order answered the wrong call. Here the ids are
/// kept and a response finds its call by id.
#[test]
fn cliproxyapi_3878_the_clients_ids_pair_the_responses() {
    let body = json!({"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [
            {"functionCall": {"id": "call_a", "name": "read", "args": {"p": "a"}}},
            {"functionCall": {"id": "call_b", "name": "read", "args": {"p": "b"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "call_b", "name": "read", "response": {"output": "B"}}},
            {"functionResponse": {"id": "call_a", "name": "read", "response": {"output": "A"}}}]}
    ]});
    assert_eq!(call_ids(&body), ["call_a", "call_b"]);
    assert_eq!(result_ids(&body), ["call_b", "call_a"]);
}

/// https://github.com/router-for-me/CLIProxyAPI/issues/4939 — calls without ids got random ids,
/// different on every retry, and responses were matched by one global queue, so A/B/A/B calls
/// answered by name in another order mispaired. Here ids of the place are the same every time
/// and a response without an id takes the first open call of its name.
#[test]
fn cliproxyapi_4939_ids_without_ids_are_deterministic_and_paired_by_name() {
    let body = json!({"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "a", "args": {}}}, {"functionCall": {"name": "b", "args": {}}},
            {"functionCall": {"name": "a", "args": {}}}, {"functionCall": {"name": "b", "args": {}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "b", "response": {}}}, {"functionResponse": {"name": "b", "response": {}}},
            {"functionResponse": {"name": "a", "response": {}}}, {"functionResponse": {"name": "a", "response": {}}}]}
    ]});
    assert_eq!(
        call_ids(&body),
        ["call_1_0", "call_1_1", "call_1_2", "call_1_3"]
    );
    assert_eq!(call_ids(&body), call_ids(&body));
    assert_eq!(
        result_ids(&body),
        ["call_1_1", "call_1_3", "call_1_0", "call_1_2"]
    );
}

/// https://github.com/router-for-me/CLIProxyAPI/issues/5149 — an id made up for a call without
/// one collided with an id the client had given another call. Here a made-up id is never one the
/// client sent.
#[test]
fn cliproxyapi_5149_a_made_up_id_never_takes_a_sent_one() {
    let body = json!({"contents": [
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
        {"role": "model", "parts": [{"functionCall": {"id": "call_0_0", "name": "g", "args": {}}}]},
        {"role": "user", "parts": [{"text": "go on"}]}
    ]});
    let ids = call_ids(&body);
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    assert_eq!(ids[1], "call_0_0");
}

/// https://github.com/router-for-me/CLIProxyAPI/issues/2104 — `functionResponse`s without a
/// `name` reached Gemini as they came and were refused ("Name cannot be empty"). Here a response
/// finds its call by id, so a Gemini body built from it names the call's function.
#[test]
fn cliproxyapi_2104_a_response_without_a_name_answers_its_call() {
    let body = json!({"contents": [
        {"role": "model", "parts": [{"functionCall": {"id": "c7", "name": "grep", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "c7", "response": {"output": "2 hits"}}}]}
    ]});
    assert_eq!(result_ids(&body), ["c7"]);
}

/// https://github.com/Portkey-AI/gateway/issues/1442 and
/// https://github.com/diegosouzapw/OmniRoute/issues/3688 (also
/// https://github.com/BerriAI/litellm/issues/16893) — Gemini 3 refuses a replayed
/// `functionCall` without its `thoughtSignature` ("Function call is missing a
/// thought_signature"), and gateways dropped it both ways. Here a call's signature is kept from
/// the request and given on the answer's call.
#[test]
fn portkey_1442_a_calls_thought_signature_is_kept_both_ways() {
    let body = json!({"contents": [
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": "Q1NJ"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"output": "a"}}}]}
    ]});
    let r = parse(&body);
    assert!(matches!(&r.messages[0].content[0],
        ContentBlock::ToolUse { signature: Some(s), .. } if s == "Q1NJ"));
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
    let answer = encode(
        &[ApiStreamChunk::ToolCalls {
            call_id: None,
            id: "fc_1".into(),
            name: "ls".into(),
            arguments_delta: "{}".into(),
            signature: Some("TkVX".into()),
        }],
        StopReason::ToolUse,
    );
    assert_eq!(all_parts(&answer)[0]["thoughtSignature"], "TkVX");
}

/// https://github.com/CopilotKit/aimock/pull/19 — Gemini answers without an `id` on their
/// `functionCall`s made Google's ADK fail ("FunctionCall NOT FOUND"). Here every call of an
/// answer has the id the route gave it, which the client sends back with its response.
#[test]
fn aimock_19_every_call_of_an_answer_has_an_id() {
    let answer = encode(
        &[
            ApiStreamChunk::tool_call("call_x1", "a", "{}"),
            ApiStreamChunk::tool_call("call_x2", "b", "{\"k\":1}"),
        ],
        StopReason::ToolUse,
    );
    let ids: Vec<Value> = (all_parts(&answer).iter())
        .map(|p| p["functionCall"]["id"].clone())
        .collect();
    assert_eq!(ids, [json!("call_x1"), json!("call_x2")]);
}

/// https://github.com/NousResearch/hermes-agent/pull/46077 — Gemini 3 expects the exact id of
/// each call back on its `functionResponse`; an adapter that replaced it broke parallel calls.
/// Here the id a client sends back is the upstream call's id, unchanged.
#[test]
fn hermes_46077_the_upstream_calls_id_comes_back_unchanged() {
    let answer = encode(
        &[ApiStreamChunk::tool_call("toolu_01ABC", "read", "{}")],
        StopReason::ToolUse,
    );
    let id = all_parts(&answer)[0]["functionCall"]["id"].clone();
    let next = json!({"contents": [
        {"role": "model", "parts": [{"functionCall": {"id": id, "name": "read", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": id, "name": "read", "response": {"output": "x"}}}]}
    ]});
    assert_eq!(result_ids(&next), ["toolu_01ABC"]);
}

/// https://github.com/gravitee-io/issues/issues/11788 — a native Gemini door answered
/// `streamGenerateContent` with OpenAI-format chunks (an empty answer for the Gemini SDKs, no
/// usage), and stripped `inlineData` images. Here the chunks are `GenerateContentResponse`s with
/// `usageMetadata`, and an image reaches the route.
#[test]
fn gravitee_11788_gemini_chunks_with_usage_and_images_kept() {
    let events = encode(
        &[
            ApiStreamChunk::text("A cat."),
            ApiStreamChunk::Usage(Usage {
                input_tokens: 1290,
                output_tokens: 3,
                ..Usage::default()
            }),
        ],
        StopReason::EndTurn,
    );
    assert_eq!(
        events[0]["candidates"][0]["content"]["parts"][0]["text"],
        "A cat."
    );
    assert!(events[0].get("choices").is_none());
    assert_eq!(
        events.last().unwrap()["usageMetadata"]["promptTokenCount"],
        1290
    );
    let body = json!({"contents": [{"parts": [{"text": "What is this?"},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]}]});
    let r = parse(&body);
    assert!(matches!(
        &r.messages[0].content[1],
        ContentBlock::Image { .. }
    ));
    assert!(r.dropped.is_empty());
}

/// https://github.com/diegosouzapw/OmniRoute/issues/4177 and
/// https://github.com/theopenco/llmgateway/pull/3616 — Gemini sends a mid-stream failure as its
/// error object on a 200; gateways that swallowed it ended the answer with `STOP`, a truncated
/// answer passed off as whole. Here a failure after content is the error object, with its code
/// and status, and no finish reason.
#[test]
fn omniroute_4177_a_failure_after_content_is_no_clean_stop() {
    let mut encoder = encoder(true, false);
    let mut out = Vec::new();
    encoder.chunk(&ApiStreamChunk::text("The first half"), &mut out);
    encoder.error(
        &ApiError::new(ErrorKind::RateLimited, "Quota exceeded."),
        &mut out,
    );
    let text = String::from_utf8(out).unwrap();
    assert!(!text.contains("finishReason"), "{text}");
    let tail = text.rsplit("\r\n\r\n").next().unwrap();
    let error: Value = serde_json::from_str(tail).unwrap();
    assert_eq!(error["error"]["code"], 429);
    assert_eq!(error["error"]["status"], "RESOURCE_EXHAUSTED");
}

/// https://github.com/agentgateway/agentgateway/issues/2717 — rewriting a Gemini client to an
/// OpenAI-compatible SDK loses `thinkingConfig` and thought signatures. Here the budget reaches
/// the route and thoughts come back as `thought: true` parts when asked for.
#[test]
fn agentgateway_2717_thinking_is_carried_and_thoughts_shown_when_asked() {
    let r = parse(&json!({"contents": [{"parts": [{"text": "hi"}]}],
        "generationConfig": {"thinkingConfig": {"thinkingBudget": 4096, "includeThoughts": true}}}));
    assert_eq!(r.overrides.thinking_budget_tokens, Some(4096));
    let events = encode(
        &[
            ApiStreamChunk::reasoning("Think."),
            ApiStreamChunk::text("Hi."),
        ],
        StopReason::EndTurn,
    );
    assert_eq!(
        all_parts(&events)[0],
        json!({"text": "Think.", "thought": true})
    );
}

/// https://github.com/BerriAI/litellm/issues/21584 — Gemini CLI through LiteLLM to Claude failed
/// with Anthropic's "tools.1.custom.input_schema.type: Field required": a declaration whose
/// schema had no top-level `type` went as it came. Here every tool's schema is an object's.
#[test]
fn litellm_21584_a_schema_without_a_type_is_an_objects() {
    let r = parse(&json!({"contents": [{"parts": [{"text": "hi"}]}],
    "tools": [{"functionDeclarations": [
        {"name": "a", "parametersJsonSchema": {"properties": {"p": {"type": "string"}}}},
        {"name": "b", "parameters": {"properties": {"q": {"type": "STRING"}}}},
        {"name": "c"}
    ]}]}));
    let schemas: Vec<&Value> = r.tools.iter().map(|t| &t.input_schema).collect();
    assert_eq!(schemas[0]["type"], "object");
    assert_eq!(schemas[0]["properties"]["p"]["type"], "string");
    assert_eq!(schemas[1]["type"], "object");
    assert_eq!(schemas[1]["properties"]["q"]["type"], "string");
    assert_eq!(schemas[2]["type"], "object");
}

/// https://github.com/BerriAI/litellm/issues/28777 — a Gemini door that always answered
/// `:streamGenerateContent` with server-sent events broke the google-genai SDK, which omits
/// `alt` and reads JSON ("Failed to parse response as JSON. Raw response: data: …"). Here only
/// `alt=sse` gets events; no `alt`, or `alt=json`, gets one JSON array.
#[test]
fn litellm_28777_without_alt_sse_the_stream_is_json() {
    let body = json!({"contents": [{"parts": [{"text": "hi"}]}]}).to_string();
    for (query, array) in [("", true), ("?alt=json", true), ("?alt=sse", false)] {
        let target = format!("/v1beta/models/m:streamGenerateContent{query}");
        let r = parse_call(&target, body.as_bytes()).unwrap();
        assert!(r.stream, "{target}");
        assert_eq!(r.json_array, array, "{target}");
    }
    let mut encoder = encoder(false, true);
    let mut out = Vec::new();
    encoder.chunk(&ApiStreamChunk::text("Hel"), &mut out);
    encoder.chunk(&ApiStreamChunk::text("lo"), &mut out);
    encoder.finish(StopReason::EndTurn, &mut out);
    let array: Vec<Value> = serde_json::from_slice(&out).unwrap();
    assert_eq!(array.len(), 3);
    assert_eq!(array[2]["candidates"][0]["finishReason"], "STOP");
}

/// https://github.com/lbjlaq/Antigravity-Manager/issues/3294 (a `:countTokens` refused, or
/// answered with a made-up 0) and https://github.com/snailyp/gemini-balance/issues/196 (Gemini
/// CLI's count failed on a part with no data). Here a Gemini CLI count, an empty part and a
/// content with no parts among its turns, is read and counted above 0.
#[test]
fn antigravity_3294_a_count_is_read_with_empty_parts_and_is_never_zero() {
    let body = json!({"contents": [
        {"role": "user", "parts": [{"text": "Summarise the README in this folder."}]},
        {"role": "model", "parts": [{}]},
        {"role": "user", "parts": []},
        {"role": "user", "parts": [{"text": "Then list the tests."}]}
    ]});
    let target = "/v1beta/models/gemini-2.5-pro:countTokens";
    let r = super::super::parse::parse_count(target, body.to_string().as_bytes()).unwrap();
    assert_eq!(r.model, "gemini-2.5-pro");
    assert_eq!(r.messages.len(), 2);
    assert!(crate::count::input_tokens(&r, "gemini-2.5-pro") > 0);
}
