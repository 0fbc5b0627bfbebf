//! An image inside a Messages `tool_result` reaches an OpenAI route (case C94: Claude Code's
//! screenshots and image reads were dropped on the way to OpenAI Chat Completions,
//! <https://github.com/router-for-me/CLIProxyAPI/issues/5707>): to a Chat route it follows the
//! `tool` message as a user message's `image_url` part, to a Responses route it follows the
//! `function_call_output` as a user message's `input_image`; nothing is named dropped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use switchyard_testkit::{HttpResponse, MockServer, Reply};

mod common;

/// A 1×1 PNG's first bytes: what the upstream must see, as sent.
const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ";

/// A Messages body whose last user message is a screenshot tool's result: text and an image.
fn body() -> Value {
    json!({
        "model": "route", "max_tokens": 256,
        "tools": [{"name": "screenshot", "description": "Takes a screenshot.",
                   "input_schema": {"type": "object", "properties": {}}}],
        "messages": [
            {"role": "user", "content": "What is on the screen?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                    {"type": "text", "text": "Screenshot taken."},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": IMAGE}}
                ]}
            ]}
        ]
    })
}

/// Sends [`body`] through a gateway whose route is `provider`'s `model` answering `fixture`:
/// the upstream's request body and the `x-switchyard-dropped` header, if any.
async fn through(provider: &str, model: &str, fixture: &str) -> (Value, Option<String>) {
    let upstream = MockServer::start(vec![Reply::new(HttpResponse::fixture(fixture))]).await;
    let base_url = format!("{}/v1", upstream.url());
    let gateway = common::start(&common::route("route", provider, model, &base_url)).await;
    let response = reqwest::Client::new()
        .post(format!("{}/v1/messages", gateway.base))
        .header("x-api-key", "sk-client-fake")
        .header("content-type", "application/json")
        .body(body().to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let dropped =
        (response.headers().get("x-switchyard-dropped")).map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    (upstream.requests()[0].json(), dropped)
}

#[tokio::test]
async fn a_tool_results_image_reaches_a_chat_route_after_its_tool_message() {
    let (sent, dropped) = through("openai-native", "o4-mini", "openai_chat_text").await;
    assert!(dropped.is_none(), "{dropped:?}");
    let messages = sent["messages"].as_array().unwrap();
    let at = (messages.iter())
        .position(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("{sent}"));
    assert_eq!(messages[at]["tool_call_id"], "toolu_1", "{sent}");
    assert_eq!(messages[at]["content"], "Screenshot taken.", "{sent}");
    let next = &messages[at + 1];
    assert_eq!(next["role"], "user", "{sent}");
    assert_eq!(
        next["content"][0]["image_url"]["url"],
        format!("data:image/png;base64,{IMAGE}"),
        "{sent}"
    );
}

#[tokio::test]
async fn a_tool_results_image_reaches_a_responses_route_after_its_output() {
    let (sent, dropped) = through("openai-native", "gpt-5.4", "openai_responses").await;
    assert!(dropped.is_none(), "{dropped:?}");
    let input = sent["input"].as_array().unwrap();
    let at = (input.iter())
        .position(|i| i["type"] == "function_call_output")
        .unwrap_or_else(|| panic!("{sent}"));
    assert_eq!(input[at]["call_id"], "toolu_1", "{sent}");
    assert_eq!(input[at]["output"], "Screenshot taken.", "{sent}");
    let next = &input[at + 1];
    assert_eq!(next["role"], "user", "{sent}");
    assert_eq!(next["content"][0]["type"], "input_image", "{sent}");
    assert_eq!(
        next["content"][0]["image_url"],
        format!("data:image/png;base64,{IMAGE}"),
        "{sent}"
    );
}
