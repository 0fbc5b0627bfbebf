//! Responses' `previous_response_id` through the gateway (SPEC R14.1; GATEWAY.md R14.1: answered
//! from the store, a response stored unless the request says `store: false`), streamed and
//! not, in front of an Anthropic Messages upstream: the stored conversation and answer (its
//! thinking with signatures, its tool calls) go before the new `input`, so the upstream gets
//! the whole conversation; the new `instructions` replace the old; an id that was never stored
//! (or `store: false`) is OpenAI's 404 `previous_response_not_found`, and no upstream is asked.
//! Gateways that accept the field but drop the conversation it stands for were reported at
//! github.com/Blaizzy/mlx-vlm/issues/1046 and github.com/maximhq/bifrost/issues/2441.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_api::ApiConfiguration;
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{HttpResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-ant-previous-case-key-0123456789";

/// The gateway on 127.0.0.1:0 with every model routed to Anthropic's `claude-sonnet-4-5` at
/// an upstream answering `fixtures` in order: the gateway's base URL, the token that stops
/// it, and the upstream.
async fn gateway(fixtures: &[&str]) -> (String, CancellationToken, MockServer) {
    gateway_capped(fixtures, switchyard_gateway::DEFAULT_BODY_LIMIT).await
}

/// [`gateway`] with a body cap of `body_limit` bytes.
async fn gateway_capped(
    fixtures: &[&str],
    body_limit: usize,
) -> (String, CancellationToken, MockServer) {
    let replies = fixtures
        .iter()
        .map(|f| Reply::new(HttpResponse::fixture(f)))
        .collect();
    let upstream = MockServer::start(replies).await;
    let text = format!(
        "[serve.routes.\"*\"]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{}\"\n",
        upstream.url()
    );
    let config =
        ApiConfiguration::from_toml(&text, "serve.toml", |_| Some(KEY.to_owned())).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(
        listener,
        Arc::new(Gateway::new(config).unwrap().with_body_limit(body_limit)),
        ServerLimits::default(),
        shutdown.clone(),
    ));
    (base, shutdown, upstream)
}

