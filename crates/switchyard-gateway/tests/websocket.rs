//! Responses over a WebSocket (SPEC R14.1b): Codex CLI's `GET /v1/responses` upgrade, each
//! `response.create` message one Responses request through the gateway to the testkit's
//! upstream, the stream's events back as text messages. The message shapes are Codex 0.171.0's
//! (`codex-rs/codex-api/src/common.rs`, `ResponsesWsRequest`); the cases are W01–W04 in
//! tests/cases/CASES.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use switchyard_api::ApiConfiguration;
use switchyard_core::store::{NewKeyRequest, SqliteStore, TaskStore, create_client_key};
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{
    AfterBody, AgentTurn, AgentTurnRequest, AgentUpstream, HttpResponse, MockServer, Reply,
    UpstreamDialect,
};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Serves `gateway` on 127.0.0.1:0: its base URL and the token that stops it.
async fn serve_gateway(gateway: Gateway) -> (String, CancellationToken) {
    serve_with(gateway, ServerLimits::default()).await
}

async fn serve_with(gateway: Gateway, limits: ServerLimits) -> (String, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(listener, Arc::new(gateway), limits, shutdown.clone()));
    (base, shutdown)
}

/// A gateway routing every model to Anthropic's `claude-sonnet-4-5` at `url`.
fn gateway_to(url: &str) -> Gateway {
    let text = common::route("*", "anthropic", "claude-sonnet-4-5", url);
    let config =
        ApiConfiguration::from_toml(&text, "serve.toml", |_| Some(common::KEY.to_owned())).unwrap();
    Gateway::new(config).unwrap()
}

/// Opens the Responses WebSocket of `base` as Codex does, with `key` as its bearer token.
async fn connect(base: &str, key: Option<&str>) -> Result<Socket, Error> {
    let url = format!("{}/v1/responses", base.replace("http://", "ws://"));
    let mut request = url.into_client_request().unwrap();
    let headers = request.headers_mut();
    headers.insert(
        "openai-beta",
        "responses_websockets=2026-02-06".parse().unwrap(),
    );
    if let Some(key) = key {
        headers.insert("authorization", format!("Bearer {key}").parse().unwrap());
    }
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, _)| socket)
}

/// Codex's `response.create` for `gpt-5.5` with `input`, continuing `previous` when given.
fn create(input: Value, previous: Option<&str>) -> Value {
    let mut create = json!({
        "type": "response.create",
        "model": "gpt-5.5",
        "instructions": "You are a coding agent running in the Codex CLI.",
        "input": input,
        "tools": [{"type": "function", "name": "exec_command", "description": "Runs a command.",
                   "strict": false, "parameters": {"type": "object",
                   "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}],
        "tool_choice": "auto",
        "parallel_tool_calls": false,
        "reasoning": null,
        "store": false,
        "stream": true,
        "include": [],
        "client_metadata": {"x-codex-installation-id": "c38dcfa0"}
    });
    if let Some(previous) = previous {
        create["previous_response_id"] = json!(previous);
    }
    create
}

fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

async fn send(socket: &mut Socket, message: &Value) {
    socket
        .send(Message::text(message.to_string()))
        .await
        .unwrap();
}

/// The next event the gateway sends, as JSON.
async fn next_event(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("no event within 10 s")
            .expect("the socket ended")
            .unwrap();
        match message {
            Message::Text(text) => return serde_json::from_str(&text).unwrap(),
            Message::Close(frame) => panic!("the socket was closed: {frame:?}"),
            _ => {}
        }
    }
}

/// Every event of one turn, up to its terminal `response.completed` or an `error`.
async fn turn_events(socket: &mut Socket) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let event = next_event(socket).await;
        let end = event["type"] == "response.completed" || event["type"] == "error";
        events.push(event);
        if end {
            return events;
        }
    }
}

/// The model: run `exec_command` once, then say "Done.".
fn model(r: &AgentTurnRequest) -> AgentTurn {
    if r.tool_results == 0 {
        AgentTurn::tool_call("exec_command", json!({"cmd": "printf hi > hello.txt"}))
    } else {
        AgentTurn::text("Done.")
    }
}

