//! One session each way: each turn's time from its send to its first output item, and the
//! bytes the client sent.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::codex;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One session over one socket, as Codex's WebSocket transport runs it: each turn sends only
/// what is new and continues the last response. The first turn's time includes the handshake.
pub(crate) async fn over_socket(base: &str, turns: usize) -> (Vec<Duration>, usize) {
    let started = Instant::now();
    let mut socket = connect(base).await;
    let (mut times, mut bytes) = (Vec::new(), 0);
    let (mut input, mut previous) = (vec![codex::user("list the files")], None::<String>);
    for turn in 0..turns {
        let sent = if turn == 0 { started } else { Instant::now() };
        let create = codex::create(input.clone(), previous.as_deref()).to_string();
        bytes += create.len();
        (socket.send(Message::text(create)).await).expect("the socket takes a turn");
        let (first, response) = turn_over_socket(&mut socket, sent).await;
        times.push(first);
        previous = response["id"].as_str().map(str::to_owned);
        let said = response["output"].as_array().map_or(0, Vec::len);
        input = codex::next(&response)[said..].to_vec();
    }
    (times, bytes)
}

async fn connect(base: &str) -> Socket {
    let url = format!("{}/v1/responses", base.replace("http://", "ws://"));
    let mut request = url.into_client_request().expect("a WebSocket URL");
    let beta = "responses_websockets=2026-02-06"
        .parse()
        .expect("a header value");
    request.headers_mut().insert("openai-beta", beta);
    let (socket, _) = (tokio_tungstenite::connect_async(request).await).expect("the handshake");
    socket
}

/// Reads one turn's events: the time to its first output item and its completed response.
async fn turn_over_socket(socket: &mut Socket, sent: Instant) -> (Duration, Value) {
    let mut first = None;
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next()).await;
        let message = message
            .expect("an event within 10 s")
            .expect("the socket is open");
        let Message::Text(text) = message.expect("a readable message") else {
            continue;
        };
        let event: Value = serde_json::from_str(&text).expect("a JSON event");
        assert_ne!(event["type"], "error", "{event}");
        if first.is_none() && event["type"] == "response.output_item.added" {
            first = Some(sent.elapsed());
        }
        if event["type"] == "response.completed" {
            return (
                first.unwrap_or_else(|| sent.elapsed()),
                event["response"].clone(),
            );
        }
    }
}

/// One session over HTTP as Codex posts it: the whole conversation each turn, one pooled client.
pub(crate) async fn over_http(base: &str, turns: usize) -> (Vec<Duration>, usize) {
    let client = reqwest::Client::new();
    let (mut times, mut bytes) = (Vec::new(), 0);
    let mut input = vec![codex::user("list the files")];
    for _ in 0..turns {
        let sent = Instant::now();
        let body = codex::create(input.clone(), None).to_string();
        bytes += body.len();
        let url = format!("{base}/v1/responses");
        let mut response = (client.post(url).body(body).send().await).expect("an answer");
        let (mut text, mut first) = (String::new(), None);
        while let Some(chunk) = response.chunk().await.expect("the stream reads") {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if first.is_none() && text.contains("response.output_item.added") {
                first = Some(sent.elapsed());
            }
        }
        times.push(first.unwrap_or_else(|| sent.elapsed()));
        input.extend(codex::next(&completed(&text)["response"]));
    }
    (times, bytes)
}

/// The `response.completed` event of an SSE body.
fn completed(text: &str) -> Value {
    (text.split("\n\n"))
        .filter_map(|b| b.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|e| e["type"] == "response.completed")
        .expect("the stream completed")
}
