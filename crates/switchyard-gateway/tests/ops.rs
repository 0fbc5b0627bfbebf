//! The gateway's operational limits and endpoints on 127.0.0.1 (SPEC R14.1, R14.10): the
//! idle keep-alive timeout, the header read timeout counted from a head's first byte, the
//! connection cap, and `POST /v1/messages/count_tokens`. Raw sockets where the connection
//! itself is what is tested; every wait is bounded generously.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_api::ApiConfiguration;
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{Gate, HttpResponse, MockServer, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-gateway-ops-key-0123456789";

/// Longer than any clock a test sets, far shorter than the defaults (30 s, 60 s): a
/// connection still open after it was not closed by the clock under test.
const BOUND: Duration = Duration::from_secs(10);

/// A gateway serving on 127.0.0.1:0 until dropped.
struct Running {
    addr: String,
    shutdown: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Running {
    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }
}

async fn start(text: &str, limits: ServerLimits) -> Running {
    let config = ApiConfiguration::from_toml(text, "ops.toml", |_| Some(KEY.to_owned())).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let shutdown = CancellationToken::new();
    let gateway = Arc::new(Gateway::new(config).unwrap());
    tokio::spawn(serve(listener, gateway, limits, shutdown.clone()));
    Running { addr, shutdown }
}

fn limits(idle: Duration, head: Duration) -> ServerLimits {
    ServerLimits {
        idle_timeout: idle,
        header_read_timeout: head,
        ..ServerLimits::default()
    }
}

/// Sends `GET /health` on `stream` (keep-alive) and reads its whole response.
async fn health(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    read_response(stream).await
}

/// Reads one response whose body ends with `}` (the gateway's JSON) within [`BOUND`].
async fn read_response(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let read = tokio::time::timeout(BOUND, async {
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(
                n > 0,
                "closed mid-response: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen);
            if let Some(at) = text.find("\r\n\r\n") {
                let length = (text.to_ascii_lowercase())
                    .split("content-length: ")
                    .nth(1)
                    .and_then(|v| v.split("\r\n").next()?.parse::<usize>().ok())
                    .unwrap();
                if seen.len() >= at + 4 + length {
                    return;
                }
            }
        }
    });
    read.await.expect("a response within the bound");
    String::from_utf8(seen).unwrap()
}

/// Waits (within [`BOUND`]) for the server to close `stream`: what it sent before, if
/// anything; `None` when it is still open after the bound.
async fn closed_by_server(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut rest = Vec::new();
    match tokio::time::timeout(BOUND, stream.read_to_end(&mut rest)).await {
        Ok(Ok(_)) => Some(rest),
        // A reset (the server closed with our bytes unread) is a close too.
        Ok(Err(_)) => Some(rest),
        Err(_) => None,
    }
}

#[tokio::test]
async fn a_keep_alive_connection_with_no_request_is_closed_after_the_idle_timeout() {
    let gateway = start("", limits(Duration::from_millis(300), BOUND * 3)).await;
    let mut stream = TcpStream::connect(&gateway.addr).await.unwrap();
    let first = health(&mut stream).await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    // Still open (keep-alive) and served again within the timeout.
    let second = health(&mut stream).await;
    assert!(second.starts_with("HTTP/1.1 200"), "{second}");
    let answered = Instant::now();
    let rest = closed_by_server(&mut stream).await;
    assert_eq!(
        rest.as_deref(),
        Some(&b""[..]),
        "an idle connection is closed, silently, before the header timeout"
    );
    // Not before the idle timeout, counted from the end of the last response.
    assert!(answered.elapsed() >= Duration::from_millis(250));
}

#[tokio::test]
async fn a_connection_that_never_sends_a_byte_is_closed_after_the_idle_timeout() {
    let gateway = start("", limits(Duration::from_millis(300), BOUND * 3)).await;
    let mut stream = TcpStream::connect(&gateway.addr).await.unwrap();
    assert!(closed_by_server(&mut stream).await.is_some());
}

#[tokio::test]
async fn idle_time_before_a_request_is_not_counted_against_the_header_read_timeout() {
    // hyper's own header timer runs while a connection waits for a head, idle or not: with it
    // this connection would be closed 200 ms after it opened.
    let gateway = start("", limits(BOUND * 3, Duration::from_millis(200))).await;
    let mut stream = TcpStream::connect(&gateway.addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let answer = health(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    tokio::time::sleep(Duration::from_millis(800)).await;
    let again = health(&mut stream).await;
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
    // A head that starts and stalls is still cut by the header clock.
    stream.write_all(b"GET /health HTTP/1.1\r\n").await.unwrap();
    assert!(closed_by_server(&mut stream).await.is_some());
}

#[tokio::test]
async fn a_request_body_sent_slowly_is_not_cut_by_the_idle_timeout() {
    let gateway = start("", limits(Duration::from_millis(200), BOUND * 3)).await;
    let mut stream = TcpStream::connect(&gateway.addr).await.unwrap();
    let body = json!({"model": "nowhere", "max_tokens": 8,
                      "messages": [{"role": "user", "content": "hi"}]})
    .to_string();
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    stream.write_all(body.as_bytes()).await.unwrap();
    let answer = read_response(&mut stream).await;
    // No route `nowhere`: the gateway's 404, in Anthropic's shape.
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(answer.contains("\"type\":\"error\""), "{answer}");
}

#[tokio::test]
async fn a_stream_in_flight_longer_than_the_idle_timeout_is_not_cut() {
    let fixture = HttpResponse::fixture("anthropic_text");
    let body = String::from_utf8_lossy(&fixture.body).into_owned();
    let at = body.find("text_delta").unwrap();
    let cut = at + body[at..].find("\n\n").unwrap() + 2;
    let gate = Gate::new();
    let upstream = MockServer::start(vec![Reply::new(fixture).gate_at(cut, &gate)]).await;
    let route = format!(
        "[serve.routes.sonnet]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{}\"\n",
        upstream.url()
    );
    let gateway = start(&route, limits(Duration::from_millis(200), BOUND * 3)).await;
    let request = json!({"model": "sonnet", "stream": true, "max_tokens": 64,
                         "messages": [{"role": "user", "content": "hi"}]});
    let client = reqwest::Client::new();
    let mut response = (client.post(format!("{}/v1/messages", gateway.base())))
        .header("content-type", "application/json")
        .body(request.to_string())
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    // The answer has started (its text delta may wait with the scrubber's held "s", which
    // could start the configured `sk-` key: SPEC R10.5).
    while !seen.contains("content_block_start") {
        let chunk = response.chunk().await.unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    // Four idle timeouts with nothing sent either way: the request is in flight.
    tokio::time::sleep(Duration::from_millis(800)).await;
    gate.open();
    while let Some(chunk) = response.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("event: message_stop"), "{seen}");
}

#[tokio::test]
async fn beyond_the_connection_cap_the_oldest_connection_not_serving_gives_its_slot_to_a_new_one() {
    let caps = ServerLimits {
        max_connections: 2,
        ..limits(BOUND * 3, BOUND * 3)
    };
    let gateway = start("", caps).await;
    let mut a = TcpStream::connect(&gateway.addr).await.unwrap();
    let mut b = TcpStream::connect(&gateway.addr).await.unwrap();
    assert!(health(&mut a).await.starts_with("HTTP/1.1 200"));
    assert!(health(&mut b).await.starts_with("HTTP/1.1 200"));
    // Both idle: a third connection takes the oldest one's slot and is served.
    let mut c = TcpStream::connect(&gateway.addr).await.unwrap();
    assert!(health(&mut c).await.starts_with("HTTP/1.1 200"));
    let closed = closed_by_server(&mut a).await;
    assert_eq!(
        closed.as_deref(),
        Some(&b""[..]),
        "the oldest idle one is closed, silently"
    );
    assert!(health(&mut b).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn when_every_connection_is_serving_a_new_one_is_closed_unanswered_until_one_ends() {
    let fixture = HttpResponse::fixture("anthropic_text");
    let body = String::from_utf8_lossy(&fixture.body).into_owned();
    let at = body.find("text_delta").unwrap();
    let cut = at + body[at..].find("\n\n").unwrap() + 2;
    let gate = Gate::new();
    let upstream = MockServer::start(vec![Reply::new(fixture).gate_at(cut, &gate)]).await;
    let route = format!(
        "[serve.routes.sonnet]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{}\"\n",
        upstream.url()
    );
    let caps = ServerLimits {
        max_connections: 2,
        ..limits(BOUND * 3, BOUND * 3)
    };
    let gateway = start(&route, caps).await;
    let request = json!({"model": "sonnet", "stream": true, "max_tokens": 64,
                         "messages": [{"role": "user", "content": "hi"}]})
    .to_string();
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{request}",
        request.len()
    );
    // Two streams in flight, held at the gate: both connections are serving.
    let mut streams = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(&gateway.addr).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        let mut buf = [0u8; 256];
        let n = tokio::time::timeout(BOUND, s.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
        streams.push(s);
    }
    let mut c = TcpStream::connect(&gateway.addr).await.unwrap();
    let _ = c
        .write_all(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
        .await;
    let refused = closed_by_server(&mut c).await;
    assert_eq!(
        refused.as_deref(),
        Some(&b""[..]),
        "closed at once, unanswered"
    );
    // The streams end; their slots serve again.
    gate.open();
    for mut s in streams {
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(BOUND, s.read_to_end(&mut rest)).await;
        drop(s);
    }
    let started = Instant::now();
    loop {
        let mut d = TcpStream::connect(&gateway.addr).await.unwrap();
        let _ = d
            .write_all(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
            .await;
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(BOUND, d.read(&mut buf)).await.unwrap();
        if n.is_ok_and(|n| buf[..n].starts_with(b"HTTP/1.1 200")) {
            break;
        }
        assert!(started.elapsed() < BOUND, "a freed slot was never reused");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn the_serve_section_sets_the_idle_timeout_and_the_connection_cap() {
    let text = "[serve]\nidle_timeout = 5\nmax_connections = 16\n";
    let config = ApiConfiguration::from_toml(text, "ops.toml", |_| None).unwrap();
    let set = ServerLimits::from_settings(&config.serve);
    assert_eq!(
        (set.idle_timeout, set.max_connections),
        (Duration::from_secs(5), 16)
    );
    let unset = ServerLimits::default();
    assert_eq!(
        (unset.idle_timeout, unset.max_connections),
        (Duration::from_secs(60), 1024)
    );
    assert_eq!(unset.header_read_timeout, Duration::from_secs(30));
}

/// A route `claude-*` to OpenAI's `model` at an upstream that must never be asked (its
/// request count is checked): the gateway and the upstream.
async fn count_gateway(model: &str) -> (Running, MockServer) {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let route = format!(
        "[serve.routes.\"claude-*\"]\nprovider = \"openai\"\nmodel = \"{model}\"\nbase_url = \"{}/v1\"\n",
        upstream.url()
    );
    (start(&route, ServerLimits::default()).await, upstream)
}

/// POSTs `body` to `/v1/messages/count_tokens?beta=true` as Claude Code does: status,
/// headers, body as JSON.
async fn count(base: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/messages/count_tokens?beta=true"))
        .header("anthropic-version", "2023-06-01")
        .header(
            "anthropic-beta",
            "claude-code-20250219,token-counting-2024-11-01",
        )
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.json().await.unwrap())
}

/// A count_tokens body shaped like Claude Code's (system blocks with `cache_control`, a tool,
/// a tool call and its result, adaptive thinking, no `max_tokens`) with `turns` extra turns.
fn claude_code_count_body(turns: usize) -> Value {
    let mut messages = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "create hello.txt containing hi"}]}),
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Write",
               "input": {"file_path": "hello.txt", "content": "hi"}}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
               "content": "File created successfully at: hello.txt"}]}),
    ];
    for i in 0..turns {
        messages.push(json!({"role": "assistant", "content": format!("Turn {i}: the file is there and says hi.")}));
        messages.push(json!({"role": "user", "content": format!("Check it again, turn {i}.")}));
    }
    json!({
        "model": "claude-sonnet-4-5-20250929",
        "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.",
                    "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "Write", "description": "Writes a file to the local filesystem.",
                   "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"},
                                    "content": {"type": "string"}}, "required": ["file_path", "content"]}}],
        "messages": messages,
        "thinking": {"type": "adaptive"},
    })
}