/// W01, W03, W04: two turns over one socket with `store: false`, the second sending only the
/// tool's output and the first response's id, as Codex does. The upstream's second request
/// holds the whole conversation, the call once, and the socket's events are the HTTP path's.
#[tokio::test]
async fn two_turns_over_one_socket_carry_the_whole_conversation_upstream() {
    let upstream = AgentUpstream::start(UpstreamDialect::Messages, model).await;
    let (base, _stop) = serve_gateway(gateway_to(&upstream.base_url())).await;
    let mut socket = connect(&base, None).await.unwrap();
    send(
        &mut socket,
        &create(json!([user("create hello.txt")]), None),
    )
    .await;
    let first = turn_events(&mut socket).await;
    let types: Vec<&str> = first.iter().filter_map(|e| e["type"].as_str()).collect();
    // Codex's `parallel_tool_calls` has no Anthropic form: it is named before the stream.
    assert_eq!(
        types[..2],
        ["switchyard.dropped", "response.created"],
        "{first:?}"
    );
    assert_eq!(first[0]["dropped"], json!(["parallel_tool_calls"]));
    assert_eq!(types.last(), Some(&"response.completed"), "{first:?}");
    assert!(types.contains(&"response.output_item.done"), "{types:?}");
    let response = &first.last().unwrap()["response"];
    let call = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .expect("the first turn calls the tool");
    let output = json!({"type": "function_call_output", "call_id": call["call_id"], "output": "exited with code 0"});
    let id = response["id"].as_str().unwrap();
    send(&mut socket, &create(json!([output]), Some(id))).await;
    let second = turn_events(&mut socket).await;
    let done = &second.last().unwrap()["response"];
    assert_eq!(second.last().unwrap()["type"], "response.completed");
    assert_eq!(done["output"][0]["content"][0]["text"], "Done.", "{done}");
    assert_eq!(upstream.request_count(), 2);
    let body = upstream.exchanges()[1].request.json();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{body}");
    assert_eq!(messages[0]["content"][0]["text"], "create hello.txt");
    let calls: Vec<&Value> = messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .collect();
    assert_eq!(calls.len(), 1, "{body}");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result", "{body}");
    socket.close(None).await.unwrap();
}

/// W02: Codex's warm-up, `generate: false`, is answered at once with an empty completed
/// response and asks no provider; the turn that continues it carries its input upstream.
#[tokio::test]
async fn a_warm_up_is_answered_without_the_upstream_and_its_input_is_continued() {
    let upstream = AgentUpstream::start(UpstreamDialect::Messages, model).await;
    let (base, _stop) = serve_gateway(gateway_to(&upstream.base_url())).await;
    let mut socket = connect(&base, None).await.unwrap();
    let mut warm_up = create(json!([user("create hello.txt")]), None);
    warm_up["generate"] = json!(false);
    send(&mut socket, &warm_up).await;
    let events = turn_events(&mut socket).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["type"], "response.created");
    let warm = &events[1]["response"];
    assert_eq!(warm["status"], "completed");
    assert_eq!(warm["output"], json!([]));
    assert_eq!(upstream.request_count(), 0);
    send(&mut socket, &create(json!([]), warm["id"].as_str())).await;
    let turn = turn_events(&mut socket).await;
    assert_eq!(
        turn.last().unwrap()["type"],
        "response.completed",
        "{turn:?}"
    );
    assert_eq!(upstream.request_count(), 1);
    let body = upstream.exchanges()[0].request.json();
    assert_eq!(
        body["messages"][0]["content"][0]["text"],
        "create hello.txt"
    );
    // Codex's acknowledgement of an answer needs no reply; the socket goes on.
    send(
        &mut socket,
        &json!({"type": "response.processed", "response_id": "x"}),
    )
    .await;
    send(&mut socket, &json!({"type": "session.update"})).await;
    let refused = next_event(&mut socket).await;
    assert_eq!(refused["type"], "error");
    assert_eq!(refused["status"], 400);
}

