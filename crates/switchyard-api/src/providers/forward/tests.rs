//! What a forwarded body keeps and changes, and the events given back (SPEC R14.2).

use serde_json::{Value, json};

use super::*;
use crate::config::{ApiConfiguration, Mode};
use crate::providers::resolve_mode;
use crate::wire::sse::SseDecoder;

fn mode(toml: &str) -> ResolvedMode {
    let config = ApiConfiguration::from_toml(toml, "t", |_| Some("k".into())).unwrap();
    resolve_mode(&config, Mode::Act).unwrap()
}

fn anthropic() -> ResolvedMode {
    mode("[act]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n")
}

fn prepared(
    dialect: ForwardDialect,
    body: Value,
    mode: &ResolvedMode,
    o: &RequestOverrides,
) -> Value {
    let Value::Object(mut map) = body else {
        panic!("a body is an object");
    };
    let model = json!(mode.model_id.strip_suffix(":1m").unwrap_or(&mode.model_id));
    prepare(dialect, &mut map, model, mode, o);
    Value::Object(map)
}

#[test]
fn a_messages_body_keeps_every_field_but_the_model_and_stream() {
    let body = json!({
        "model": "claude-opus-4-6", "max_tokens": 1024, "stream": false, "top_k": 5,
        "metadata": {"user_id": "u"}, "future_field": [1, 2],
        "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi",
            "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}],
        "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 2}]
    });
    let out = prepared(
        ForwardDialect::AnthropicMessages,
        body.clone(),
        &anthropic(),
        &RequestOverrides::default(),
    );
    let mut expected = body;
    expected["model"] = json!("claude-sonnet-4-5");
    expected["stream"] = json!(true);
    assert_eq!(out, expected);
}

#[test]
fn a_fitted_limit_and_a_thinking_budget_below_it_are_written() {
    let body = json!({"model": "m", "max_tokens": 64000, "messages": [],
        "thinking": {"type": "enabled", "budget_tokens": 31999}});
    let fitted = RequestOverrides {
        max_tokens: Some(16384),
        ..RequestOverrides::default()
    };
    let out = prepared(
        ForwardDialect::AnthropicMessages,
        body,
        &anthropic(),
        &fitted,
    );
    assert_eq!(out["max_tokens"], 16384);
    assert_eq!(
        out["thinking"],
        json!({"type": "enabled", "budget_tokens": 16383})
    );
}

