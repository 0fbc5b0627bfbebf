//! Hardening through the real `switchyard serve` binary (SPEC R14.10; issues 24 and 46): a
//! slowloris client (a request head trickled a byte a second) is disconnected at the header
//! timeout with a 408 while other clients are served; an oversized body is the dialect's 413;
//! thousands of idle connections held open do not keep another client from being served; a
//! million tiny messages are a 400 under a memory ceiling; one client's 2,000 slow or idle
//! connections leave another's requests served; a body that never ends is cut at its deadline;
//! an upstream stalled after its first content ends in the client's dialect; a request its
//! route's window cannot hold is that dialect's context error, never sent. No timing is
//! asserted beyond generous bounds: every wait is bounded, and what is checked is who is served,
//! who is closed and what they are told.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use switchyard_testkit::{HttpResponse, MockServer, Reply};

mod common;

use common::serve::{Serve, route, sonnet, write_config};

const PROVIDER_KEY: &str = "sk-ant-hardening-test-0123456789";

/// The binary with a clean environment whose home is `home`, on the store in `home`.
fn switchyard(home: &Path) -> Command {
    let store = format!("sqlite:{}", home.join("store.db").display());
    common::switchyard_on(home, &store, PROVIDER_KEY)
}

/// `serve` with the `[serve]` settings `settings` and one route to a closed port.
fn start_serve(home: &Path, settings: &str) -> Serve {
    start_serve_with(home, settings, &sonnet("http://127.0.0.1:9"))
}

/// `serve` with the `[serve]` settings `settings` and the route tables `routes`.
fn start_serve_with(home: &Path, settings: &str, routes: &str) -> Serve {
    let config = write_config(home, &format!("[serve]\n{settings}\n{routes}"));
    let mut cmd = switchyard(home);
    cmd.env("OPENAI_API_KEY", "sk-hardening-test-0123456789");
    Serve::start(cmd, &config, &[])
}

/// `GET /health` on a new connection: its status.
fn health(addr: &str) -> u16 {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let head = format!("GET /health HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response[9..12].parse().unwrap()
}

/// Whether the server closed `stream` (end of stream, or a reset) within `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn a_head_trickled_a_byte_a_second_is_cut_off_while_other_clients_are_served() {
    let home = tempfile::tempdir().unwrap();
    let serve = start_serve(home.path(), "header_timeout = 2");
    let addr = serve.addr.clone();
    let slow = std::thread::spawn(move || {
        let mut stream = TcpStream::connect(&addr).unwrap();
        let head = format!(
            "GET /health HTTP/1.1\r\nhost: {addr}\r\nx-slow: {}\r\n\r\n",
            "a".repeat(60)
        );
        let started = Instant::now();
        for byte in head.as_bytes() {
            if stream.write_all(&[*byte]).is_err() {
                // The server closed the connection under the trickle.
                return (true, started.elapsed());
            }
            std::thread::sleep(Duration::from_secs(1));
            if closed_within(&mut stream, Duration::from_millis(1)) {
                return (true, started.elapsed());
            }
        }
        (false, started.elapsed())
    });
    // Other clients are served the whole time the slow head trickles in.
    let mut served = 0;
    while !slow.is_finished() {
        assert_eq!(health(&serve.addr), 200);
        served += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    let (cut, after) = slow.join().unwrap();
    assert!(cut, "the slow head was never cut off ({after:?})");
    assert!(served >= 2, "others were served meanwhile: {served}");
    eprintln!("slowloris: cut off after {after:?}; {served} other requests served meanwhile");
}

#[test]
fn a_body_past_the_cap_is_the_dialects_413_and_the_gateway_serves_on() {
    let home = tempfile::tempdir().unwrap();
    let serve = start_serve(home.path(), "");
    for (path, header) in [
        (
            "/v1/messages",
            "x-api-key: x\r\nanthropic-version: 2023-06-01\r\n",
        ),
        ("/v1/chat/completions", ""),
    ] {
        let mut stream = TcpStream::connect(&serve.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        // 33 MiB declared, none of it sent: the cap is checked on the head, before the body
        // is read (a body sent and left unread would have the close reset the connection).
        let declared = 33 * 1024 * 1024;
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\n{header}connection: close\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).unwrap();
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        let response = String::from_utf8_lossy(&response);
        assert!(response.starts_with("HTTP/1.1 413"), "{path}: {response}");
        let body = response.split_once("\r\n\r\n").unwrap().1;
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        if path == "/v1/messages" {
            assert_eq!(v["type"], "error", "{v}");
        }
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("larger than this gateway's 32 MiB"), "{v}");
    }
    assert_eq!(health(&serve.addr), 200);
}