/// A socket without a key is refused at its handshake with the HTTP path's 401; with a key it
/// opens, a model the key may not use is that turn's 403 `error` event, the socket kept, and a
/// key revoked meanwhile is the next turn's 401.
#[tokio::test]
async fn a_socket_needs_a_client_key_and_each_turn_keeps_the_keys_rules() {
    let upstream = AgentUpstream::start(UpstreamDialect::Messages, model).await;
    let text = common::route("*", "anthropic", "claude-sonnet-4-5", &upstream.base_url());
    let config =
        ApiConfiguration::from_toml(&text, "serve.toml", |_| Some(common::KEY.to_owned())).unwrap();
    let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let new = NewKeyRequest {
        name: "codex".into(),
        models: vec!["gpt-5.5".into()],
        ..NewKeyRequest::default()
    };
    let made = create_client_key(&*store, &new, 0).await.unwrap();
    let (key, id) = (made.secret.key, made.key.id);
    let gateway = Gateway::with_store(config, Arc::clone(&store)).with_client_keys(true);
    let (base, _stop) = serve_gateway(gateway).await;
    for wrong in [None, Some("sk-sy-not-a-key")] {
        match connect(&base, wrong).await {
            Err(Error::Http(response)) => {
                assert_eq!(response.status(), 401);
                let body: Value =
                    serde_json::from_slice(response.body().as_ref().unwrap()).unwrap();
                assert!(body["error"]["message"].is_string(), "{body}");
            }
            other => panic!("a socket without a valid key opened: {other:?}"),
        }
    }
    let mut socket = connect(&base, Some(&key)).await.unwrap();
    let mut other_model = create(json!([user("hi")]), None);
    other_model["model"] = json!("gpt-4o");
    send(&mut socket, &other_model).await;
    let refused = next_event(&mut socket).await;
    assert_eq!(
        (refused["type"].as_str(), refused["status"].as_u64()),
        (Some("error"), Some(403)),
        "{refused}"
    );
    assert!(refused["error"]["message"].is_string(), "{refused}");
    assert_eq!(upstream.request_count(), 0);
    send(
        &mut socket,
        &create(json!([user("create hello.txt")]), None),
    )
    .await;
    let turn = turn_events(&mut socket).await;
    assert_eq!(
        turn.last().unwrap()["type"],
        "response.completed",
        "{turn:?}"
    );
    assert!(!turn.iter().any(|e| e.to_string().contains(&key)));
    // Revoked while its socket is open, the key stops at the next turn once the door's
    // one-second cache of keys has let it go, as over HTTP.
    assert!(store.revoke_key(&id, 0).await.unwrap());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    send(&mut socket, &create(json!([user("again")]), None)).await;
    let refused = next_event(&mut socket).await;
    assert_eq!(refused["status"], 401, "{refused}");
    assert_eq!(upstream.request_count(), 1);
}

