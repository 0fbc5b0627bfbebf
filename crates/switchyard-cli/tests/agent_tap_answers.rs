//! The agent harness's additions for `scripts/agent-clients.sh --latest` (tests/common/agents.rs):
//! the tap pairs each request with the gateway's answer to it, also on a kept-alive connection
//! and for a refusal, and the record's dialect and route-kind names. No agent client needed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::json;
use switchyard_testkit::{AgentTurn, UpstreamDialect};

mod common;

use common::agents::{AgentScene, Route, path_dialect, route_kind};

/// A Messages request for `model` (streamed when `stream`) as HTTP/1.1 bytes on a kept-alive
/// connection.
fn request(addr: &str, model: &str, stream: bool) -> Vec<u8> {
    let body = json!({"model": model, "max_tokens": 50, "stream": stream,
                      "messages": [{"role": "user", "content": "hi"}]})
    .to_string();
    format!(
        "POST /v1/messages HTTP/1.1\r\nhost: {addr}\r\nanthropic-version: 2023-06-01\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Reads one response off `stream`: its head, then a `content-length` body or a chunked one.
fn read_response(stream: &mut TcpStream) -> String {
    let mut bytes = Vec::new();
    let mut byte = [0u8; 1];
    let mut read_until = |bytes: &mut Vec<u8>, end: &[u8]| {
        while !bytes.ends_with(end) {
            stream.read_exact(&mut byte).unwrap();
            bytes.push(byte[0]);
        }
    };
    read_until(&mut bytes, b"\r\n\r\n");
    let head = String::from_utf8_lossy(&bytes).to_ascii_lowercase();
    if head.contains("transfer-encoding: chunked") {
        read_until(&mut bytes, b"\r\n0\r\n\r\n");
        return String::from_utf8(bytes).unwrap();
    }
    let length: usize = (head.lines())
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    bytes.extend_from_slice(&body);
    String::from_utf8(bytes).unwrap()
}

#[test]
fn the_tap_pairs_each_request_with_the_gateways_answer_on_one_connection() {
    let scene = AgentScene::start(
        UpstreamDialect::ChatCompletions,
        &[Route::new("claude-*", "openai", "gpt-4o")],
        |_| AgentTurn::text("answered"),
    );
    let addr = scene.client_url().trim_start_matches("http://").to_owned();
    let mut stream = TcpStream::connect(&addr).unwrap();
    // A HEAD first (Claude Code's probe): its answer carries a content-length but no body.
    stream
        .write_all(format!("HEAD /api/hello HTTP/1.1\r\nhost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let mut seen = vec![String::from_utf8(head).unwrap()];
    let asks = [
        ("claude-sonnet-4-5", true),
        ("no-such-route", false),
        ("claude-haiku-4-5", false),
    ];
    for (model, streamed) in asks {
        stream.write_all(&request(&addr, model, streamed)).unwrap();
        seen.push(read_response(&mut stream));
    }
    assert_eq!(scene.tap.requests().len(), 4, "{}", scene.figures());
    for (i, wire) in seen.iter().enumerate() {
        assert_eq!(scene.tap.answer_to(i).as_deref(), Some(wire.as_str()));
    }
    assert!(seen[0].starts_with("HTTP/1.1 200"), "{}", seen[0]);
    assert!(seen[0].contains("content-length: 15"), "{}", seen[0]);
    assert!(seen[1].starts_with("HTTP/1.1 200") && seen[1].contains("message_stop"));
    assert!(seen[2].starts_with("HTTP/1.1 404"), "{}", seen[2]);
    assert!(seen[3].starts_with("HTTP/1.1 200"), "{}", seen[3]);
    assert_eq!(scene.tap.answer_to(4), None);
}

#[test]
fn paths_name_their_dialect_and_pairs_their_route_kind() {
    assert_eq!(path_dialect("/v1/messages?beta=true"), "messages");
    assert_eq!(path_dialect("/v1/chat/completions"), "chat");
    assert_eq!(path_dialect("/responses"), "responses");
    assert_eq!(path_dialect("/api/hello"), "/api/hello");
    assert_eq!(
        route_kind("chat", UpstreamDialect::ChatCompletions),
        "forwarded"
    );
    assert_eq!(
        route_kind("messages", UpstreamDialect::Messages),
        "forwarded"
    );
    assert_eq!(
        route_kind("responses", UpstreamDialect::Responses),
        "translated"
    );
    assert_eq!(route_kind("chat", UpstreamDialect::Messages), "translated");
}