#[test]
fn the_routes_thinking_goes_only_to_a_body_without_any() {
    let thinking = mode(
        "[act]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nthinking_budget_tokens = 2048\n",
    );
    let none = json!({"model": "m", "max_tokens": 4096, "temperature": 0.2, "messages": []});
    let out = prepared(
        ForwardDialect::AnthropicMessages,
        none,
        &thinking,
        &RequestOverrides::default(),
    );
    assert_eq!(
        out["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert!(
        out.get("temperature").is_none(),
        "Anthropic refuses a temperature beside thinking"
    );
    let adaptive =
        json!({"model": "m", "max_tokens": 4096, "messages": [], "thinking": {"type": "adaptive"}});
    let out = prepared(
        ForwardDialect::AnthropicMessages,
        adaptive,
        &thinking,
        &RequestOverrides::default(),
    );
    assert_eq!(
        out["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    let off =
        json!({"model": "m", "max_tokens": 4096, "messages": [], "thinking": {"type": "disabled"}});
    let out = prepared(
        ForwardDialect::AnthropicMessages,
        off,
        &thinking,
        &RequestOverrides::default(),
    );
    assert_eq!(out["thinking"], json!({"type": "disabled"}));
}

#[test]
fn a_chat_body_asks_for_usage_and_keeps_the_rest() {
    let chat = mode("[act]\nprovider = \"openai\"\nmodel = \"gpt-4.1\"\n");
    let body = json!({"model": "x", "messages": [{"role": "user", "content": "hi"}],
        "logprobs": true, "n": 2, "seed": 7, "stream_options": {"other": 1},
        "max_completion_tokens": 90000, "response_format": {"type": "json_object"}});
    let fitted = RequestOverrides {
        max_tokens: Some(32768),
        ..RequestOverrides::default()
    };
    let out = prepared(ForwardDialect::ChatCompletions, body, &chat, &fitted);
    assert_eq!(out["model"], "gpt-4.1");
    assert_eq!(out["stream"], true);
    assert_eq!(
        out["stream_options"],
        json!({"other": 1, "include_usage": true})
    );
    assert_eq!(out["max_completion_tokens"], 32768);
    assert!(
        out.get("max_tokens").is_none(),
        "no limit is added where the client set none"
    );
    assert_eq!(
        (
            out["n"].clone(),
            out["logprobs"].clone(),
            out["seed"].clone()
        ),
        (json!(2), json!(true), json!(7))
    );
    assert_eq!(out["response_format"], json!({"type": "json_object"}));
}

#[test]
fn the_routes_effort_goes_only_to_a_chat_body_without_one() {
    let effort =
        mode("[act]\nprovider = \"openai\"\nmodel = \"o3\"\nreasoning_effort = \"high\"\n");
    let out = prepared(
        ForwardDialect::ChatCompletions,
        json!({"messages": []}),
        &effort,
        &RequestOverrides::default(),
    );
    assert_eq!(out["reasoning_effort"], "high");
    let own = json!({"messages": [], "reasoning_effort": "low"});
    let out = prepared(
        ForwardDialect::ChatCompletions,
        own,
        &effort,
        &RequestOverrides::default(),
    );
    assert_eq!(out["reasoning_effort"], "low");
}

fn gemini(extra: &str) -> ResolvedMode {
    mode(&format!(
        "[act]\nprovider = \"gemini\"\nmodel = \"gemini-2.5-pro\"\n{extra}"
    ))
}

#[test]
fn a_gemini_body_gets_no_model_or_stream_and_keeps_every_field() {
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "cachedContent": "cachedContents/abc", "tools": [{"googleSearch": {}}],
        "generationConfig": {"topK": 40, "candidateCount": 1, "responseMimeType": "text/plain"}
    });
    let out = prepared(
        ForwardDialect::Gemini,
        body.clone(),
        &gemini(""),
        &RequestOverrides::default(),
    );
    assert_eq!(out, body);
}

#[test]
fn a_gemini_limit_and_budget_are_fitted_and_the_routes_thinking_fills_a_body_without_any() {
    let body = json!({"contents": [], "generationConfig": {"maxOutputTokens": 200000,
        "thinkingConfig": {"thinkingBudget": 99999, "includeThoughts": true}}});
    let fitted = RequestOverrides {
        max_tokens: Some(65536),
        thinking_budget_tokens: Some(32768),
        ..RequestOverrides::default()
    };
    let out = prepared(ForwardDialect::Gemini, body, &gemini(""), &fitted);
    assert_eq!(out["generationConfig"]["maxOutputTokens"], 65536);
    assert_eq!(
        out["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 32768, "includeThoughts": true})
    );
    // Dynamic (-1) and off (0) stay as the client set them.
    for set in [-1, 0] {
        let body = json!({"contents": [], "generationConfig": {"thinkingConfig": {"thinkingBudget": set}}});
        let out = prepared(ForwardDialect::Gemini, body, &gemini(""), &fitted);
        assert_eq!(
            out["generationConfig"]["thinkingConfig"]["thinkingBudget"],
            set
        );
    }
    let thinking = gemini("thinking_budget_tokens = 2048\n");
    let none = json!({"contents": []});
    let out = prepared(
        ForwardDialect::Gemini,
        none,
        &thinking,
        &RequestOverrides::default(),
    );
    assert_eq!(
        out["generationConfig"],
        json!({"thinkingConfig": {"thinkingBudget": 2048}})
    );
    let out = prepared(
        ForwardDialect::Gemini,
        json!({"contents": []}),
        &gemini(""),
        &RequestOverrides::default(),
    );
    assert_eq!(
        out,
        json!({"contents": []}),
        "nothing added without a route's thinking"
    );
}

/// Decodes `bytes` and re-frames every event, as the forwarding parser does.
fn reframed(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut decoder = SseDecoder::new();
    decoder
        .feed_with(bytes, |event| out.extend(crate::wire::sse::reframe(&event)))
        .unwrap();
    out
}

#[test]
fn providers_events_are_given_back_byte_for_byte() {
    let anthropic = b"event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n";
    assert_eq!(reframed(anthropic), anthropic);
    let chat = b"data: {\"choices\":[]}\n\ndata: [DONE]\n\n";
    assert_eq!(reframed(chat), chat);
    // Comments go; CRLF becomes LF; a multi-line data field keeps its lines.
    let odd = b": keep-alive\r\n\r\ndata: a\r\ndata: b\r\n\r\n";
    assert_eq!(reframed(odd), b"data: a\ndata: b\n\n");
}

#[test]
fn the_clients_beta_flags_join_the_providers_own_once_each() {
    let own = [(
        "anthropic-beta".to_owned(),
        "context-1m-2025-08-07".to_owned(),
    )];
    let mut extra = vec![(
        "anthropic-beta".to_owned(),
        "interleaved-thinking-2025-05-14, context-1m-2025-08-07".to_owned(),
    )];
    merge_headers(&own, &mut extra);
    assert_eq!(
        extra[0].1,
        "context-1m-2025-08-07,interleaved-thinking-2025-05-14"
    );
    let mut alone = vec![("anthropic-beta".to_owned(), "a,b".to_owned())];
    merge_headers(&[], &mut alone);
    assert_eq!(alone[0].1, "a,b");
}
