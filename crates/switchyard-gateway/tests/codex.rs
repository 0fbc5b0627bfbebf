//! Codex CLI's requests through the gateway to an Anthropic Messages upstream (SPEC R14.1,
//! R14.2), streamed and not: bodies trimmed from what Codex CLI 0.171.0 sent here for a
//! `gpt-5.5` model (`crates/switchyard-cli/tests/agent_codex.rs` runs the real client). Its
//! freeform `apply_patch` and its `namespace` groups have no Anthropic form: they are offered
//! as functions and their calls go back in Codex's form, which public reports show proxies
//! getting wrong (the links at each test).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_api::ApiConfiguration;
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{AgentTurn, AgentTurnRequest, AgentUpstream, UpstreamDialect};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-ant-codex-case-key-0123456789";

const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n";

/// The gateway on 127.0.0.1:0 with every model routed to Anthropic's `claude-sonnet-4-5` at
/// `url`: its base URL and the token that stops it.
async fn gateway(url: &str) -> (String, CancellationToken) {
    let text = format!(
        "[serve.routes.\"*\"]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{url}\"\n"
    );
    let config =
        ApiConfiguration::from_toml(&text, "serve.toml", |_| Some(KEY.to_owned())).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(
        listener,
        Arc::new(Gateway::new(config).unwrap()),
        ServerLimits::default(),
        shutdown.clone(),
    ));
    (base, shutdown)
}

/// Codex 0.171.0's request for `gpt-5.5` with `input` (its fields as sent; the developer
/// context, descriptions and schemas trimmed).
fn codex_body(stream: bool, input: Value) -> Value {
    json!({
        "model": "gpt-5.5",
        "input": input,
        "tools": [
            {"type": "function", "name": "exec_command", "description": "Runs a command in a PTY.", "strict": false,
             "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"], "additionalProperties": false}},
            {"type": "custom", "name": "apply_patch",
             "description": "The `apply_patch` tool can be used to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON.",
             "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch hunk+ end_patch\nbegin_patch: \"*** Begin Patch\" LF\n"}},
            {"type": "namespace", "name": "multi_agent_v1", "description": "Tools for spawning and managing sub-agents.", "tools": [
                {"type": "function", "name": "close_agent", "description": "Close an agent.", "strict": false,
                 "parameters": {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}}
            ]},
            {"type": "web_search", "external_web_access": true, "search_content_types": ["text", "image"]}
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "reasoning": {"effort": "medium"},
        "store": false,
        "stream": stream,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "01a233ac-f534-7393-bdad-e16bfdfbb70b",
        "text": {"verbosity": "low"},
        "client_metadata": {"x-codex-installation-id": "c38dcfa0"}
    })
}

/// The first turn's input: the developer context and the task.
fn task() -> Vec<Value> {
    vec![
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are a coding agent running in the Codex CLI."}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "create hello.txt containing hi"}]}),
    ]
}

/// POSTs `body` to `/v1/responses` as Codex does: status, `x-switchyard-dropped`, body text.
async fn post(base: &str, body: &Value) -> (u16, String, String) {
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/responses"))
        .header("authorization", "Bearer sk-codex-client-fake")
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .header("originator", "codex_exec")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let dropped = response
        .headers()
        .get("x-switchyard-dropped")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (
        response.status().as_u16(),
        dropped,
        response.text().await.unwrap(),
    )
}

/// The data of each server-sent event, in order.
fn events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|block| block.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

/// The response object: `response.completed`'s (the last event) or the whole JSON answer.
fn response_object(stream: bool, text: &str) -> Value {
    if !stream {
        return serde_json::from_str(text).unwrap();
    }
    let events = events(text);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.completed", "{text}");
    last["response"].clone()
}

/// The model: `apply_patch` the file first, then say "Done.".
fn model(r: &AgentTurnRequest) -> AgentTurn {
    if r.offers_tool("apply_patch") && r.tool_results == 0 {
        AgentTurn::tool_call("apply_patch", json!({ "input": PATCH }))
    } else {
        AgentTurn::text("Done.")
    }
}