/// The most idle connections the test opens: 10,000 when this process may hold that many
/// descriptors (each also costs the server one), else what it may.
fn idle_target() -> usize {
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            let line = t
                .lines()
                .find(|l| l.starts_with("Max open files"))?
                .to_owned();
            line.split_whitespace().nth(3)?.parse::<usize>().ok()
        })
        .unwrap_or(1024);
    10_000.min(limit.saturating_sub(200))
}

#[test]
fn ten_thousand_idle_connections_do_not_keep_another_client_from_being_served() {
    let home = tempfile::tempdir().unwrap();
    let target = idle_target();
    let cap = target + 100;
    let serve = start_serve(
        home.path(),
        &format!(
            "max_connections = {cap}\nmax_connections_per_address = {cap}\nidle_timeout = 600"
        ),
    );
    let mut idle = Vec::with_capacity(target);
    for _ in 0..target {
        match TcpStream::connect(&serve.addr) {
            Ok(stream) => idle.push(stream),
            Err(e) => panic!("connection {} could not be opened: {e}", idle.len() + 1),
        }
    }
    // Every idle connection is still open (none was closed as the others came) …
    for stream in idle.iter_mut().step_by(97) {
        assert!(
            !closed_within(stream, Duration::from_millis(1)),
            "an idle connection was closed"
        );
    }
    // … and another client is served.
    assert_eq!(health(&serve.addr), 200);
    // A connection of the idle ones can still ask.
    let addr = serve.addr.clone();
    let first = &mut idle[0];
    let head = format!("GET /health HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    first.write_all(head.as_bytes()).unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut response = String::new();
    first.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    eprintln!(
        "{} idle connections open; another client served",
        idle.len()
    );
}

/// The peak and current resident memory of process `pid`, in MiB (`VmHWM`, `VmRSS`).
fn rss_mib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib / 1024
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// One request on a fresh connection with `extra` header lines: (status, head, body).
fn post(addr: &str, path: &str, extra: &str, body: &[u8]) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// A body of `n` one-letter user messages in `path`'s dialect: about 30 bytes a message.
fn many_messages(path: &str, n: usize) -> Vec<u8> {
    let one = r#"{"role":"user","content":"a"}"#;
    let mut list = String::with_capacity(n * (one.len() + 1));
    for i in 0..n {
        if i > 0 {
            list.push(',');
        }
        list.push_str(one);
    }
    match path {
        "/v1/responses" => format!(r#"{{"model":"sonnet","input":[{list}]}}"#),
        "/v1/messages" => format!(r#"{{"model":"sonnet","max_tokens":16,"messages":[{list}]}}"#),
        _ => format!(r#"{{"model":"sonnet","messages":[{list}]}}"#),
    }
    .into_bytes()
}

#[test]
fn a_million_tiny_messages_are_a_400_naming_the_field_and_serve_stays_under_a_memory_ceiling() {
    // Issue 46: a 30 MB Chat body of a million messages took serve to 2.2 GB (Messages 2.4 GB,
    // Responses 2.7 GB), and four at once to 4.4 GB, 4.1 GB of it kept afterwards. Case D01;
    // BerriAI/litellm#40565 measured a parsed body at 4.2 times its size there.
    let home = tempfile::tempdir().unwrap();
    let serve = start_serve(home.path(), "");
    let pid = serve.child.id();
    let (_, before) = rss_mib(pid);
    for (path, field) in [
        ("/v1/chat/completions", "messages"),
        ("/v1/messages", "messages"),
        ("/v1/responses", "input"),
    ] {
        let body = many_messages(path, 1_000_000);
        assert!(body.len() > 29_000_000 && body.len() < 32 * 1024 * 1024);
        let (status, _, text) = post(&serve.addr, path, "x-api-key: x\r\n", &body);
        assert_eq!(status, 400, "{path}: {text}");
        assert!(
            text.contains(field) && text.contains("more than 10000"),
            "{path}: {text}"
        );
    }
    // Four at once, as the issue sent them.
    let body = std::sync::Arc::new(many_messages("/v1/chat/completions", 1_000_000));
    let four: Vec<_> = (0..4)
        .map(|_| {
            let (addr, body) = (serve.addr.clone(), std::sync::Arc::clone(&body));
            std::thread::spawn(move || post(&addr, "/v1/chat/completions", "", &body).0)
        })
        .collect();
    for one in four {
        assert_eq!(one.join().unwrap(), 400);
    }
    assert_eq!(health(&serve.addr), 200);
    let (peak, after) = rss_mib(pid);
    eprintln!("million messages: RSS {before} MiB before, peak {peak} MiB, {after} MiB after");
    // Four bodies of 30 MB are read whole before they are refused; nothing of them is kept.
    assert!(peak < 600, "serve peaked at {peak} MiB");
}

/// A connection from `source` (a loopback address) to `addr`.
fn connect_from(source: [u8; 4], addr: &str) -> TcpStream {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket
            .bind(std::net::SocketAddr::from((source, 0)))
            .unwrap();
        socket.connect(addr.parse().unwrap()).await.unwrap()
    });
    let stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream
}

#[test]
fn one_client_holding_2000_slow_or_idle_connections_leaves_another_clients_50_requests_served() {
    // Issue 46: 2,000 slow-header connections failed 33 of 50 normal requests, 1,100
    // reconnecting ones 49 of 50, 10,000 idle ones 50 of 50: they all held slots before any
    // key was checked. ninenines/cowboy#213 and caddyserver/caddy#4235 ask for a per-address limit.
    let home = tempfile::tempdir().unwrap();
    let serve = start_serve(home.path(), "header_timeout = 20\nidle_timeout = 60");
    let target = 2_000.min(idle_target());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let attacker = {
        let (addr, stop) = (serve.addr.clone(), std::sync::Arc::clone(&stop));
        std::thread::spawn(move || hold_connections(&addr, target, &stop))
    };
    // Let the attacker fill what it can first.
    std::thread::sleep(Duration::from_secs(2));
    let mut served = 0;
    for i in 0..50 {
        let mut stream = connect_from([127, 0, 0, 2], &serve.addr);
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let head = b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
        stream.write_all(head).unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "request {i}: {response:?}"
        );
        served += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (opened, cut) = attacker.join().unwrap();
    eprintln!(
        "{served} of 50 served while one client opened {opened} connections, {cut} of them closed by serve"
    );
    assert!(cut > 0, "the attacker's connections were never cut back");
}

/// Opens `target` connections to `addr`, every other one sending half a head and the rest
/// silent, and opens another whenever serve closes one, until `stop`: (opened, closed by serve).
fn hold_connections(
    addr: &str,
    target: usize,
    stop: &std::sync::atomic::AtomicBool,
) -> (usize, usize) {
    use std::sync::atomic::Ordering;
    let mut open: Vec<TcpStream> = Vec::with_capacity(target);
    let (mut opened, mut cut) = (0, 0);
    let started = Instant::now();
    while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(120) {
        while open.len() < target && opened < target * 3 {
            let Ok(mut stream) = TcpStream::connect(addr) else {
                break;
            };
            if opened % 2 == 0 {
                let _ =
                    stream.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-slow: ");
            }
            stream.set_nonblocking(true).unwrap();
            open.push(stream);
            opened += 1;
        }
        // Those serve closed (end of stream, a 408, or a reset) are dropped and replaced.
        let before = open.len();
        open.retain_mut(|s| {
            let mut buf = [0u8; 512];
            matches!(s.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
        });
        cut += before - open.len();
        std::thread::sleep(Duration::from_millis(50));
    }
    (opened, cut)
}

#[test]
fn a_head_cut_off_at_the_header_timeout_gets_a_408_in_its_dialect_then_closes() {
    let home = tempfile::tempdir().unwrap();
    let serve = start_serve(home.path(), "header_timeout = 2");
    let mut stream = TcpStream::connect(&serve.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let started = Instant::now();
    stream
        .write_all(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-slow: a")
        .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    assert!(response.starts_with("HTTP/1.1 408"), "{response:?}");
    assert!(response.contains("connection: close"), "{response}");
    let body: serde_json::Value =
        serde_json::from_str(response.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["type"], "error", "Anthropic's shape: {body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("did not arrive within this gateway's 2 s"),
        "{body}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_body_that_never_ends_is_cut_at_its_deadline_with_a_408() {
    // Issue 46: with no keys, a content-length larger than what is sent held the connection
    // forever (1,024 of them failed 67 of 67 normal requests). Case D03; projectcontour/contour#1070.
    let home = tempfile::tempdir().unwrap();
    let serve = start_serve(home.path(), "body_timeout = 2");
    let mut stream = TcpStream::connect(&serve.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let started = Instant::now();
    let head = "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{\"model\":";
    stream.write_all(head.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let after = started.elapsed();
    assert!(response.starts_with("HTTP/1.1 408"), "{response:?}");
    assert!(response.contains("connection: close"), "{response}");
    let body: serde_json::Value =
        serde_json::from_str(response.split_once("\r\n\r\n").unwrap().1).unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("within this gateway's 2 s (9 bytes of the 100000 declared came)"),
        "{body}"
    );
    assert!(
        after >= Duration::from_secs(2) && after < Duration::from_secs(20),
        "{after:?}"
    );
    assert_eq!(health(&serve.addr), 200);
}

/// The rows `switchyard requests --json` lists for serve's store in `home`, once there are
/// `n` of them (waited for up to 20 s: records are written after each answer).
fn request_rows(home: &Path, n: usize) -> Vec<serde_json::Value> {
    let started = Instant::now();
    loop {
        let out = switchyard(home)
            .args(["requests", "--json"])
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let rows: Vec<serde_json::Value> = (text.lines())
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if rows.len() >= n || started.elapsed() > Duration::from_secs(20) {
            return rows;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// An Anthropic stream and an OpenAI Chat stream, each cut in two: up to and including its
/// first content, and the rest.
const ANTHROPIC_HEAD: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n";
const ANTHROPIC_TAIL: &str = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
const CHAT_HEAD: &str = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n";
const CHAT_TAIL: &str = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// A scripted upstream that sends `head`, then nothing for ten minutes, then `tail`.
fn stalling(runtime: &tokio::runtime::Runtime, head: &str, tail: &str) -> MockServer {
    let response = HttpResponse::sse(&format!("{head}{tail}"));
    let reply = Reply::new(response).stall_at(head.len(), Duration::from_secs(600));
    runtime.block_on(MockServer::start(vec![reply]))
}

#[test]
fn an_upstream_stalled_after_its_first_content_ends_in_the_clients_dialect_within_the_gap() {
    // Issue 46: with request_deadline 15 s the client hung until it gave up at 60 s; a client
    // that asked for a whole answer got nothing; the request was recorded as cancelled.
    // Case D04: maximhq/bifrost#2786 is the same stall; Claude Code's own detector gives up
    // after 300 s (tombii/better-ccflare#348).
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let anthropic = stalling(&runtime, ANTHROPIC_HEAD, ANTHROPIC_TAIL);
    let openai = stalling(&runtime, CHAT_HEAD, CHAT_TAIL);
    let home = tempfile::tempdir().unwrap();
    let routes = route("claude", "anthropic", "claude-sonnet-4-5", &anthropic.url())
        + &route("gpt", "openai", "gpt-4o", &openai.url());
    let serve = start_serve_with(
        home.path(),
        "chunk_timeout = 2\nrequest_deadline = 1",
        &routes,
    );
    let cases = [
        (
            "/v1/chat/completions",
            r#"{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
            "data: {\"error\"",
        ),
        (
            "/v1/messages",
            r#"{"model":"claude","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}"#,
            "event: error",
        ),
        (
            "/v1/responses",
            r#"{"model":"gpt","stream":true,"input":"hi"}"#,
            "response.failed",
        ),
    ];
    for (path, body, error) in cases {
        let started = Instant::now();
        let (status, _, text) = post(&serve.addr, path, "", body.as_bytes());
        let after = started.elapsed();
        assert_eq!(status, 200, "{path}: {text}");
        assert!(
            text.contains("Hello"),
            "{path}: the content came first: {text}"
        );
        assert!(
            text.contains(error),
            "{path}: ends in the dialect's error: {text}"
        );
        assert!(
            !text.contains("[DONE]") && !text.contains("message_stop"),
            "{path}: {text}"
        );
        assert!(text.contains("serve.chunk_timeout"), "{path}: {text}");
        assert!(after < Duration::from_secs(30), "{path}: {after:?}");
    }
    // A client that asked for one JSON body gets the dialect's error, not silence.
    let body = r#"{"model":"gpt","messages":[{"role":"user","content":"hi"}]}"#;
    let (status, _, text) = post(&serve.addr, "/v1/chat/completions", "", body.as_bytes());
    assert_eq!(status, 504, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["code"], "timeout", "{v}");
    let rows = request_rows(home.path(), 4);
    assert_eq!(rows.len(), 4, "{rows:?}");
    for row in &rows {
        assert_eq!(row["status"], "error", "{row}");
        assert_eq!(row["error_kind"], "timeout", "{row}");
    }
}

#[test]
fn a_request_the_routes_window_cannot_hold_is_the_dialects_context_error_and_never_sent() {
    // Issue 46: Claude Code's 4,205-token request to the quickstart's 2,048-token model was
    // sent, refused by the model server, answered 502 "incomplete response … usually
    // temporary", and retried for 3 minutes. Anthropic's wording is what Claude Code reads to
    // compact (EasyMetaAu/helm-api#702); headroomlabs-ai/headroom#2649 asks for the same guard.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let reply = Reply::new(HttpResponse::sse(&format!("{CHAT_HEAD}{CHAT_TAIL}")));
    let upstream = runtime.block_on(MockServer::start(vec![reply]));
    let home = tempfile::tempdir().unwrap();
    let routes = route("local", "openai", "smollm2-135m-instruct", &upstream.url());
    let serve = start_serve_with(home.path(), "", &routes);
    // About 5,000 tokens at 4 bytes a token, the model's tokenizer being unknown.
    let long = "word ".repeat(4_000);
    let bodies = [
        (
            "/v1/chat/completions",
            format!(r#"{{"model":"local","messages":[{{"role":"user","content":"{long}"}}]}}"#),
        ),
        (
            "/v1/messages",
            format!(
                r#"{{"model":"local","max_tokens":64,"messages":[{{"role":"user","content":"{long}"}}]}}"#
            ),
        ),
        (
            "/v1/responses",
            format!(r#"{{"model":"local","input":"{long}"}}"#),
        ),
    ];
    for (path, body) in &bodies {
        let (status, _, text) = post(&serve.addr, path, "", body.as_bytes());
        assert_eq!(status, 400, "{path}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let message = v["error"]["message"].as_str().unwrap();
        if *path == "/v1/messages" {
            assert_eq!(v["error"]["type"], "invalid_request_error", "{v}");
            assert!(message.starts_with("prompt is too long: 500"), "{v}");
            assert!(message.contains(" tokens > 2048 maximum"), "{v}");
        } else {
            assert_eq!(v["error"]["code"], "context_length_exceeded", "{v}");
            assert!(
                message.contains("maximum context length is 2048 tokens"),
                "{v}"
            );
        }
    }
    assert_eq!(upstream.request_count(), 0, "nothing was sent");
    // A request that fits is sent as before.
    let short = r#"{"model":"local","messages":[{"role":"user","content":"hi"}]}"#;
    let (status, _, text) = post(&serve.addr, "/v1/chat/completions", "", short.as_bytes());
    assert_eq!(status, 200, "{text}");
    assert_eq!(upstream.request_count(), 1);
    let rows = request_rows(home.path(), 4);
    let refused = rows
        .iter()
        .filter(|r| r["error_kind"] == "context_window_exceeded");
    assert_eq!(refused.count(), 3, "{rows:?}");
}
