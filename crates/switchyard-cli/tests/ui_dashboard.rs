//! The dashboard at `/ui` end to end in headless Chromium (SPEC R14.11; issue 28): a real
//! `switchyard serve` on a store holding an admin key and two client keys, in front of testkit
//! upstreams (a plain one, one that answers 429 before a fallback, a slow stream held by a
//! gate, one that refuses with a 400); requests made with both keys; then
//! `tests/ui/dashboard.mjs` drives Debian's Chromium through `playwright-core`
//! (scripts/browser.sh installs both) and checks: every `/ui` path refused without a session;
//! sign-in and its cookie; both keys on the spend chart and in the totals and the CSV with the
//! exact costs `switchyard usage` reads from the spend log; a key revoked on the page refused
//! on its next request, and a key made there shown once; the 429's cooldown with its reason and
//! reset time as `switchyard limits` reads them; the slow stream on the live page and gone
//! when it ends; the last error with its kind, and a request refused at admission (the
//! page-made key's budget, 402) among them. Screenshots of each page go to
//! `target/ui-screenshots/`.
//!
//! The session checks answer public reports on another gateway's dashboard: LiteLLM's admin
//! UI kept a reusable proxy key in a cookie page scripts could read, which sign-out did not
//! revoke (BerriAI/litellm#36997, #35664): here the cookie is an opaque random id, `HttpOnly`,
//! and signing out drops it on the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::{Gate, HttpResponse, MockServer, Reply, skip_or_fail};

mod common;

use common::serve::{Serve, route};

const PROVIDER_KEY: &str = "sk-ant-ui-dashboard-test-0123456789";

/// The binary with a clean environment whose home is `home`, on `store`.
fn switchyard(home: &Path, store: &str) -> Command {
    common::switchyard_on(home, store, PROVIDER_KEY)
}

/// Runs `args`: stdout, after asserting exit 0.
fn run(home: &Path, store: &str, args: &[&str]) -> String {
    let (code, stdout, stderr) = common::output(switchyard(home, store).args(args));
    assert_eq!(code, 0, "{args:?}: {stdout}{stderr}");
    stdout
}

/// `keys create --json ARGS`: (key, id, prefix).
fn create_key(home: &Path, store: &str, args: &[&str]) -> (String, String, String) {
    let v = common::create_key(switchyard(home, store), args);
    let s = |f: &str| v[f].as_str().unwrap().to_owned();
    (s("key"), s("id"), s("prefix"))
}

/// The installed `playwright-core` folder and Chromium, or why not.
fn browser() -> Result<PathBuf, String> {
    let dir = common::playwright_dir()?;
    if Command::new("node").arg("--version").output().is_err() {
        return Err("node is not on PATH".to_owned());
    }
    Ok(dir)
}

/// A Chat request for `model` with `key`: (status, body).
fn chat(addr: &str, key: &str, model: &str, stream: bool) -> (u16, String) {
    let body = json!({"model": model, "max_tokens": 200, "stream": stream,
        "messages": [{"role": "user", "content": "Capital of France?"}]})
    .to_string();
    let auth = format!("Bearer {key}");
    let headers = [("authorization", auth.as_str())];
    let wait = Duration::from_secs(60);
    let (status, _, body) =
        common::serve::call(addr, "/v1/chat/completions", &headers, &body, wait);
    (status, body)
}

