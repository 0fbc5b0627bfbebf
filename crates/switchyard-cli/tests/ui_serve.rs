//! The dashboard's server side through the real binary, no browser (SPEC R14.11): an open live
//! page (server-sent events) ends its stream when `serve` is stopped, so the process exits
//! cleanly instead of holding the drain to its deadline; failed sign-ins are bounded (429 with
//! `retry-after`, a right key refused too until the window ends); the session cookie is
//! `Secure` when a trusted proxy says the sign-in came over HTTPS; and requests refused at
//! admission (402 budget, 429 per-minute window) are among the live page's last errors with
//! their kind and sentence, never a key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::{HttpResponse, MockServer, Reply};

mod common;

use common::serve::{Serve, sonnet};

const PROVIDER_KEY: &str = "sk-ant-ui-serve-test-0123456789";

/// The binary with a clean environment whose home is `home`, on `store`.
fn switchyard(home: &Path, store: &str) -> Command {
    common::switchyard_on(home, store, PROVIDER_KEY)
}

/// `keys create --json ARGS`: (key, prefix).
fn create_key(home: &Path, store: &str, args: &[&str]) -> (String, String) {
    let v = common::create_key(switchyard(home, store), args);
    let s = |f: &str| v[f].as_str().unwrap().to_owned();
    (s("key"), s("prefix"))
}

/// A store and a configuration with one route `sonnet` to `upstream` and `serve_extra` in
/// `[serve]`: (home, store, config).
fn setup(upstream: &str, serve_extra: &str) -> (tempfile::TempDir, String, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", home.path().join("ui.db").display());
    let text = format!("[serve]\n{serve_extra}\n{}", sonnet(upstream));
    let config = common::serve::write_config(home.path(), &text);
    (home, store, config)
}

/// One request on a fresh connection: the whole response as text (head and body).
fn http(addr: &str, head: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let head = format!(
        "{head}\r\nhost: {addr}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    response
}

fn status(response: &str) -> u16 {
    response[9..12].parse().unwrap()
}

/// The value of header `name` (lower case) in `response`.
fn header<'r>(response: &'r str, name: &str) -> Option<&'r str> {
    let (head, _) = response.split_once("\r\n\r\n")?;
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

/// `POST /ui/signin` with `key` and `extra` header lines: the response.
fn sign_in(addr: &str, key: &str, extra: &str) -> String {
    let head = format!(
        "POST /ui/signin HTTP/1.1\r\ncontent-type: application/x-www-form-urlencoded{extra}"
    );
    http(addr, &head, &format!("key={key}"))
}

/// The session cookie (`switchyard_session=ID`) a sign-in response sets.
fn session_of(response: &str) -> String {
    let set = header(response, "set-cookie").unwrap_or_else(|| panic!("{response}"));
    set.split(';').next().unwrap().to_owned()
}

/// A Chat request for `sonnet` with `key`: the response.
fn chat(addr: &str, key: &str) -> String {
    let body = json!({"model": "sonnet", "max_tokens": 200,
        "messages": [{"role": "user", "content": "Capital of France?"}]})
    .to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nauthorization: Bearer {key}\r\ncontent-type: application/json"
    );
    http(addr, &head, &body)
}

#[test]
fn an_open_live_page_ends_its_stream_when_serve_stops_and_serve_exits_cleanly() {
    let (home, store, config) = setup("http://127.0.0.1:9", "");
    let (admin, _) = create_key(home.path(), &store, &["--name", "ops", "--admin"]);
    let mut serve = Serve::start(switchyard(home.path(), &store), &config, &[]);
    let session = session_of(&sign_in(&serve.addr, &admin, ""));
    let mut live = TcpStream::connect(&serve.addr).unwrap();
    live.set_read_timeout(Some(Duration::from_secs(90)))
        .unwrap();
    let head = format!(
        "GET /ui/api/live HTTP/1.1\r\nhost: {}\r\ncookie: {session}\r\n\r\n",
        serve.addr
    );
    live.write_all(head.as_bytes()).unwrap();
    // The stream is open once its first snapshot arrived.
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("event: snapshot") {
        let n = live.read(&mut buf).unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));
    let pid = serve.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    // The rest of the stream to its end: the chunked body's last chunk, written by the
    // gateway, not a connection cut when the 30 s drain deadline closed what was left.
    live.read_to_end(&mut seen).unwrap();
    let text = String::from_utf8_lossy(&seen).into_owned();
    assert!(
        text.ends_with("0\r\n\r\n"),
        "the stream was cut, not ended: {text}"
    );
    let code = common::wait_or_kill(&mut serve.child, Duration::from_secs(90), &"serve");
    let stderr = serve.stderr();
    assert_eq!(code.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("after the drain deadline"), "{stderr}");
    assert!(!stderr.contains(&admin));
}