/// POSTs `body` to `/v1/responses`: the status and the response object (`response.completed`'s
/// when streamed, which must be the last event) or the error body.
async fn post(base: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/responses"))
        .header("authorization", "Bearer sk-client-fake")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    if status != 200 || body["stream"] != true {
        return (status, serde_json::from_str(&text).unwrap());
    }
    let last: Value = text
        .split("\n\n")
        .filter_map(|block| block.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .last()
        .unwrap();
    assert_eq!(last["type"], "response.completed", "{text}");
    (status, last["response"].clone())
}

/// A request for `input`, with `extra` fields merged in.
fn request(stream: bool, input: Value, extra: Value) -> Value {
    let mut body = json!({
        "model": "gpt-5",
        "stream": stream,
        "input": input,
        "tools": [{"type": "function", "name": "get_weather", "description": "The weather.",
                   "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}],
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

/// The `function_call` item of a response object.
fn function_call(response: &Value) -> Value {
    let output = response["output"].as_array().unwrap();
    output
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap_or_else(|| panic!("no function_call in {response}"))
        .clone()
}

/// The Anthropic request the upstream got `n`th (from 0).
fn upstream_body(upstream: &MockServer, n: usize) -> Value {
    upstream.requests()[n].json()
}

/// Two turns of a tool conversation, the second sent by `previous_response_id` with only the
/// tool's result: the upstream's second request carries turn 1's user message, the assistant's
/// text and `tool_use`, and the `tool_result`, under the second request's instructions only.
#[tokio::test]
async fn a_two_turn_tool_conversation_continues_by_previous_response_id() {
    for stream in [false, true] {
        let (base, _stop, upstream) = gateway(&["anthropic_tool_use", "anthropic_text"]).await;
        let first = request(
            stream,
            json!("What's the weather in San Francisco?"),
            json!({"instructions": "Be brief."}),
        );
        let (status, r1) = post(&base, &first).await;
        assert_eq!(status, 200, "{r1}");
        let call = function_call(&r1);
        let second = request(
            stream,
            json!([{"type": "function_call_output", "call_id": call["call_id"], "output": "72F and sunny"}]),
            json!({"previous_response_id": r1["id"], "instructions": "Answer in one line."}),
        );
        let (status, r2) = post(&base, &second).await;
        assert_eq!(status, 200, "{r2}");
        assert_eq!(upstream.request_count(), 2);
        let sent = upstream_body(&upstream, 1);
        let messages = sent["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "{sent}");
        assert_eq!(messages[0]["role"], "user");
        assert!(
            messages[0]
                .to_string()
                .contains("What's the weather in San Francisco?"),
            "{sent}"
        );
        assert_eq!(messages[1]["role"], "assistant");
        let said = messages[1]["content"].as_array().unwrap();
        assert_eq!(said[0]["type"], "text", "{sent}");
        assert_eq!(
            said[0]["text"],
            "Okay, let's check the weather for San Francisco, CA:"
        );
        assert_eq!(said[1]["type"], "tool_use", "{sent}");
        assert_eq!(said[1]["id"], call["call_id"]);
        assert_eq!(said[1]["name"], "get_weather");
        assert_eq!(said[1]["input"]["location"], "San Francisco, CA");
        assert_eq!(messages[2]["role"], "user");
        let result = &messages[2]["content"][0];
        assert_eq!(result["type"], "tool_result", "{sent}");
        assert_eq!(result["tool_use_id"], call["call_id"]);
        assert!(result.to_string().contains("72F and sunny"), "{sent}");
        // The second request's instructions replace the first's.
        let system = sent["system"].to_string();
        assert!(system.contains("Answer in one line."), "{sent}");
        assert!(!system.contains("Be brief."), "{sent}");
    }
}

/// A chain of three: the third request continues the second, which continued the first, so
/// the upstream's third request carries the whole conversation — the first answer's thinking
/// with its signature and its redacted thinking, the tool call and its result, the second
/// answer — then the new message.
#[tokio::test]
async fn a_chain_of_three_carries_every_turn_with_thinking_signatures() {
    for stream in [false, true] {
        let fixtures = ["anthropic_thinking", "anthropic_tool_use", "anthropic_text"];
        let (base, _stop, upstream) = gateway(&fixtures).await;
        let (status, r1) = post(
            &base,
            &request(stream, json!("What is 27 * 453?"), json!({})),
        )
        .await;
        assert_eq!(status, 200, "{r1}");
        let next = |previous: &Value, input: Value| {
            request(
                stream,
                input,
                json!({"previous_response_id": previous["id"]}),
            )
        };
        let (status, r2) = post(&base, &next(&r1, json!("And the weather in SF?"))).await;
        assert_eq!(status, 200, "{r2}");
        let call = function_call(&r2);
        let output =
            json!([{"type": "function_call_output", "call_id": call["call_id"], "output": "72F"}]);
        let (status, r3) = post(&base, &next(&r2, output)).await;
        assert_eq!(status, 200, "{r3}");
        assert_eq!(upstream.request_count(), 3);
        let sent = upstream_body(&upstream, 2);
        let messages = sent["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            ["user", "assistant", "user", "assistant", "user"],
            "{sent}"
        );
        let thought = messages[1]["content"].as_array().unwrap();
        assert_eq!(thought[0]["type"], "thinking", "{sent}");
        assert!(
            thought[0]["signature"]
                .as_str()
                .unwrap()
                .starts_with("c3ludGhldGljLXRoaW5raW5n"),
            "{sent}"
        );
        assert!(
            thought.iter().any(|b| b["type"] == "redacted_thinking"),
            "{sent}"
        );
        assert!(messages[2].to_string().contains("And the weather in SF?"));
        assert!(
            messages[3]["content"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b["type"] == "tool_use")
        );
        assert_eq!(messages[4]["content"][0]["type"], "tool_result", "{sent}");
        // The second request carried only the first turn and its own message.
        assert_eq!(
            upstream_body(&upstream, 1)["messages"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
    }
}

/// `store: false` keeps nothing: continuing it is OpenAI's 404, as is an id never given; no
/// upstream is asked for either.
#[tokio::test]
async fn store_false_is_not_stored_and_an_unknown_id_is_a_404() {
    for stream in [false, true] {
        let (base, _stop, upstream) = gateway(&["anthropic_text"]).await;
        let unstored = request(stream, json!("Hello"), json!({"store": false}));
        let (status, r1) = post(&base, &unstored).await;
        assert_eq!(status, 200, "{r1}");
        for id in [r1["id"].as_str().unwrap(), "resp_never_given"] {
            let body = request(stream, json!("Again"), json!({"previous_response_id": id}));
            let (status, error) = post(&base, &body).await;
            assert_eq!(status, 404, "{error}");
            assert_eq!(
                error["error"]["code"], "previous_response_not_found",
                "{error}"
            );
            assert_eq!(error["error"]["param"], "previous_response_id", "{error}");
            assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
            assert_eq!(
                error["error"]["message"],
                format!("Previous response with id '{id}' not found.")
            );
        }
        assert_eq!(upstream.request_count(), 1);
    }
}

/// The stored conversation is bounded by the body cap: a chain whose conversation outgrows it
/// stops being stored (its continuation could not have been sent whole either), so the next
/// `previous_response_id` is a 404 and the upstream is not asked.
#[tokio::test]
async fn a_conversation_larger_than_the_body_cap_is_not_stored() {
    let (base, _stop, upstream) =
        gateway_capped(&["anthropic_text", "anthropic_text"], 1_500).await;
    let long = "x".repeat(700);
    let (status, r1) = post(&base, &request(false, json!(long), json!({}))).await;
    assert_eq!(status, 200, "{r1}");
    let body = request(
        false,
        json!(long),
        json!({"previous_response_id": r1["id"]}),
    );
    let (status, r2) = post(&base, &body).await;
    assert_eq!(status, 200, "{r2}");
    let body = request(
        false,
        json!("short"),
        json!({"previous_response_id": r2["id"]}),
    );
    let (status, error) = post(&base, &body).await;
    assert_eq!(status, 404, "{error}");
    assert_eq!(upstream.request_count(), 2);
}
