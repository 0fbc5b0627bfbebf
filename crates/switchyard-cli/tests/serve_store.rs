//! `switchyard serve` on the store every command uses (SPEC R14.4, R14.9, R13.1): the real
//! binary with `--store`, a route whose first entry answers 429; the request is answered by
//! the fallback and recorded, `/ready` is 200, and afterwards `switchyard requests` (through
//! `SWITCHYARD_STORE`) lists the request and `switchyard limits` shows the route's first
//! entry cooling down.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use switchyard_testkit::{HttpResponse, MockServer, Reply};

mod common;

const KEY: &str = "sk-ant-serve-store-test-0123456789";

/// The binary with a clean environment whose home is `home`.
fn switchyard(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .env("ANTHROPIC_API_KEY", KEY)
        .stdin(Stdio::null());
    cmd
}

/// Runs `cmd` to its end: stdout as JSON lines.
fn json_lines(cmd: &mut Command) -> Vec<Value> {
    let (code, stdout, stderr) = common::output(cmd);
    assert_eq!(code, 0, "{stdout}{stderr}");
    common::json_lines(&stdout)
}

#[tokio::test]
async fn serve_records_its_requests_and_cooldowns_in_the_store_the_other_commands_read() {
    let primary = MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_429"))]).await;
    let backup = MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("serve.toml");
    let text = format!(
        "[serve.routes.sonnet]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{}\"\n\
         [[serve.routes.sonnet.fallbacks]]\nprovider = \"anthropic\"\nmodel = \"claude-haiku-4-5\"\nbase_url = \"{}\"\n",
        primary.url(),
        backup.url()
    );
    std::fs::write(&config, text).unwrap();
    let db = home.path().join("shared.db");
    let store = format!("sqlite:{}", db.display());
    let mut cmd = switchyard(home.path());
    cmd.arg("--config")
        .arg(&config)
        .args(["--store", &store, "serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let (answers, stderr) = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let (addr, line) = common::serve::announced_address(&mut stderr);
        let body = r#"{"model": "sonnet", "messages": [{"role": "user", "content": "Capital of France?"}]}"#;
        let answer = common::serve::request(&addr, "POST", "/v1/chat/completions", body);
        let ready = common::serve::request(&addr, "GET", "/ready", "");
        let pid = child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let status = common::wait_or_kill(&mut child, Duration::from_secs(20), &"serve");
        let mut rest = String::new();
        stderr.read_to_string(&mut rest).unwrap();
        assert_eq!(status.code(), Some(0), "{line}{rest}");
        ((answer, ready), line + &rest)
    })
    .await
    .unwrap();
    let ((status, body), (ready, _)) = answers;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ready, 200);
    assert!(
        stderr.contains(&format!("store sqlite:{}", db.display())),
        "{stderr}"
    );
    assert!(!stderr.contains(KEY));
    assert!(db.exists(), "serve did not use --store");
    assert_eq!((primary.request_count(), backup.request_count()), (1, 1));

    // `switchyard requests` reads the same store (through SWITCHYARD_STORE here).
    let mut requests = switchyard(home.path());
    requests.env("SWITCHYARD_STORE", &store);
    let rows = common::requests(requests);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!(r["route"], "sonnet", "{r}");
    assert_eq!(r["dialect"], "chat_completions", "{r}");
    assert_eq!(r["model"], "claude-haiku-4-5", "{r}");
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(
        (r["input_tokens"].as_u64(), r["output_tokens"].as_u64()),
        (Some(21), Some(27))
    );
    assert!(r["cost_usd"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r["request_id"].as_str().unwrap().starts_with("req_"), "{r}");
    let table = switchyard(home.path())
        .env("SWITCHYARD_STORE", &store)
        .arg("requests")
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains("anthropic:claude-haiku-4-5") && table.contains(" ok"),
        "{table}"
    );

    // `switchyard limits` shows the route's first entry cooling down after its 429.
    let mut limits = switchyard(home.path());
    limits
        .arg("--config")
        .arg(&config)
        .args(["--store", &store, "limits", "--json"]);
    let rows = json_lines(&mut limits);
    let first = rows
        .iter()
        .find(|r| r["mode"] == "serve" && r["route"] == "sonnet" && r["position"] == 0)
        .unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(first["state"], "cooling_down", "{first}");
    assert_eq!(first["reason"], "rate_limited", "{first}");
    let fallback = rows
        .iter()
        .find(|r| r["mode"] == "serve" && r["position"] == 1)
        .unwrap();
    assert_eq!(fallback["state"], "ready", "{fallback}");
}
