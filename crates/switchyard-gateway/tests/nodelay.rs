//! `TCP_NODELAY` can never be lost (SPEC R14.10; issue 25): through `serve`, a zero-delay
//! upstream's first chunk reaches a client that delays its ACKs well under the 40 ms of Linux's
//! delayed-ACK timer. Without `TCP_NODELAY` on the gateway's accepted socket, Nagle's algorithm
//! holds the stream's second small write (the first chunk after the response head) until the
//! client ACKs the first, and a client with `TCP_QUICKACK` off ACKs only after ~40 ms: what
//! TensorZero 2026.6.0 does to every stream (measured in bench/README.md, "Gateways").
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchyard_api::ApiConfiguration;
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{HttpResponse, MockServer, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// Requests per client dialect, each timed to its first chunk.
const REQUESTS: usize = 20;
/// The bound on the median time to the first chunk: generous for a loaded 2-core machine,
/// and still well under the 40 ms a lost `TCP_NODELAY` costs every request.
const BOUND: Duration = Duration::from_millis(30);

/// Reads from `socket` into `got` until `needle` is in it (bounded: 10 s, 1 MiB).
async fn read_until(socket: &mut TcpStream, got: &mut Vec<u8>, needle: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !got.windows(needle.len()).any(|w| w == needle) {
        assert!(got.len() < 1 << 20, "no {needle:?} in 1 MiB");
        let mut buf = [0u8; 16384];
        let left = deadline.saturating_duration_since(Instant::now());
        let n = tokio::time::timeout(left, socket.read(&mut buf))
            .await
            .expect("the gateway answered within 10 s")
            .unwrap();
        assert!(
            n > 0,
            "the gateway closed the connection: {}",
            String::from_utf8_lossy(got)
        );
        got.extend_from_slice(&buf[..n]);
    }
}

/// Times `REQUESTS` streamed requests on one keep-alive connection, from the request's write to
/// the first SSE event's bytes, with the client's delayed ACKs on before each request.
async fn first_chunk_times(addr: &str, path: &str, body: &str) -> Vec<Duration> {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.set_nodelay(true).unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         anthropic-version: 2023-06-01\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut times = Vec::new();
    for _ in 0..REQUESTS {
        // Linux re-enters quick-ACK mode on its own; switching it off before each request makes
        // this client delay its ACKs as an SDK's idle keep-alive connection does.
        socket2::SockRef::from(&socket)
            .set_tcp_quickack(false)
            .unwrap();
        let sent = Instant::now();
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        read_until(&mut socket, &mut got, b"data:").await;
        times.push(sent.elapsed());
        read_until(&mut socket, &mut got, b"\r\n0\r\n\r\n").await;
        let head = String::from_utf8_lossy(&got[..got.len().min(200)]).into_owned();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    }
    times
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streams_first_chunk_is_not_held_for_the_clients_delayed_ack() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let text = format!(
        "[serve.routes.\"m\"]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\nbase_url = \"{}/v1\"\n",
        upstream.url()
    );
    let config =
        ApiConfiguration::from_toml(&text, "serve.toml", |_| Some("sk-test".to_owned())).unwrap();
    let gateway = Gateway::new(config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(serve(
        listener,
        Arc::new(gateway),
        ServerLimits::default(),
        shutdown.clone(),
    ));
    let user = r#"[{"role": "user", "content": "hi"}]"#;
    // Forwarded (Chat Completions on a Chat route) and translated (Messages on it).
    let chat = format!(r#"{{"model": "m", "stream": true, "messages": {user}}}"#);
    let messages =
        format!(r#"{{"model": "m", "stream": true, "max_tokens": 64, "messages": {user}}}"#);
    for (path, body) in [("/v1/chat/completions", chat), ("/v1/messages", messages)] {
        let times = first_chunk_times(&addr, path, &body).await;
        let median = median(times.clone());
        assert!(
            median < BOUND,
            "{path}: median time to the first chunk {median:?} (all: {times:?}): is TCP_NODELAY set on accepted sockets?"
        );
    }
    shutdown.cancel();
    served.await.unwrap();
}