#[test]
fn failed_sign_ins_are_bounded_and_answered_429_with_retry_after() {
    let (home, store, config) = setup("http://127.0.0.1:9", "");
    let (admin, _) = create_key(home.path(), &store, &["--name", "ops", "--admin"]);
    let serve = Serve::start(switchyard(home.path(), &store), &config, &[]);
    let wrong = format!("sk-sy-{}", "0".repeat(48));
    for i in 0..10 {
        let r = sign_in(&serve.addr, &wrong, "");
        assert_eq!(status(&r), 401, "attempt {i}: {r}");
    }
    for key in [&wrong, &admin] {
        let r = sign_in(&serve.addr, key, "");
        assert_eq!(status(&r), 429, "{r}");
        let wait: u64 = header(&r, "retry-after").unwrap().parse().unwrap();
        assert!((1..=60).contains(&wait), "{r}");
        assert!(r.contains("Too many failed sign-ins"), "{r}");
        assert!(header(&r, "set-cookie").is_none(), "{r}");
        assert!(!r.contains(key.as_str()));
    }
}

#[test]
fn the_cookie_is_secure_when_a_trusted_proxy_says_the_sign_in_came_over_https() {
    let (home, store, config) = setup("http://127.0.0.1:9", "trust_forwarded_headers = true");
    let (admin, _) = create_key(home.path(), &store, &["--name", "ops", "--admin"]);
    let serve = Serve::start(switchyard(home.path(), &store), &config, &[]);
    let over_https = sign_in(&serve.addr, &admin, "\r\nx-forwarded-proto: https");
    assert_eq!(status(&over_https), 303, "{over_https}");
    let set = header(&over_https, "set-cookie").unwrap();
    assert!(
        set.contains("HttpOnly") && set.ends_with("; Secure"),
        "{set}"
    );
    let plain = sign_in(&serve.addr, &admin, "");
    let set = header(&plain, "set-cookie").unwrap();
    assert!(!set.contains("Secure"), "{set}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_refused_at_admission_are_among_the_live_pages_last_errors() {
    let text = || Reply::new(HttpResponse::fixture("anthropic_text"));
    let upstream = MockServer::start(vec![text()]).await;
    let (home, store, config) = setup(&upstream.url(), "");
    let h = home.path();
    let (admin, _) = create_key(h, &store, &["--name", "ops", "--admin"]);
    let (poor, poor_prefix) = create_key(h, &store, &["--name", "poor", "--budget", "0.0001/day"]);
    let (busy, busy_prefix) = create_key(h, &store, &["--name", "busy", "--rpm", "1"]);
    let serve = Serve::start(switchyard(h, &store), &config, &[]);
    let addr = serve.addr.clone();
    let (keys, live) = tokio::task::spawn_blocking(move || {
        let refused = chat(&addr, &poor);
        assert_eq!(status(&refused), 402, "{refused}");
        let first = chat(&addr, &busy);
        assert_eq!(status(&first), 200, "{first}");
        let limited = chat(&addr, &busy);
        assert_eq!(status(&limited), 429, "{limited}");
        let session = session_of(&sign_in(&addr, &admin, ""));
        let head = format!("GET /ui/api/live.json HTTP/1.1\r\ncookie: {session}");
        ((poor, busy), http(&addr, &head, ""))
    })
    .await
    .unwrap();
    assert_eq!(status(&live), 200, "{live}");
    for key in [&keys.0, &keys.1] {
        assert!(
            !live.contains(key.as_str()),
            "a key on the live page: {live}"
        );
    }
    let body: Value = serde_json::from_str(live.split_once("\r\n\r\n").unwrap().1).unwrap();
    let errors = body["errors"].as_array().unwrap();
    let find = |kind: &str| {
        (errors.iter().find(|e| e["kind"] == kind))
            .unwrap_or_else(|| panic!("no {kind} error: {errors:?}"))
    };
    let budget = find("budget");
    assert_eq!(budget["key_prefix"], poor_prefix.as_str());
    assert_eq!(budget["route"], "sonnet");
    assert!(
        budget["sentence"].as_str().unwrap().contains("budget"),
        "{budget}"
    );
    let rate = find("rate_limited");
    assert_eq!(rate["key_prefix"], busy_prefix.as_str());
    assert!(!rate["sentence"].as_str().unwrap().is_empty());
    assert_eq!(errors.len(), 2, "{errors:?}");
}