// litellm#13252 (https://github.com/BerriAI/litellm/issues/13252): Claude Code calls
// `/v1/messages/count_tokens?beta=true` often and a gateway without it answers 404.
// sub2api#657 (https://github.com/Wei-Shaw/sub2api/pull/657): a made-up `{"input_tokens": 0}`
// is trusted by Claude Code, whose auto-compaction then never starts.
// claude-relay-service#731 (https://github.com/Wei-Shaw/claude-relay-service/issues/731): the
// VS Code extension sends 40-50 counts a second at start, which burn the upstream's RPM when
// forwarded.
#[tokio::test]
async fn count_tokens_answers_the_layers_estimate_for_the_routes_model_without_asking_upstream() {
    let (gateway, upstream) = count_gateway("gpt-4o").await;
    let (status, headers, body) = count(&gateway.base(), &claude_code_count_body(0)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["x-switchyard-usage"], "estimated");
    assert!(headers.contains_key("x-request-id"));
    let object = body.as_object().unwrap();
    assert_eq!(
        object.keys().collect::<Vec<_>>(),
        ["input_tokens"],
        "{body}"
    );
    // Exactly the task layer's estimate with gpt-4o's tokenizer (o200k_base), plus the tool.
    use switchyard_core::context::{Tokenizer, estimate_message_tokens_with};
    let request = switchyard_gateway::ingress::parse_count_tokens(
        claude_code_count_body(0).to_string().as_bytes(),
    )
    .unwrap();
    let tokenizer = Tokenizer::for_model("gpt-4o");
    assert_eq!(tokenizer, Tokenizer::O200kBase);
    let tool = &request.tools[0];
    let expected =
        estimate_message_tokens_with(tokenizer, &request.system_prompt, &request.messages)
            + tokenizer.count(&format!(
                "{}{}{}",
                tool.name, tool.description, tool.input_schema
            ));
    let small = body["input_tokens"].as_u64().unwrap();
    assert_eq!(small, expected);
    assert!(small > 20, "{small}");
    // A longer conversation counts more; many counts at once are all answered locally.
    let (_, _, longer) = count(&gateway.base(), &claude_code_count_body(20)).await;
    let longer = longer["input_tokens"].as_u64().unwrap();
    assert!(longer > small + 100, "{longer}");
    eprintln!("count_tokens: {small} tokens (Claude Code's shape), {longer} with 20 more turns");
    let base = gateway.base();
    let burst: Vec<_> = (0..40)
        .map(|_| {
            let base = base.clone();
            tokio::spawn(async move { count(&base, &claude_code_count_body(1)).await.0 })
        })
        .collect();
    for answer in burst {
        assert_eq!(answer.await.unwrap(), 200);
    }
    assert_eq!(upstream.request_count(), 0, "no provider is asked to count");
}

