//! Claude Code's requests through the gateway to an OpenAI Chat Completions upstream (SPEC
//! R14.1, R14.2): public reports about Claude Code behind translating gateways, each turned
//! into a case (the link in each test), with bodies trimmed from what Claude Code 2.1.197
//! sent here (`crates/switchyard-cli/tests/agent_claude_code.rs`, `SWITCHYARD_AGENT_DUMP`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_api::ApiConfiguration;
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{HttpResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-claude-code-case-key-0123456789";

/// The gateway on 127.0.0.1:0 with every `claude-*` model routed to `gpt-4o` at `url`: its
/// base URL and the token that stops it.
async fn gateway(url: &str) -> (String, CancellationToken) {
    let text = format!(
        "[serve.routes.\"claude-*\"]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\nbase_url = \"{url}\"\n"
    );
    let config =
        ApiConfiguration::from_toml(&text, "serve.toml", |_| Some(KEY.to_owned())).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let gateway = Arc::new(Gateway::new(config).unwrap());
    tokio::spawn(serve(
        listener,
        gateway,
        ServerLimits::default(),
        shutdown.clone(),
    ));
    (base, shutdown)
}

/// A Chat Completions stream: `content` in one delta (none when empty), then `finish`.
fn chat_stream(content: &str, finish: &str) -> HttpResponse {
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id": "chatcmpl-case", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "delta": delta,
            "logprobs": null, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let mut body = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    if !content.is_empty() {
        body.push_str(&chunk(json!({"content": content}), Value::Null));
    }
    body.push_str(&chunk(json!({}), json!(finish)));
    let usage = json!({"id": "chatcmpl-case", "object": "chat.completion.chunk", "created": 1,
        "model": "gpt-4o-2024-08-06", "choices": [],
        "usage": {"prompt_tokens": 8, "completion_tokens": 1, "total_tokens": 9}});
    body.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    HttpResponse::sse(&body)
}

/// POSTs `body` as Claude Code does (`?beta=true`, its version and beta headers): status and
/// body text.
async fn post(base: &str, body: &Value) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/messages?beta=true"))
        .header("anthropic-version", "2023-06-01")
        .header(
            "anthropic-beta",
            "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14,thinking-token-count-2026-05-13,context-management-2025-06-27,prompt-caching-scope-2026-01-05,mid-conversation-system-2026-04-07,effort-2025-11-24",
        )
        .header("x-api-key", "sk-ant-client-fake")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Claude Code probes a model with `max_tokens: 1` (its `/model` check and quota probe); an
/// OpenAI model that stops at the limit — with one token or, for a reasoning model, none — is
/// a normal answer, not a 400 (BerriAI/litellm#35061: LiteLLM turned it into a
/// BadRequestError and Claude Code called the model unavailable). Its `stop_reason` is
/// `end_turn` for now: the provider layer's stream does not yet say that the limit cut an
/// answer (relay.rs `stop_reason`); when it does, this should read `max_tokens`.
#[tokio::test]
async fn a_max_tokens_1_probe_that_stops_at_the_limit_is_a_whole_200_answer() {
    for content in ["H", ""] {
        let upstream = MockServer::start(vec![Reply::new(chat_stream(content, "length"))]).await;
        let (base, _stop) = gateway(&format!("{}/v1", upstream.url())).await;
        for stream in [false, true] {
            let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 1, "stream": stream,
                              "messages": [{"role": "user", "content": "quota"}]});
            let (status, text) = post(&base, &body).await;
            assert_eq!(status, 200, "content {content:?}, stream {stream}: {text}");
            let stop = if stream {
                let delta = (text.lines())
                    .filter_map(|l| l.strip_prefix("data: "))
                    .map(|d| serde_json::from_str::<Value>(d).unwrap())
                    .find(|e| e["type"] == "message_delta")
                    .unwrap_or_else(|| panic!("no message_delta: {text}"));
                assert!(text.contains("event: message_stop"), "{text}");
                delta["delta"]["stop_reason"].clone()
            } else {
                let v: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(v["type"], "message", "{text}");
                v["stop_reason"].clone()
            };
            assert!(
                stop == "end_turn" || stop == "max_tokens",
                "content {content:?}, stream {stream}: {text}"
            );
        }
    }
}

/// The Anthropic-only fields Claude Code sends never reach an OpenAI upstream, which rejects
/// unknown parameters (BerriAI/litellm#22963: `Unknown parameter: 'output_config'`); the
/// effort it asks for is carried where the model has one, and what cannot be carried is
/// named in `x-switchyard-dropped`. The body is Claude Code 2.1.197's on its default model
/// (`claude-opus-4-8`), trimmed.
#[tokio::test]
async fn claude_code_s_anthropic_only_fields_never_reach_an_openai_upstream() {
    let upstream = MockServer::start(vec![Reply::new(chat_stream("Hi.", "stop"))]).await;
    let (base, _stop) = gateway(&format!("{}/v1", upstream.url())).await;
    let body = json!({
        "model": "claude-opus-4-8",
        "max_tokens": 64000,
        "stream": true,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197.2bb; cc_entrypoint=sdk-cli;"},
            {"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>\nToday's date is 2026-12-01.\n</system-reminder>\n"}, {"type": "text", "text": "create hello.txt containing hi", "cache_control": {"type": "ephemeral"}}]},
            {"role": "system", "content": "Available agent types for the Agent tool: claude, Explore."}
        ],
        "tools": [{"name": "Write", "description": "Writes a file to the local filesystem.",
                   "input_schema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                     "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
                     "required": ["file_path", "content"], "additionalProperties": false}}],
        "metadata": {"user_id": "{\"device_id\":\"0123\",\"account_uuid\":\"\",\"session_id\":\"e7c0015a\"}"},
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"}
    });
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/messages?beta=true"))
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let dropped = response.headers()["x-switchyard-dropped"]
        .to_str()
        .unwrap()
        .to_owned();
    let text = response.text().await.unwrap();
    assert!(text.contains("event: message_stop"), "{text}");
    for name in ["cache_control", "context_management"] {
        assert!(dropped.split(',').any(|d| d == name), "{dropped}");
    }
    let sent = upstream.requests()[0].json();
    let sent_text = sent.to_string();
    for field in [
        "output_config",
        "context_management",
        "thinking",
        "cache_control",
        "metadata",
        "anthropic",
        "adaptive",
    ] {
        assert!(
            !sent_text.contains(&format!("\"{field}")),
            "`{field}` reached the OpenAI upstream: {sent_text}"
        );
    }
    assert_eq!(sent["model"], "gpt-4o");
    assert_eq!(sent["messages"][0]["role"], "system", "{sent_text}");
    let system = sent["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.ends_with("Available agent types for the Agent tool: claude, Explore."),
        "{system}"
    );
    assert_eq!(sent["tools"][0]["function"]["name"], "Write");
}
