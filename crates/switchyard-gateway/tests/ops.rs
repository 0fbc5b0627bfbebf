//! The gateway's operational limits and endpoints on 127.0.0.1 (SPEC R14.1, R14.10): the
//! idle keep-alive timeout, the header read timeout counted from a head's first byte, the
//! connection cap, and `POST /v1/messages/count_tokens`. Raw sockets where the connection
//! itself is what is tested; every wait is bounded generously.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
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
    let gateway = Arc::new(Gateway::new(config));
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
    while !seen.contains("text_delta") {
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
async fn beyond_the_connection_cap_a_new_connection_is_closed_and_those_open_are_served() {
    let caps = ServerLimits {
        max_connections: 2,
        ..limits(BOUND * 3, BOUND * 3)
    };
    let gateway = start("", caps).await;
    let mut a = TcpStream::connect(&gateway.addr).await.unwrap();
    let mut b = TcpStream::connect(&gateway.addr).await.unwrap();
    // Both are served: they hold the two slots.
    assert!(health(&mut a).await.starts_with("HTTP/1.1 200"));
    assert!(health(&mut b).await.starts_with("HTTP/1.1 200"));
    let mut c = TcpStream::connect(&gateway.addr).await.unwrap();
    let _ = c
        .write_all(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
        .await;
    let refused = closed_by_server(&mut c).await;
    assert_eq!(
        refused.as_deref(),
        Some(&b""[..]),
        "a third connection is closed at once, unanswered"
    );
    // Those open go on being served.
    assert!(health(&mut a).await.starts_with("HTTP/1.1 200"));
    // One closes: its slot is free again once the server has seen it go.
    drop(b);
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
        assert!(started.elapsed() < BOUND, "the freed slot was never reused");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(health(&mut a).await.starts_with("HTTP/1.1 200"));
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