fn write_config(home: &Path, plain: &str, limited: &str, slow: &str, broken: &str) -> PathBuf {
    let sonnet_at = |name: &str, url: &str| route(name, "anthropic", "claude-sonnet-4-5", url);
    let text = format!(
        "{}{}[[serve.routes.flaky.fallbacks]]\nprovider = \"anthropic\"\nmodel = \"claude-haiku-4-5\"\nbase_url = \"{plain}\"\n{}{}",
        sonnet_at("sonnet", plain),
        sonnet_at("flaky", limited),
        sonnet_at("slow", slow),
        sonnet_at("broken", broken),
    );
    common::serve::write_config(home, &text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_spend_keys_limits_and_live_traffic_in_a_real_browser() {
    let browser_dir = match browser() {
        Ok(dir) => dir,
        Err(reason) => return skip_or_fail(&reason),
    };
    let text = || Reply::new(HttpResponse::fixture("anthropic_text"));
    let plain = MockServer::start(vec![text()]).await;
    let limited = MockServer::start(vec![Reply::new(HttpResponse::new(
        429,
        &[("content-type", "application/json"), ("retry-after", "300")],
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your per-minute rate limit"}}"#,
    ))])
    .await;
    let gate = Gate::new();
    // Held after its second text delta (body byte 930), until the browser saw it in flight.
    let slow = MockServer::start(vec![text().gate_at(930, &gate)]).await;
    let broken = MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "anthropic_prompt_too_long",
    ))])
    .await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let store = format!("sqlite:{}", h.join("ui.db").display());
    let config = write_config(&h, &plain.url(), &limited.url(), &slow.url(), &broken.url());
    let (admin, _, _) = create_key(&h, &store, &["--name", "ops", "--admin"]);
    let (key_a, id_a, prefix_a) = create_key(&h, &store, &["--name", "alice", "--budget", "5/day"]);
    let (key_b, id_b, prefix_b) = create_key(&h, &store, &["--name", "bob"]);
    let serve = Serve::start(switchyard(&h, &store), &config, &[]);
    let addr = serve.addr.clone();

    let blocking = {
        let (addr, key_a, key_b) = (addr.clone(), key_a.clone(), key_b.clone());
        move || {
            for (key, model) in [
                (&key_a, "sonnet"),
                (&key_a, "sonnet"),
                (&key_b, "sonnet"),
                (&key_a, "flaky"),
            ] {
                let (status, body) = chat(&addr, key, model, false);
                assert_eq!(status, 200, "{body}");
            }
            let (status, body) = chat(&addr, &key_b, "broken", false);
            assert_eq!(status, 400, "{body}");
        }
    };
    tokio::task::spawn_blocking(blocking).await.unwrap();
    assert_eq!(limited.request_count(), 1);
    // The records are written off the answer's path: wait until all five are there.
    let mut records = Vec::new();
    for _ in 0..100 {
        records = common::requests(switchyard(&h, &store));
        if records.len() == 5 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(records.len(), 5, "{records:?}");
    let expected = expectations(
        &h,
        &store,
        &records,
        [(&id_a, &prefix_a, "alice"), (&id_b, &prefix_b, "bob")],
    );

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("ui-screenshots");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui/dashboard.mjs");
    let mut node = Command::new("node");
    node.arg(&script)
        .env("GATEWAY", format!("http://{addr}"))
        .env("ADMIN_KEY", &admin)
        .env("KEY_A", &key_a)
        .env("KEY_B", &key_b)
        .env("EXPECT", expected.to_string())
        .env("SHOTS", &shots)
        .env("PLAYWRIGHT_DIR", &browser_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (out, err, code) = tokio::task::spawn_blocking(move || drive(node, &addr, &key_a, &gate))
        .await
        .unwrap();
    assert_eq!(code, Some(0), "the browser test failed:\n{out}\n{err}");
    assert!(
        out.contains("slow-seen") && out.contains("ok "),
        "{out}\n{err}"
    );
    // What the browser checked, for the test's log (`--nocapture`).
    eprintln!("{out}");
    for shot in [
        "signin",
        "spend",
        "spend-phone",
        "keys",
        "providers",
        "live",
        "audit",
    ] {
        assert!(
            shots.join(format!("{shot}.png")).exists(),
            "no screenshot {shot}"
        );
    }
    drop(serve);
}

/// What the page must show, from the store as the CLI reads it: per key its requests and cost
/// (`switchyard usage --by key`), key A's budget used (`keys list`), the cooldown (`limits`),
/// the failed request's kind (`requests`).
fn expectations(
    h: &Path,
    store: &str,
    records: &[Value],
    keys: [(&String, &String, &str); 2],
) -> Value {
    let usage = common::json_lines(&run(h, store, &["usage", "--by", "key", "--json"]));
    let listed = common::json_lines(&run(h, store, &["keys", "list", "--json"]));
    let config = h.join("serve.toml");
    let config = config.to_str().unwrap();
    let limits = common::json_lines(&run(h, store, &["--config", config, "limits", "--json"]));
    let mut by_key = Vec::new();
    for (id, prefix, name) in keys {
        let u = usage.iter().find(|u| u["group"] == **id).unwrap();
        // The spend log's exact costs: the sum of the key's records.
        let summed: f64 = (records.iter().filter(|r| r["key_id"] == **id))
            .map(|r| r["cost_usd"].as_f64().unwrap_or(0.0))
            .sum();
        assert!(
            (u["cost_usd"].as_f64().unwrap() - summed).abs() < 1e-12,
            "{u} vs {summed}"
        );
        assert!(summed > 0.0);
        let k = listed.iter().find(|k| k["id"] == **id).unwrap();
        // The share of input read from the cache, as the totals show it: the upstream's
        // answers read 2,048 of 2,317 input tokens from its cache.
        let tokens = |f: &str| u[f].as_u64().unwrap() as f64;
        let read = tokens("cache_read_tokens");
        let input = tokens("input_tokens") + read + tokens("cache_write_tokens");
        assert!(read > 0.0, "{u}");
        let cache_read = format!("{}%", (read / input * 100.0).round());
        by_key.push(
            json!({"id": id, "prefix": prefix, "name": name, "requests": u["requests"],
            "cost_usd": u["cost_usd"], "budget_used_usd": k["used_usd"],
            "cache_read": cache_read}),
        );
    }
    let cooling = limits
        .iter()
        .find(|l| l["route"] == "flaky" && l["state"] == "cooling_down")
        .unwrap();
    let until = cooling["until"].as_str().unwrap();
    let until_ms = switchyard_core::store::parse_utc_date(until).unwrap();
    let failed = records.iter().find(|r| r["status"] == "error").unwrap();
    json!({
        "key_a": by_key[0], "key_b": by_key[1],
        "cooldown": {"entry": cooling["entry"], "reason": cooling["reason"], "until_ms": until_ms},
        "error": {"route": failed["route"], "kind": failed["error_kind"]},
    })
}

/// Runs the browser script: on `slow-ready` sends the slow stream (key A, route `slow`), on
/// `slow-seen` opens its gate. (stdout, stderr, exit code).
fn drive(mut node: Command, addr: &str, key: &str, gate: &Gate) -> (String, String, Option<i32>) {
    let mut child = node.spawn().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut out = String::new();
    let mut slow = None;
    for line in stdout.lines() {
        let line = line.unwrap();
        out.push_str(&line);
        out.push('\n');
        match line.as_str() {
            "slow-ready" => {
                let (addr, key) = (addr.to_owned(), key.to_owned());
                slow = Some(std::thread::spawn(move || chat(&addr, &key, "slow", true)));
            }
            "slow-seen" => gate.open(),
            _ => {}
        }
    }
    gate.open();
    let status = common::wait_or_kill(&mut child, Duration::from_secs(180), &"node dashboard.mjs");
    if let Some(slow) = slow {
        let (status, body) = slow.join().unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("[DONE]"), "{body}");
    }
    (out, err.join().unwrap(), status.code())
}
