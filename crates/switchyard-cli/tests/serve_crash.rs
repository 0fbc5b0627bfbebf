//! A request lost in a crash is charged (SPEC R14.18; issue 46 item 5), through the real
//! binary: `switchyard serve` killed with SIGKILL while 20 keyed streams are in flight, then
//! started again on the same store, records each of them as `lost`, charged at its
//! reservation, within its lease and a sweep; a request that ended before the kill is charged
//! once, at its cost. `usage`, the key's "used" and the store's totals agree. On SQLite and on
//! PostgreSQL, with leased admission (the default) and with one store hold per request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchyard_testkit::{HttpResponse, MockServer, Reply};

mod common;

use common::serve::{Serve, sonnet};

const PROVIDER_KEY: &str = "sk-ant-serve-crash-test-0123456789";

/// Streams in flight when the process is killed.
const IN_FLIGHT: usize = 20;

fn switchyard(home: &Path, store: &str) -> Command {
    common::switchyard_on(home, store, PROVIDER_KEY)
}

/// Runs `args` to its end: (exit code, stdout, stderr).
fn run(home: &Path, store: &str, args: &[&str]) -> (i32, String, String) {
    common::output(switchyard(home, store).args(args))
}

/// `serve` with a 2 s hold lease; its stderr must never show the provider key.
fn start_serve(home: &Path, store: &str, config: &Path) -> Serve {
    let lease = ["--hold-lease", "2"];
    Serve::start_hiding(switchyard(home, store), config, &lease, PROVIDER_KEY)
}

/// One Chat request with `key`: (status, body). A connection cut is status 0.
fn chat(addr: &str, key: &str, stream: bool) -> (u16, String) {
    let body = format!(
        r#"{{"model": "sonnet", "stream": {stream}, "max_tokens": 1000, "messages": [{{"role": "user", "content": "Capital of France?"}}]}}"#
    );
    let Ok(mut socket) = std::net::TcpStream::connect(addr) else {
        return (0, String::new());
    };
    socket
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\nauthorization: Bearer {key}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = socket.write_all(head.as_bytes());
    let _ = socket.write_all(body.as_bytes());
    let mut response = Vec::new();
    let _ = socket.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, response)
}