/// A turn fails over as a `POST` does: the primary overloaded before content, the fallback
/// answers. On the next turn the primary, cooling down, is skipped and the fallback's 400 is
/// that turn's `error` event with the HTTP path's status, and the socket goes on.
#[tokio::test]
async fn a_turn_fails_over_and_a_failure_is_its_error_event_with_the_status() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let invalid = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: too many"}}"#;
    let json = [("content-type", "application/json")];
    let primary = MockServer::start(vec![
        Reply::new(HttpResponse::new(529, &json, overloaded)),
        Reply::new(HttpResponse::new(400, &json, invalid)),
    ])
    .await;
    let backup = MockServer::start(vec![
        Reply::new(HttpResponse::fixture("openai_chat_text")),
        Reply::new(HttpResponse::new(400, &json, invalid)),
    ])
    .await;
    let text = format!(
        "{}[[serve.routes.\"*\".fallbacks]]\nprovider = \"openai\"\nmodel = \"o4-mini\"\nbase_url = \"{}/v1\"\n",
        common::route("*", "anthropic", "claude-sonnet-4-5", &primary.url()),
        backup.url()
    );
    let config =
        ApiConfiguration::from_toml(&text, "serve.toml", |_| Some(common::KEY.to_owned())).unwrap();
    let (base, _stop) = serve_gateway(Gateway::new(config).unwrap()).await;
    let mut socket = connect(&base, None).await.unwrap();
    send(
        &mut socket,
        &create(json!([user("why is the sky blue?")]), None),
    )
    .await;
    let turn = turn_events(&mut socket).await;
    let done = &turn.last().unwrap()["response"];
    assert_eq!(
        turn.last().unwrap()["type"],
        "response.completed",
        "{turn:?}"
    );
    let said = done["output"][0]["content"][0]["text"].as_str().unwrap();
    assert!(said.starts_with("The sky looks blue"), "{said}");
    // What the fallback's dialect cannot carry is named before the stream, as the header would.
    assert_eq!(turn[0]["type"], "switchyard.dropped", "{:?}", turn[0]);
    assert!(turn[0]["dropped"].as_array().is_some_and(|d| !d.is_empty()));
    assert_eq!(turn[1]["type"], "response.created");
    assert_eq!((primary.request_count(), backup.request_count()), (1, 1));
    send(&mut socket, &create(json!([user("again")]), None)).await;
    let failed = turn_events(&mut socket).await;
    let last = failed.last().unwrap();
    assert_eq!(last["type"], "error", "{failed:?}");
    assert!(last["status"].as_u64().is_some_and(|s| s >= 400), "{last}");
    assert!(last["error"]["message"].is_string(), "{last}");
    assert_eq!((primary.request_count(), backup.request_count()), (1, 2));
    eprintln!("both entries failed: {last}");
}

/// A client whose socket goes away mid-stream cancels the upstream request: the upstream,
/// which sent its first text and then holds its connection open, sees it closed at once.
#[tokio::test]
async fn a_client_that_closes_mid_stream_closes_the_upstream() {
    let mut fixture = HttpResponse::fixture("anthropic_text");
    let text = String::from_utf8_lossy(&fixture.body).into_owned();
    let at = text.find("text_delta").unwrap();
    fixture
        .body
        .truncate(at + text[at..].find("\n\n").unwrap() + 2);
    let reply = Reply::new(fixture).after_body(AfterBody::HoldOpen(Duration::from_secs(60)));
    let upstream = MockServer::start(vec![reply]).await;
    let (base, _stop) = serve_gateway(gateway_to(&upstream.url())).await;
    let mut socket = connect(&base, None).await.unwrap();
    send(&mut socket, &create(json!([user("hi")]), None)).await;
    loop {
        let event = next_event(&mut socket).await;
        if event["type"] == "response.output_item.added" {
            break;
        }
    }
    drop(socket);
    let gone = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), upstream.wait_for_closed(1))
        .await
        .expect("the upstream stays open after the socket went");
    let took = gone.elapsed();
    eprintln!("the upstream connection closed {took:?} after the socket went");
    assert!(took < Duration::from_millis(500), "{took:?}");
}

