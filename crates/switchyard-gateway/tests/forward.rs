//! Same dialect in and out (SPEC R14.2): a client of a route's provider's own dialect has its
//! body sent as it came (but for the model, `stream` and what the route fits) and gets the
//! provider's events as they came, while the gateway reads them for usage and errors; a
//! fallback of another dialect is translated as ever.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{KEY, route, start};
use serde_json::{Value, json};
use switchyard_testkit::{HttpResponse, MockServer, Reply};

/// POSTs `body` to `path` with `headers`: the status, headers and body.
async fn post(
    base: &str,
    path: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, String) {
    let client = reqwest::Client::new();
    let mut request = client
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

/// The body bytes of a recorded fixture, as its server sends them.
fn fixture_body(name: &str) -> String {
    String::from_utf8(HttpResponse::fixture(name).body).unwrap()
}

/// What Claude Code's requests carry that Switchyard's messages cannot hold: caching marks,
/// `top_k`, `metadata`, a server tool, fields newer than this build.
fn claude_code_body(stream: bool) -> Value {
    json!({
        "model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": stream, "top_k": 40,
        "metadata": {"user_id": "user_abc"},
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "system": [{"type": "text", "text": "You are Claude Code.",
                    "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi",
                      "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}],
        "tools": [{"name": "Bash", "description": "Runs a command.",
                   "input_schema": {"type": "object"}},
                  {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}]
    })
}

#[tokio::test]
async fn a_messages_client_on_an_anthropic_route_sends_its_own_body_and_gets_the_events() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let model = "claude-sonnet-4-5-20250929";
    let gateway = start(&route("claude-*", "anthropic", model, &upstream.url())).await;
    let body = claude_code_body(true);
    let beta = "context-management-2025-06-27,interleaved-thinking-2025-05-14";
    let headers = [
        ("anthropic-version", "2023-06-01"),
        ("anthropic-beta", beta),
    ];
    let (status, headers, text) = post(&gateway.base, "/v1/messages", &body, &headers).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        text,
        fixture_body("anthropic_text"),
        "the provider's events, as they came"
    );
    assert!(headers.get("x-switchyard-dropped").is_none(), "{headers:?}");
    let sent = &upstream.requests()[0];
    let mut expected = body;
    expected["model"] = json!(model);
    assert_eq!(
        sent.json(),
        expected,
        "the client's body, with the route's model"
    );
    assert_eq!(sent.header("anthropic-beta"), Some(beta));
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
}

#[tokio::test]
async fn a_whole_answer_is_asked_for_as_a_stream_and_collected() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let gateway = start(&route(
        "claude-*",
        "anthropic",
        "claude-sonnet-4-5",
        &upstream.url(),
    ))
    .await;
    let headers = [("anthropic-version", "2023-06-01")];
    let (status, _, text) = post(
        &gateway.base,
        "/v1/messages",
        &claude_code_body(false),
        &headers,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["type"], "message", "{answer}");
    assert!(
        answer["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("The capital of France"),
        "{answer}"
    );
    assert_eq!(answer["usage"]["cache_read_input_tokens"], 2048, "{answer}");
    let sent = upstream.requests()[0].json();
    assert_eq!(
        (sent["stream"].clone(), sent["top_k"].clone()),
        (json!(true), json!(40))
    );
}

#[tokio::test]
async fn a_chat_client_gets_no_usage_chunk_it_did_not_ask_for_but_the_gateway_reads_it() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let url = format!("{}/v1", upstream.url());
    let gateway = start(&route("gpt", "openai", "o4-mini", &url)).await;
    let body = json!({"model": "gpt", "stream": true, "n": 1, "seed": 7, "logprobs": false,
        "user": "u1", "messages": [{"role": "user", "content": "Why is the sky blue?"}]});
    let (status, headers, text) = post(&gateway.base, "/v1/chat/completions", &body, &[]).await;
    assert_eq!(status, 200, "{text}");
    assert!(headers.get("x-switchyard-dropped").is_none(), "{headers:?}");
    let sent = upstream.requests()[0].json();
    assert_eq!(sent["model"], "o4-mini");
    assert_eq!(
        sent["stream_options"],
        json!({"include_usage": true}),
        "{sent}"
    );
    assert_eq!(
        (sent["seed"].clone(), sent["user"].clone()),
        (json!(7), json!("u1"))
    );
    assert!(sent.get("max_completion_tokens").is_none(), "{sent}");
    // The provider's events but its usage-only chunk, which the client did not ask for.
    let upstream_events = fixture_body("openai_chat_text");
    let usage_chunk = upstream_events
        .split("\n\n")
        .find(|e| e.contains("\"choices\":[]") && e.contains("\"usage\":{"))
        .expect("the fixture ends with a usage chunk");
    assert_eq!(
        text,
        upstream_events.replace(&format!("{usage_chunk}\n\n"), "")
    );
    // The gateway read that usage all the same: its token counter has it.
    let metrics = reqwest::get(format!("{}/metrics", gateway.base))
        .await
        .unwrap();
    let metrics = metrics.text().await.unwrap();
    let input = metrics
        .lines()
        .find(|l| l.starts_with("gen_ai_client_token_usage_sum") && l.contains("input"))
        .unwrap_or_else(|| panic!("no input token count: {metrics}"));
    assert!(!input.ends_with(" 0"), "{input}");
}

