//! SPEC R7.6: a connection that fails before any byte of the response — a pooled keep-alive
//! connection the server closed while it sat idle, found dead only when the request goes out
//! on it — is reopened and the request sent again at once, once, with no backoff and no retry
//! counted. Real servers close idle keep-alive connections (nginx after 75 s, Node's
//! `keepAliveTimeout` after 5 s); the race is made exact here by a server that reads the
//! request and closes without answering, or accepts and closes without reading.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use switchyard_api::{ApiStreamChunk, ErrorKind, Message, RequestOptions, RetryStatus};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

mod common;

use common::handler;

/// What the server does with each connection, in order (the last repeats).
#[derive(Clone, Copy, Debug)]
enum Conn {
    /// Accepts and closes without reading.
    CloseAtOnce,
    /// Answers `n` requests with a kept-alive response, then reads the next request and
    /// closes without answering it (the server's idle close racing the client's reuse).
    AnswerThenDrop(usize),
    /// Answers every request.
    Answer,
}

/// A one-chunk OpenAI Chat stream with a content length, so the connection can be kept alive.
fn ok_response() -> Vec<u8> {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"OK\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n"
    );
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Reads one request (head and content-length body); `false` at EOF.
async fn read_request(socket: &mut TcpStream) -> bool {
    let mut data = Vec::new();
    let mut piece = [0u8; 4096];
    loop {
        let n = socket.read(&mut piece).await.unwrap_or(0);
        if n == 0 {
            return false;
        }
        data.extend_from_slice(&piece[..n]);
        let text = String::from_utf8_lossy(&data).to_ascii_lowercase();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if data.len() >= end + 4 + length {
                return true;
            }
        }
    }
}

/// The server: its URL, the connections accepted and the requests answered, with their times.
struct Server {
    url: String,
    connections: Arc<AtomicUsize>,
    answered: Arc<Mutex<Vec<Instant>>>,
}

async fn serve(script: Vec<Conn>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(Mutex::new(Vec::new()));
    let (count, times) = (Arc::clone(&connections), Arc::clone(&answered));
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let n = count.fetch_add(1, Ordering::SeqCst);
            let conn = script[n.min(script.len() - 1)];
            let times = Arc::clone(&times);
            tokio::spawn(async move {
                let answers = match conn {
                    Conn::CloseAtOnce => return,
                    Conn::AnswerThenDrop(k) => k,
                    Conn::Answer => usize::MAX,
                };
                for _ in 0..answers {
                    if !read_request(&mut socket).await {
                        return;
                    }
                    times.lock().unwrap().push(Instant::now());
                    socket.write_all(&ok_response()).await.unwrap();
                }
                // The next request arrives on a connection the server is closing.
                let _ = read_request(&mut socket).await;
            });
        }
    });
    Server {
        url,
        connections,
        answered,
    }
}

/// One request through a fresh handler; the text it streamed, or its error, and the
/// provider-level retries it reported.
async fn ask(
    h: &dyn switchyard_api::ApiHandler,
) -> (Result<String, switchyard_api::ApiError>, usize) {
    let retries = Arc::new(Mutex::new(Vec::<RetryStatus>::new()));
    let seen = Arc::clone(&retries);
    let options = RequestOptions {
        on_retry: Some(Arc::new(move |s| seen.lock().unwrap().push(s))),
        ..RequestOptions::default()
    };
    let mut stream = h.create_message("S", &[Message::user_text("q")], &[], options);
    let mut text = String::new();
    let mut result = Ok(());
    while let Some(item) = stream.next().await {
        match item {
            Ok(ApiStreamChunk::Text { text: t, .. }) => text.push_str(&t),
            Ok(_) => {}
            Err(e) => result = Err(e),
        }
    }
    let n = retries.lock().unwrap().len();
    (result.map(|()| text), n)
}

#[tokio::test(start_paused = true)]
async fn a_connection_closed_before_any_response_byte_is_reopened_at_once() {
    let server = serve(vec![Conn::CloseAtOnce, Conn::Answer]).await;
    let h = handler("openai", "gpt-4o", &server.url, "");
    let started = Instant::now();
    let (text, retries) = ask(h.as_ref()).await;
    assert_eq!(text.unwrap(), "OK");
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    assert_eq!(retries, 0, "no provider-level retry is counted");
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "no wait before the new connection"
    );
}

#[tokio::test(start_paused = true)]
async fn a_kept_alive_connection_the_server_dropped_is_replaced() {
    // Request 1 leaves its connection in the pool; the server closes it as request 2 goes out
    // on it; request 2 is sent again on a new connection and answered.
    let server = serve(vec![Conn::AnswerThenDrop(1), Conn::Answer]).await;
    let h = handler("openai", "gpt-4o", &server.url, "");
    for _ in 0..2 {
        let (text, retries) = ask(h.as_ref()).await;
        assert_eq!(text.unwrap(), "OK");
        assert_eq!(retries, 0);
    }
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    assert_eq!(server.answered.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_connection_is_reopened_only_once() {
    // Every connection closes unanswered: one new connection, then the error (a network error,
    // which the provider level does not retry for a cloud provider, SPEC R5.1).
    let server = serve(vec![Conn::CloseAtOnce]).await;
    let h = handler("openai", "gpt-4o", &server.url, "");
    let (result, retries) = ask(h.as_ref()).await;
    let e = result.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Network, "{e}");
    assert_eq!(retries, 0);
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}