/// Codex's `apply_patch` round trip, streamed and not: the Anthropic model is offered a
/// function taking the patch as its one `input` string, its `tool_use` reaches Codex as the
/// `custom_tool_call` item Codex runs (announced, closed by `response.output_item.done`,
/// then `response.completed`), and Codex's `custom_tool_call` / `custom_tool_call_output`
/// history reaches the model as its `tool_use` and `tool_result`. Proxies that drop the
/// tool, or send its call back as a `function_call` (`{}` or JSON-wrapped), leave Codex
/// unable to edit files: github.com/decolua/9router/issues/1371,
/// github.com/router-for-me/CLIProxyAPI/issues/4078 ("tool apply_patch invoked with
/// incompatible payload"), github.com/barbacane-dev/barbacane/issues/134.
#[tokio::test]
async fn codex_apply_patch_round_trips_through_an_anthropic_upstream() {
    let upstream = AgentUpstream::start(UpstreamDialect::Messages, model).await;
    let (base, shutdown) = gateway(&upstream.base_url()).await;
    for stream in [true, false] {
        let before = upstream.request_count();
        let (status, dropped, text) = post(&base, &codex_body(stream, json!(task()))).await;
        assert_eq!(status, 200, "{text}");
        let names: Vec<&str> = dropped.split(',').collect();
        assert!(names.contains(&"tools[type=custom].format"), "{dropped}");
        assert!(names.contains(&"tools[type=web_search]"), "{dropped}");
        assert!(!dropped.contains("namespace"), "{dropped}");
        let sent = upstream.exchanges()[before].request.json();
        let tools = sent["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["exec_command", "apply_patch", "multi_agent_v1__close_agent"]
        );
        assert_eq!(tools[1]["input_schema"]["required"], json!(["input"]));
        let call = &response_object(stream, &text)["output"][0];
        assert_eq!(call["type"], "custom_tool_call", "{text}");
        assert_eq!(call["name"], "apply_patch");
        assert_eq!(call["input"], PATCH);
        if stream {
            let done: Vec<Value> = events(&text)
                .into_iter()
                .filter(|e| e["type"] == "response.output_item.done")
                .collect();
            assert_eq!(done.len(), 1, "{text}");
            assert_eq!(&done[0]["item"], call);
        }
        // The second turn: Codex ran the patch and sends the call and its output back.
        let mut input = task();
        input.push(
            json!({"type": "custom_tool_call", "id": call["id"], "status": "completed",
            "call_id": call["call_id"], "name": "apply_patch", "input": PATCH}),
        );
        input.push(json!({"type": "custom_tool_call_output", "id": "ctco_01a2", "call_id": call["call_id"],
            "output": "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA hello.txt\n"}));
        let (status, _, text) = post(&base, &codex_body(stream, json!(input))).await;
        assert_eq!(status, 200, "{text}");
        let answer = response_object(stream, &text);
        assert_eq!(answer["output"][0]["content"][0]["text"], "Done.", "{text}");
        let sent = upstream.exchanges()[before + 1].request.json();
        let messages = sent["messages"].as_array().unwrap();
        let (assistant, user) = (&messages[messages.len() - 2], &messages[messages.len() - 1]);
        assert_eq!(
            assistant["content"][0],
            json!({"type": "tool_use", "id": call["call_id"], "name": "apply_patch", "input": {"input": PATCH}})
        );
        assert_eq!(user["content"][0]["type"], "tool_result");
        assert_eq!(user["content"][0]["tool_use_id"], call["call_id"]);
    }
    shutdown.cancel();
}

/// A `namespace` member's call goes back by the member's own name with its `namespace`,
/// the only form Codex runs (a bare `close_agent` is "unsupported call"); a proxy that
/// drops the groups loses Codex's MCP tools (github.com/router-for-me/CLIProxyAPI/issues/3199).
#[tokio::test]
async fn codex_namespace_member_call_goes_back_with_its_namespace() {
    let upstream = AgentUpstream::start(UpstreamDialect::Messages, |r: &AgentTurnRequest| {
        if r.tool_results == 0 {
            AgentTurn::tool_call("multi_agent_v1__close_agent", json!({"target": "a1"}))
        } else {
            AgentTurn::text("Closed.")
        }
    })
    .await;
    let (base, shutdown) = gateway(&upstream.base_url()).await;
    for stream in [true, false] {
        let before = upstream.request_count();
        let (status, _, text) = post(&base, &codex_body(stream, json!(task()))).await;
        assert_eq!(status, 200, "{text}");
        let call = &response_object(stream, &text)["output"][0];
        assert_eq!(call["type"], "function_call", "{text}");
        assert_eq!(call["name"], "close_agent");
        assert_eq!(call["namespace"], "multi_agent_v1");
        assert_eq!(call["arguments"], "{\"target\":\"a1\"}");
        let mut input = task();
        input.push(
            json!({"type": "function_call", "status": "completed", "id": call["id"],
            "name": "close_agent", "namespace": "multi_agent_v1", "arguments": call["arguments"],
            "call_id": call["call_id"]}),
        );
        input.push(
            json!({"type": "function_call_output", "call_id": call["call_id"], "output": "closed"}),
        );
        let (status, _, text) = post(&base, &codex_body(stream, json!(input))).await;
        assert_eq!(status, 200, "{text}");
        let sent = upstream.exchanges()[before + 1].request.json();
        let messages = sent["messages"].as_array().unwrap();
        assert_eq!(
            messages[messages.len() - 2]["content"][0]["name"],
            "multi_agent_v1__close_agent"
        );
    }
    shutdown.cancel();
}