/// Kills `serve` on `store` with [`IN_FLIGHT`] streams in flight after one request that ended,
/// starts it again, and checks the lost streams are charged at their reservations.
async fn crash(store: &str, mode: &str) {
    let upstream = MockServer::start(vec![
        Reply::new(HttpResponse::fixture("anthropic_text")),
        Reply::new(HttpResponse::fixture("anthropic_text")).stall_at(900, Duration::from_secs(60)),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let text = format!(
        "[serve]\nadmission = \"{mode}\"\n{}",
        sonnet(&upstream.url())
    );
    let config = common::serve::write_config(&h, &text);
    let made = common::create_key(
        switchyard(&h, store),
        &["--name", "crash", "--budget", "10/day"],
    );
    let key = made["key"].as_str().unwrap().to_owned();
    let (h2, s2, c2, k2) = (h.clone(), store.to_owned(), config.clone(), key.clone());
    let serve = tokio::task::spawn_blocking(move || {
        let serve = start_serve(&h2, &s2, &c2);
        let (status, text) = chat(&serve.addr, &k2, false);
        assert_eq!(status, 200, "{text}");
        for _ in 0..IN_FLIGHT {
            let (addr, key) = (serve.addr.clone(), k2.clone());
            std::thread::spawn(move || chat(&addr, &key, true));
        }
        serve
    })
    .await
    .unwrap();
    let every = upstream.wait_for_requests(1 + IN_FLIGHT);
    tokio::time::timeout(Duration::from_secs(20), every)
        .await
        .unwrap();
    // Longer than one batch interval and its write: every stream's trace is in the store.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut serve = serve;
    serve.child.kill().unwrap();
    serve.child.wait().unwrap();
    let killed = Instant::now();
    let (h3, s3) = (h.clone(), store.to_owned());
    let (first, settled) = tokio::task::spawn_blocking(move || {
        let rows = common::requests(switchyard(&h3, &s3));
        assert_eq!(
            rows.len(),
            1,
            "only the ended request is recorded: {rows:?}"
        );
        (rows[0].clone(), common::used(switchyard(&h3, &s3)))
    })
    .await
    .unwrap();
    let cost = first["cost_usd"].as_f64().unwrap();
    assert_eq!(first["status"], "ok", "{first}");
    // The key's "used" still counts the streams' reservations, as live slices or holds.
    assert!(settled + 1e-9 >= cost, "{settled} vs {cost}");
    // Started again: its sweep finds the traces once their lease (2 s) has lapsed.
    let (h4, s4, c4) = (h.clone(), store.to_owned(), config.clone());
    let (rows, waited, again) = tokio::task::spawn_blocking(move || {
        let again = start_serve(&h4, &s4, &c4);
        loop {
            let rows = common::requests(switchyard(&h4, &s4));
            if rows.len() > IN_FLIGHT || killed.elapsed() > Duration::from_secs(15) {
                return (rows, killed.elapsed(), again);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    })
    .await
    .unwrap();
    assert_eq!(rows.len(), 1 + IN_FLIGHT, "{rows:?}");
    assert!(
        waited < Duration::from_secs(6),
        "charged within its 2 s lease, a sweep and a start: {waited:?}"
    );
    let lost: Vec<&Value> = rows.iter().filter(|r| r["status"] == "lost").collect();
    assert_eq!(lost.len(), IN_FLIGHT, "{rows:?}");
    for r in &lost {
        assert!(r["cost_usd"].is_null(), "{r}");
        assert!(r["key_id"].as_str().unwrap().starts_with("key_"), "{r}");
        // A trace and a store hold both keep what the request asked for.
        assert_eq!(r["route"], "sonnet", "{r}");
        assert_eq!(r["dialect"], "chat_completions", "{r}");
        assert_eq!(r["stream"], true, "{r}");
    }
    let first_again: Vec<&Value> = (rows.iter())
        .filter(|r| r["request_id"] == first["request_id"])
        .collect();
    assert_eq!(first_again, [&first], "the ended request is recorded once");
    let (h5, s5) = (h.clone(), store.to_owned());
    let (charged, usage, check) = tokio::task::spawn_blocking(move || {
        let (code, usage, err) = run(&h5, &s5, &["usage", "--by", "key", "--json"]);
        assert_eq!(code, 0, "{err}");
        let check = run(&h5, &s5, &["store", "check"]);
        (common::used(switchyard(&h5, &s5)), usage, check)
    })
    .await
    .unwrap();
    // Each stream reserved ~10 input tokens at $3/M and 1,000 output at $15/M.
    let each = (charged - cost) / IN_FLIGHT as f64;
    assert!(
        each > 0.015 && each < 0.0151,
        "each lost stream is charged its reservation: {each}"
    );
    let usage: Value = serde_json::from_str(usage.trim()).unwrap();
    assert_eq!(
        usage["requests"].as_u64(),
        Some(1 + IN_FLIGHT as u64),
        "{usage}"
    );
    assert_eq!(usage["unpriced_requests"].as_u64(), Some(IN_FLIGHT as u64));
    let shown = usage["cost_usd"].as_f64().unwrap();
    assert!(
        (shown - charged).abs() < 1e-9,
        "usage {shown} and the key's used {charged} agree"
    );
    assert_eq!(
        check.0, 0,
        "the totals equal the ledger: {}{}",
        check.1, check.2
    );
    drop(again);
    eprintln!(
        "{store_kind} ({mode}): {IN_FLIGHT} lost streams charged ${each:.6} each within {waited:?} of the kill",
        store_kind = if store.starts_with("sqlite:") {
            "sqlite"
        } else {
            "postgres"
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_in_flight_at_a_sigkill_are_charged_at_their_reservations_on_sqlite() {
    for mode in ["leased", "per_request"] {
        let dir = tempfile::tempdir().unwrap();
        let store = format!("sqlite:{}", dir.path().join("crash.db").display());
        crash(&store, mode).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_in_flight_at_a_sigkill_are_charged_at_their_reservations_on_postgres() {
    for mode in ["leased", "per_request"] {
        let Some(url) = switchyard_testkit::fresh_postgres_database(&format!("crash_{mode}"))
        else {
            return;
        };
        crash(&url, mode).await;
    }
}
