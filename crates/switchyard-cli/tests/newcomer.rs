//! What a new user meets (issue 26, item 6), through the real binary against the testkit's
//! local servers: a prompt too large for the model is not sent and the sizes are named; `-v`
//! shows each request and `-vv` the events; `--fallback PROVIDER:MODEL@URL`; `tasks` lists the
//! prompt typed, not the text piped with it; `--base-url` without `--model` uses the one model
//! the server lists, else says how to choose.
//!
//! Public reports of the unchecked prompt: an agent with no token-count guard sent prompts past
//! the model's maximum (https://github.com/tinyhumansai/openhuman/issues/2074, and its LM
//! Studio fix reading the window from `/v1/models`,
//! https://github.com/tinyhumansai/openhuman/pull/3560); a coding agent's 8,250-token prompt to a
//! 4,096-token local model (https://github.com/lijunzh/koda/issues/185); llama-cpp-python's
//! "Requested tokens exceed context window" (https://github.com/abetlen/llama-cpp-python/issues/416).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;
use switchyard_testkit::{HttpResponse, MockServer, Reply, Route};
use tempfile::TempDir;

const KEY: &str = "sk-test-newcomer-key-never-printed-41f0";

/// An OpenAI chat stream answering `text`.
fn answer(text: &str) -> Reply {
    Reply::new(HttpResponse::sse(&format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n\
         data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n\
         data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":7,\"completion_tokens\":2,\"total_tokens\":9}}}}\n\n\
         data: [DONE]\n\n"
    )))
}

/// An OpenAI model list of `ids`.
fn models(ids: &[&str]) -> Reply {
    let data: Vec<Value> = ids.iter().map(|id| serde_json::json!({"id": id})).collect();
    let body = serde_json::json!({"object": "list", "data": data}).to_string();
    Reply::new(HttpResponse::json(200, &body))
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the binary in `home` with `stdin` piped in (when given).
fn run(home: &TempDir, args: &[&str], stdin: Option<&str>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home.path())
        .env("SWITCHYARD_DATA_DIR", home.path().join("data"))
        .env("OPENAI_API_KEY", KEY)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(text.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let run = Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !run.stdout.contains(KEY) && !run.stderr.contains(KEY),
        "key leaked"
    );
    run
}

/// [`run`] on a blocking thread (the mock server keeps serving).
async fn run_async(home: &TempDir, args: &[&str], stdin: Option<&str>) -> Run {
    tokio::task::block_in_place(|| run(home, args, stdin))
}

fn base(server: &MockServer) -> String {
    format!("{}/v1", server.url())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_too_large_for_the_local_models_window_is_not_sent() {
    // The quickstart's model has a 2,048-token window; a 22 KB file is about 5,600 tokens.
    let server = MockServer::start(vec![answer("never")]).await;
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("notes.txt");
    std::fs::write(&file, "some words ".repeat(2_000)).unwrap();
    let url = base(&server);
    let file = file.display().to_string();
    let args = [
        "task",
        "--json",
        "--provider",
        "openai",
        "--model",
        "smollm2-135m-instruct",
        "--base-url",
        &url,
        "--file",
        &file,
    ];
    let out = run_async(&home, &args, None).await;
    assert_eq!(out.code, Some(1), "{}{}", out.stdout, out.stderr);
    assert_eq!(server.request_count(), 0, "nothing is sent");
    let error: Value = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["type"] == "error")
        .unwrap();
    assert_eq!(error["kind"], "context_window_exceeded");
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("the request was not sent"), "{message}");
    assert!(
        message.contains("context window of 2048 tokens"),
        "{message}"
    );
    assert!(message.contains("bytes"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn verbose_shows_each_request_and_very_verbose_the_events() {
    let server = MockServer::start(vec![answer("Hi."), answer("Hi.")]).await;
    let home = tempfile::tempdir().unwrap();
    let url = base(&server);
    let task = [
        "task",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
        &url,
        "hello",
    ];
    let out = run_async(&home, &[&["-v"][..], &task[..]].concat(), None).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let request = format!("info: request: POST {url}/chat/completions (openai model m, ");
    assert!(out.stderr.contains(&request), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("info: response: HTTP 200, content-type `text/event-stream`"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("event: "), "{}", out.stderr);
    let out = run_async(&home, &[&["-vv"][..], &task[..]].concat(), None).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("debug: event: {\"type\":\"task_started\""),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fallback_may_carry_its_base_url() {
    // The primary's port is closed: the request fails over to the fallback's own server.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let primary = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let backup = MockServer::start(vec![answer("From the backup.")]).await;
    let home = tempfile::tempdir().unwrap();
    let fallback = format!("openai:backup-model@{}", base(&backup));
    let args = [
        "task",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
        &primary,
        "--fallback",
        &fallback,
        "hello",
    ];
    let out = run_async(&home, &args, None).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("From the backup."), "{}", out.stdout);
    assert_eq!(backup.request_count(), 1);
    assert_eq!(backup.requests()[0].json()["model"], "backup-model");
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_lists_the_prompt_typed_not_the_text_piped_with_it() {
    let server = MockServer::start(vec![answer("Explained.")]).await;
    let home = tempfile::tempdir().unwrap();
    let url = base(&server);
    let args = [
        "task",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
        &url,
        "Explain this log",
    ];
    let out = run_async(&home, &args, Some("line one of a long log\nline two\n")).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let sent = server.requests()[0].json();
    let user = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()
        .to_string();
    assert!(user.contains("line one of a long log"), "{user}");
    let out = run_async(&home, &["tasks"], None).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("Explain this log"), "{}", out.stdout);
    assert!(!out.stdout.contains("line one"), "{}", out.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_base_url_without_a_model_uses_the_one_model_the_server_lists() {
    let server = MockServer::start_routed(
        vec![answer("Hello from the only model.")],
        vec![Route::get("/v1/models", models(&["qwen2.5-0.5b"]))],
    )
    .await;
    let home = tempfile::tempdir().unwrap();
    let url = base(&server);
    let args = ["task", "--provider", "openai", "--base-url", &url, "hello"];
    let out = run_async(&home, &args, None).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(server.requests()[0].json()["model"], "qwen2.5-0.5b");
    assert!(
        out.stderr
            .contains("using model qwen2.5-0.5b, the one model"),
        "{}",
        out.stderr
    );
    let listed = server.routed_requests();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_base_url_serving_several_models_asks_for_one() {
    let server = MockServer::start_routed(
        vec![answer("never")],
        vec![Route::get("/v1/models", models(&["alpha", "beta"]))],
    )
    .await;
    let home = tempfile::tempdir().unwrap();
    let url = base(&server);
    let out = run_async(
        &home,
        &["task", "--provider", "openai", "--base-url", &url, "hello"],
        None,
    )
    .await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("serves 2 models (alpha, beta)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--model MODEL"), "{}", out.stderr);
    assert_eq!(server.request_count(), 0);
    // A server that lists nothing (404 here) is named, with the same way out.
    let bare = MockServer::start(vec![Reply::new(HttpResponse::json(404, "{}"))]).await;
    let url = base(&bare);
    let out = run_async(
        &home,
        &["task", "--provider", "openai", "--base-url", &url, "hello"],
        None,
    )
    .await;
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("HTTP 404"), "{}", out.stderr);
    assert!(out.stderr.contains("pass --model MODEL"), "{}", out.stderr);
}