#[tokio::test]
async fn count_tokens_errors_are_in_anthropics_shape() {
    let (gateway, _upstream) = count_gateway("gpt-4o").await;
    // A malformed body: 400 naming the field.
    let bad = json!({"model": "claude-sonnet-4-5", "messages": "hi"});
    let (status, _, body) = count(&gateway.base(), &bad).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("messages"),
        "{body}"
    );
    // A model no route names: 404 listing the routes.
    let unknown =
        json!({"model": "gemini-2.5-pro", "messages": [{"role": "user", "content": "hi"}]});
    let (status, _, body) = count(&gateway.base(), &unknown).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["type"], "not_found_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("claude-*"),
        "{body}"
    );
    // A max_tokens, when sent, is still checked as /v1/messages checks it.
    let zero = json!({"model": "claude-x", "max_tokens": 0, "messages": [{"role": "user", "content": "hi"}]});
    let (status, _, body) = count(&gateway.base(), &zero).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_tokens"),
        "{body}"
    );
    // /v1/messages itself still requires max_tokens.
    let response = reqwest::Client::new()
        .post(format!("{}/v1/messages", gateway.base()))
        .header("content-type", "application/json")
        .body(
            json!({"model": "claude-x", "messages": [{"role": "user", "content": "hi"}]})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
}