#[tokio::test]
async fn a_chat_client_that_asks_for_usage_gets_every_event() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let url = format!("{}/v1", upstream.url());
    let gateway = start(&route("gpt", "openai", "o4-mini", &url)).await;
    let body = json!({"model": "gpt", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "Why is the sky blue?"}]});
    let (status, _, text) = post(&gateway.base, "/v1/chat/completions", &body, &[]).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(text, fixture_body("openai_chat_text"));
}

#[tokio::test]
async fn a_forwarded_entry_that_fails_before_content_fails_over_to_a_translated_one() {
    let overloaded = HttpResponse::json(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    let primary = MockServer::start(vec![Reply::new(overloaded)]).await;
    let backup =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let config = route("claude-*", "anthropic", "claude-sonnet-4-5", &primary.url())
        + &format!(
            "[[serve.routes.\"claude-*\".fallbacks]]\nprovider = \"openai\"\nmodel = \"o4-mini\"\nbase_url = \"{}/v1\"\n",
            backup.url()
        );
    let gateway = start(&config).await;
    let headers = [("anthropic-version", "2023-06-01")];
    let (status, headers, text) = post(
        &gateway.base,
        "/v1/messages",
        &claude_code_body(true),
        &headers,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("event: message_stop"), "{text}");
    assert!(streamed_text(&text).starts_with("The sky looks"), "{text}");
    // The backup got a translated Chat body, and what it could not carry is named.
    let sent = backup.requests()[0].json();
    assert_eq!(sent["model"], "o4-mini");
    assert!(
        sent["messages"].is_array() && sent.get("top_k").is_none(),
        "{sent}"
    );
    let dropped = headers["x-switchyard-dropped"].to_str().unwrap();
    assert!(dropped.contains("top_k"), "{dropped}");
    assert!(primary.request_count() >= 1);
}

#[tokio::test]
async fn a_responses_client_is_translated_on_its_own_dialect() {
    // The gateway keeps Responses answers for `previous_response_id` itself (SPEC R14.1), so
    // a Responses client is never forwarded: the upstream gets Switchyard's own body.
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_responses"))]).await;
    let url = format!("{}/v1", upstream.url());
    let gateway = start(&route("gpt", "openai-native", "gpt-5.4", &url)).await;
    let body = json!({"model": "gpt", "stream": true, "input": "hi", "unknown_field": 1});
    let (status, _, text) = post(&gateway.base, "/v1/responses", &body, &[]).await;
    assert_eq!(status, 200, "{text}");
    let sent = upstream.requests()[0].json();
    assert!(sent.get("unknown_field").is_none(), "{sent}");
}

#[tokio::test]
async fn anthropics_beta_flags_go_only_to_anthropic() {
    // mnfst/llm-gateway#2910: other servers of the Messages dialect (MiniMax here) were never
    // sent Anthropic's flags, which name features only Anthropic has.
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let gateway = start(&route("claude-*", "minimax", "MiniMax-M2", &upstream.url())).await;
    let headers = [
        ("anthropic-version", "2023-06-01"),
        ("anthropic-beta", "context-management-2025-06-27"),
    ];
    let (status, _, text) = post(
        &gateway.base,
        "/v1/messages",
        &claude_code_body(true),
        &headers,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let sent = &upstream.requests()[0];
    assert_eq!(sent.header("anthropic-beta"), None);
    assert_eq!(sent.json()["top_k"], 40, "still the client's own body");
}

/// An Anthropic stream whose text deltas are `deltas`.
fn anthropic_sse(deltas: &[&str]) -> String {
    let mut body = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    for d in deltas {
        let data = json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": d}});
        body += &format!("event: content_block_delta\ndata: {data}\n\n");
    }
    body += "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
             event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n\
             event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    body
}

/// The text a Messages client reads from a stream.
fn streamed_text(body: &str) -> String {
    (body.split("\n\n"))
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|v| v["type"] == "content_block_delta")
        .filter_map(|v| v["delta"]["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn the_providers_key_split_across_two_events_never_reaches_the_client() {
    // SPEC R10.5 with R14.2: a server that echoes the gateway's provider key back, split
    // across two text deltas, cannot have those events forwarded as they came.
    for at in [3, 10, KEY.len() - 2] {
        let (a, b) = KEY.split_at(at);
        let (first, second) = (format!("the key is {a}"), format!("{b}, done"));
        let sse = anthropic_sse(&["Hello. ", &first, &second]);
        let upstream = MockServer::start(vec![Reply::new(HttpResponse::sse(&sse))]).await;
        let gateway = start(&route(
            "claude-*",
            "anthropic",
            "claude-sonnet-4-5",
            &upstream.url(),
        ))
        .await;
        let headers = [("anthropic-version", "2023-06-01")];
        let (status, _, text) = post(
            &gateway.base,
            "/v1/messages",
            &claude_code_body(true),
            &headers,
        )
        .await;
        assert_eq!(status, 200, "{text}");
        assert!(
            !text.contains(KEY) && !text.contains(a) || a.len() < 4,
            "split at {at}: {text}"
        );
        assert!(!text.contains(KEY), "split at {at}: {text}");
        assert_eq!(
            streamed_text(&text),
            "Hello. the key is [redacted], done",
            "split at {at}: {text}"
        );
        assert_eq!(
            text.matches("event: message_stop").count(),
            1,
            "split at {at}: {text}"
        );
        assert!(
            text.starts_with("event: message_start"),
            "split at {at}: {text}"
        );
    }
}

/// A route whose provider key is missing from the gateway's environment is the gateway's
/// own configuration to fix, said so, not "the provider had a server error" (newcomer check).
#[tokio::test]
async fn a_route_without_its_provider_key_says_the_gateway_is_not_set_up() {
    let text = "[serve.routes.gpt]\nprovider = \"openai-native\"\nmodel = \"gpt-4o-mini\"\n";
    let config = switchyard_api::ApiConfiguration::from_toml(text, "serve.toml", |_| None).unwrap();
    let gateway = switchyard_gateway::Gateway::new(config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = tokio_util::sync::CancellationToken::new();
    let limits = switchyard_gateway::ServerLimits::default();
    tokio::spawn(switchyard_gateway::serve(
        listener,
        std::sync::Arc::new(gateway),
        limits,
        shutdown.clone(),
    ));
    let body = json!({"model": "gpt", "messages": [{"role": "user", "content": "hi"}]});
    let (status, _, text) = post(&base, "/v1/chat/completions", &body, &[]).await;
    shutdown.cancel();
    assert_eq!(status, 500, "{text}");
    let message = serde_json::from_str::<Value>(&text).unwrap()["error"]["message"].clone();
    let message = message.as_str().unwrap();
    assert!(
        message.starts_with("This gateway is not set up for this route"),
        "{message}"
    );
    assert!(message.contains("OPENAI_API_KEY"), "{message}");
    assert!(
        !message.contains("provider had a server error"),
        "{message}"
    );
}
