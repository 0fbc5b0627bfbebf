//! `switchyard serve` as a user starts it (SPEC R14.6, R14.9): the real binary on
//! 127.0.0.1:0 in front of the testkit's scripted Anthropic upstream, answering a Chat
//! Completions client, draining on SIGTERM with exit 0; and a non-loopback address refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use switchyard_testkit::{HttpResponse, MockServer, Reply};

mod common;

const KEY: &str = "sk-ant-serve-cli-test-0123456789";

#[tokio::test]
async fn serve_answers_a_chat_client_from_an_anthropic_route_and_drains_on_sigterm() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("serve.toml");
    let text = format!(
        "[serve.routes.sonnet]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{}\"\n",
        upstream.url()
    );
    std::fs::write(&config, text).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home.path())
        .env("ANTHROPIC_API_KEY", KEY)
        .arg("--config")
        .arg(&config)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let (answer, code, stderr) = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let (addr, line) = common::serve::announced_address(&mut stderr);
        let body = r#"{"model": "sonnet", "messages": [{"role": "user", "content": "Capital of France?"}]}"#;
        let answer = common::serve::request(&addr, "POST", "/v1/chat/completions", body);
        let pid = child.id().to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(killed.success());
        let status = common::wait_or_kill(&mut child, Duration::from_secs(20), &"serve");
        let mut rest = String::new();
        stderr.read_to_string(&mut rest).unwrap();
        (answer, status.code(), line + &rest)
    })
    .await
    .unwrap();
    let (status, body) = answer;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "The capital of France is Paris, often called « la Ville Lumière » — the City of Light.\n\nWant more facts?"
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains(KEY));
}

#[test]
fn serve_refuses_an_address_that_is_not_loopback_with_exit_2() {
    for args in [
        &["serve", "--listen", "0.0.0.0:0"][..],
        &["serve", "--no-auth", "--listen", "192.0.2.1:4141"][..],
    ] {
        let home = tempfile::tempdir().unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("SWITCHYARD_HOME", home.path())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("loopback"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}