/// A message past the body cap is refused before it is read whole, with the sentence the HTTP
/// path's 413 has, and the socket is closed with 1009 (message too big).
#[tokio::test]
async fn a_message_past_the_body_cap_is_refused_with_a_sentence_and_closes_the_socket() {
    let upstream = AgentUpstream::start(UpstreamDialect::Messages, model).await;
    let gateway = gateway_to(&upstream.base_url()).with_body_limit(64 * 1024);
    let (base, _stop) = serve_gateway(gateway).await;
    let mut socket = connect(&base, None).await.unwrap();
    let big = create(json!([user(&"x".repeat(100 * 1024))]), None);
    send(&mut socket, &big).await;
    let refused = next_event(&mut socket).await;
    assert_eq!(refused["status"], 413, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert_eq!(
        message,
        "The message is larger than this gateway's 0.0625 MiB."
    );
    let closed = tokio::time::timeout(Duration::from_secs(5), socket.next())
        .await
        .unwrap();
    match closed {
        Some(Ok(Message::Close(Some(frame)))) => {
            assert_eq!(frame.code, CloseCode::Size);
            assert_eq!(frame.reason.as_str(), message);
        }
        other => panic!("no close frame: {other:?}"),
    }
    assert_eq!(upstream.request_count(), 0);
}

/// A message past the shape caps is refused before a tree of it is built, as an HTTP body is
/// (SPEC R14.10), and the socket goes on: the next message is answered.
#[tokio::test]
async fn a_message_past_the_shape_caps_is_refused_and_the_socket_goes_on() {
    let upstream = AgentUpstream::start(UpstreamDialect::Messages, model).await;
    let (base, _stop) = serve_gateway(gateway_to(&upstream.base_url())).await;
    let mut socket = connect(&base, None).await.unwrap();
    let many: Vec<Value> = (0..=switchyard_gateway::ingress::MESSAGES_MAX)
        .map(|_| user("a"))
        .collect();
    send(&mut socket, &create(Value::Array(many), None)).await;
    let refused = next_event(&mut socket).await;
    assert_eq!(refused["status"], 400, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("`input`"), "{message}");
    send(&mut socket, &create(json!([user("hello")]), None)).await;
    let events = turn_events(&mut socket).await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.completed", "{events:?}");
    assert_eq!(upstream.request_count(), 1);
}

/// A `GET /v1/responses` that asks for no WebSocket is a 426 naming the HTTP path.
#[tokio::test]
async fn a_plain_get_of_the_responses_path_is_a_426_naming_post() {
    let (base, _stop) = serve_gateway(gateway_to("http://127.0.0.1:9")).await;
    let response = reqwest::get(format!("{base}/v1/responses")).await.unwrap();
    assert_eq!(response.status(), 426);
    let body: Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("POST /v1/responses"), "{message}");
}

