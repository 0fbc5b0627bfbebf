//! The agent-client harness's self-test (tests/common/agents.rs): the scene's gateway answers
//! through the tap, which records what the client sent (content-length and chunked bodies)
//! and the gateway's `x-switchyard-dropped`; `run` gives a program's output and kills one
//! that outlives its limit; `assert_hello` checks the file. No agent client needed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::{AgentTurn, UpstreamDialect};

mod common;

use common::agents::{AgentScene, Route};

/// One HTTP/1.1 POST to `url` (`http://HOST:PORT`), the body sent as is with `framing`
/// headers: the response head and body.
fn post(url: &str, path: &str, framing: &str, body: &[u8]) -> (String, String) {
    let addr = url.strip_prefix("http://").unwrap();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\nanthropic-version: 2023-06-01\r\ncontent-type: application/json\r\n{framing}connection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

fn scene() -> AgentScene {
    AgentScene::start(
        UpstreamDialect::ChatCompletions,
        &[Route::new("claude-*", "openai", "gpt-4o")],
        |r| AgentTurn::text(format!("tools: {}", r.tools.len())),
    )
}

#[test]
fn the_tap_records_requests_and_dropped_fields_through_the_gateway() {
    let scene = scene();
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 50, "top_k": 5,
                      "messages": [{"role": "user", "content": "hi"}]})
    .to_string();
    let framing = format!("content-length: {}\r\n", body.len());
    let (head, answer) = post(
        &scene.client_url(),
        "/v1/messages?beta=true",
        &framing,
        body.as_bytes(),
    );
    assert!(
        head.starts_with("HTTP/1.1 200"),
        "{head}\n{}",
        scene.gateway_log()
    );
    let v: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["content"][0]["text"], "tools: 0");

    let chunked = format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let (head, _) = post(
        &scene.client_url(),
        "/v1/messages",
        "transfer-encoding: chunked\r\n",
        chunked.as_bytes(),
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    let requests = scene.tap.requests();
    assert_eq!(requests.len(), 2, "{}", scene.figures());
    assert_eq!(requests[0].path, "/v1/messages?beta=true");
    assert_eq!(
        requests[0].header_values("anthropic-version"),
        ["2023-06-01"]
    );
    assert_eq!(
        requests[1].json()["top_k"],
        5,
        "the chunked body was decoded"
    );
    assert_eq!(scene.tap.statuses(), [200, 200]);
    assert_eq!(scene.tap.dropped(), ["top_k", "top_k"]);
    assert_eq!(scene.upstream.request_count(), 2);
    let figures = scene.figures();
    assert!(figures.contains("client side: 2 request(s)"), "{figures}");
    assert!(
        figures.contains("agent upstream (ChatCompletions): 2 request(s)"),
        "{figures}"
    );
}

#[test]
fn run_gives_the_output_kills_at_the_limit_and_assert_hello_checks_the_file() {
    let scene = scene();
    let mut cmd = scene.command("sh");
    cmd.args([
        "-c",
        "printf 'hi\\n' > hello.txt; echo \"home=$HOME\"; echo oops >&2",
    ]);
    let run = scene.run(cmd, Duration::from_secs(20));
    assert!(run.status.unwrap().success());
    assert_eq!(run.stdout.trim(), format!("home={}", scene.home.display()));
    assert_eq!(run.stderr.trim(), "oops");
    scene.assert_hello(&run);

    let mut cmd = scene.command("sh");
    cmd.args(["-c", "sleep 30 & wait"]);
    let run = scene.run(cmd, Duration::from_millis(300));
    assert!(run.status.is_none(), "killed at the limit: {run:?}");
    assert!(run.elapsed < Duration::from_secs(20), "{run:?}");
}

#[test]
#[should_panic(expected = "hello.txt is not `hi`")]
fn assert_hello_fails_without_the_file() {
    let scene = scene();
    let mut cmd = scene.command("sh");
    cmd.args(["-c", "printf 'ho' > hello.txt"]);
    let run = scene.run(cmd, Duration::from_secs(20));
    scene.assert_hello(&run);
}