/// An open socket holds its connection's slot, as a request being answered does: with one
/// slot, another client's connection is closed while the socket lives and served after.
#[tokio::test]
async fn an_open_socket_holds_its_connection_slot_until_it_closes() {
    let limits = ServerLimits {
        max_connections: 1,
        max_connections_per_address: 1,
        ..ServerLimits::default()
    };
    let (base, _stop) = serve_with(gateway_to("http://127.0.0.1:9"), limits).await;
    let health = || async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        client
            .get(format!("{base}/health"))
            .send()
            .await
            .map(|r| r.status().as_u16())
    };
    let mut socket = connect(&base, None).await.unwrap();
    assert!(
        health().await.is_err(),
        "a second connection was served beside the socket"
    );
    socket.close(None).await.unwrap();
    while socket.next().await.is_some() {}
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match health().await {
            Ok(status) => break assert_eq!(status, 200),
            Err(e) if Instant::now() > deadline => panic!("the slot was not freed: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// The value of the `switchyard_gateway_websockets_open` gauge in `base`'s `/metrics`.
async fn websockets_open(base: &str) -> i64 {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("switchyard_gateway_websockets_open "))
        .unwrap_or_else(|| panic!("no websockets gauge in /metrics:\n{text}"));
    line.trim().parse().unwrap()
}

/// `/metrics` counts each socket open from its 101 until it closes, and a refused handshake
/// never.
#[tokio::test]
async fn the_open_sockets_gauge_counts_each_socket_until_it_closes() {
    let (base, _stop) = serve_gateway(gateway_to("http://127.0.0.1:9")).await;
    assert_eq!(websockets_open(&base).await, 0);
    let _refused = reqwest::get(format!("{base}/v1/responses")).await.unwrap();
    let mut first = connect(&base, None).await.unwrap();
    let mut second = connect(&base, None).await.unwrap();
    assert_eq!(websockets_open(&base).await, 2);
    for (socket, left) in [(&mut first, 1), (&mut second, 0)] {
        socket.close(None).await.unwrap();
        while socket.next().await.is_some() {}
        let deadline = Instant::now() + Duration::from_secs(5);
        while websockets_open(&base).await != left {
            assert!(
                Instant::now() < deadline,
                "a closed socket is still counted"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Codex sends its next `response.create` as soon as it reads `response.completed`, which may be
/// before the turn's stream has ended inside the gateway: such a turn waits for it and is run,
/// never refused as one already in flight. Twenty turns a session, five sessions, on two
/// threads as serve runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_sent_right_after_the_last_ones_completed_event_is_run() {
    let upstream = AgentUpstream::start(UpstreamDialect::Messages, bench_model).await;
    let (base, _stop) = serve_gateway(gateway_to(&upstream.base_url())).await;
    for _ in 0..5 {
        assert_eq!(bench_socket(&base).await.0.len(), BENCH_TURNS);
    }
    assert_eq!(upstream.request_count(), 5 * BENCH_TURNS);
}

/// At shutdown an open socket between turns is closed at once with 1001 (going away), so the
/// gateway's drain does not wait for it.
#[tokio::test]
async fn shutdown_closes_an_idle_socket_with_going_away() {
    let (base, stop) = serve_gateway(gateway_to("http://127.0.0.1:9")).await;
    let mut socket = connect(&base, None).await.unwrap();
    stop.cancel();
    let closed = tokio::time::timeout(Duration::from_secs(5), socket.next())
        .await
        .expect("the socket stayed open after shutdown");
    match closed {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(frame.code, CloseCode::Away),
        other => panic!("no close frame: {other:?}"),
    }
}

/// The turns of one Codex-shaped session (bench/websocket times the same): a tool call each,
/// the last one text.
const BENCH_TURNS: usize = 20;

/// A Codex-sized first request: 12 KB of instructions and 20 tools of about 700 bytes.
fn bench_create(input: Vec<Value>, previous: Option<&str>) -> Value {
    let mut body = create(Value::Array(input), previous);
    body["instructions"] = json!("You are a coding agent. ".repeat(500));
    let tool = |i: usize| {
        json!({"type": "function", "name": format!("tool_{i}"), "description": "Does one thing. ".repeat(40),
               "strict": false, "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}})
    };
    body["tools"] = Value::Array((0..20).map(tool).collect());
    body
}

/// The model of the benchmark: `tool_0` until the last turn, then text.
fn bench_model(r: &AgentTurnRequest) -> AgentTurn {
    if r.tool_results + 1 < BENCH_TURNS {
        AgentTurn::tool_call("tool_0", json!({"cmd": "ls"}))
    } else {
        AgentTurn::text("Done.")
    }
}

/// What a turn's answer adds to the conversation: its call and a 2 KB output for it.
fn bench_next(response: &Value) -> Vec<Value> {
    let output = response["output"].as_array().cloned().unwrap_or_default();
    let call = output.iter().find(|i| i["type"] == "function_call");
    let mut items = output.clone();
    if let Some(call) = call {
        items.push(json!({"type": "function_call_output", "call_id": call["call_id"], "output": "x".repeat(2048)}));
    }
    items
}

/// One session over one socket: each turn's time from its message to its first output item, and
/// the bytes the client sent.
async fn bench_socket(base: &str) -> (Vec<Duration>, usize) {
    let started = Instant::now();
    let mut socket = connect(base, None).await.unwrap();
    let (mut times, mut bytes) = (Vec::new(), 0);
    let (mut input, mut previous) = (vec![user("list the files")], None::<String>);
    for turn in 0..BENCH_TURNS {
        let sent = if turn == 0 { started } else { Instant::now() };
        let create = bench_create(input.clone(), previous.as_deref());
        bytes += create.to_string().len();
        send(&mut socket, &create).await;
        let mut first = None;
        let response = loop {
            let event = next_event(&mut socket).await;
            assert_ne!(event["type"], "error", "turn {turn}: {event}");
            if first.is_none() && event["type"] == "response.output_item.added" {
                first = Some(sent.elapsed());
            }
            if event["type"] == "response.completed" {
                break event["response"].clone();
            }
        };
        times.push(first.unwrap());
        previous = response["id"].as_str().map(str::to_owned);
        input = bench_next(&response)[response["output"].as_array().unwrap().len()..].to_vec();
    }
    (times, bytes)
}
