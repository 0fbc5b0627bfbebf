//! Every case of `tests/cases` that has a `{id}.expected.json`, through the real binary: the
//! testkit server replays the case (its `meta.json` sequence), `switchyard task --json
//! --on-failure fail` runs one prompt against it, and what a user gets must be the file's
//! `task` and `tool_calls` (schema: `tests/cases/README.md`, "H cases"): the final status, the
//! HTTP requests, the waits between them, the error kind and the words of its message, the
//! text shown, the tool calls handed over. A new case file is a new row.
//!
//! The binary's retry waits are real (2 s, 3.1 s, 5 s, 8.6 s: the product is never made to wait
//! less in tests), so the cases run side by side: the whole table takes about as long as its
//! longest case.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use switchyard_api::providers::preset;
use switchyard_testkit::{MockServer, case_expectations, case_replies};

mod common;

/// A key that must never be printed.
const KEY: &str = "sk-test-cli-cases-key-must-never-be-printed-51c2";

/// The time between two requests may exceed the stated wait by this much before the test calls
/// it a hang: the rest of the failed stream, the next request's preparation and a loaded
/// machine (41 binaries at once under CI's other work took up to 2.9 s more). The stated wait
/// itself is checked exactly.
const HUNG: Duration = Duration::from_secs(15);

/// A stated wait is printed in seconds with rounding; this much above 110 % still passes.
const JITTER_ROUNDING: Duration = Duration::from_millis(50);

/// One finished run of the binary.
struct Run {
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `switchyard ARGS` with only `PATH`, a fresh `SWITCHYARD_HOME` and `vars`; killed after
/// 90 s.
fn run(home: &Path, args: &[String], vars: &[(String, String)]) -> Run {
    let out_path = home.join("stdout");
    let err_path = home.join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("cannot start the switchyard binary");
    let status = common::wait_or_kill(&mut child, Duration::from_secs(90), &args);
    Run {
        status: status.code(),
        stdout: std::fs::read_to_string(out_path).unwrap(),
        stderr: std::fs::read_to_string(err_path).unwrap(),
    }
}

/// Runs case `id` through the binary and returns what differs from its expectation.
async fn check(id: String, case: Value) -> Vec<String> {
    let server = MockServer::start(case_replies(&id)).await;
    let home = tempfile::tempdir().unwrap();
    let provider = case["provider"].as_str().unwrap().to_owned();
    let args: Vec<String> = [
        "task",
        "--json",
        "--on-failure",
        "fail",
        "--provider",
        &provider,
        "--model",
        case["model"].as_str().unwrap(),
        "--base-url",
        &format!("{}{}", server.url(), case["base_path"].as_str().unwrap()),
        "Summarise the build log.",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut vars: Vec<(String, String)> = preset(&provider)
        .map(|p| {
            p.api_key_env
                .iter()
                .map(|v| ((*v).to_owned(), KEY.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    if provider == "bedrock" {
        vars.push(("AWS_REGION".into(), "us-east-1".into()));
    }
    let dir = home.path().to_owned();
    let out = tokio::task::spawn_blocking(move || run(&dir, &args, &vars))
        .await
        .unwrap();
    compare(&case, &out, &server)
}

fn compare(case: &Value, out: &Run, server: &MockServer) -> Vec<String> {
    let want = &case["task"];
    let mut problems = Vec::new();
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let of_type = |t: &'static str| events.iter().filter(move |e| e["type"] == t);
    let finished = of_type("task_finished")
        .next_back()
        .map(|e| e["status"].clone());
    if finished.as_ref() != Some(&want["status"]) {
        problems.push(format!("status {finished:?}, want {}", want["status"]));
    }
    let expected_exit = if want["status"] == "completed" { 0 } else { 1 };
    if out.status != Some(expected_exit) {
        problems.push(format!("exit {:?}, want {expected_exit}", out.status));
    }
    let requests = server.requests();
    if requests.len() as u64 != want["requests"].as_u64().unwrap() {
        problems.push(format!(
            "{} requests, want {}",
            requests.len(),
            want["requests"]
        ));
    } else {
        // Each wait twice: the delay the binary stated in its `error_retry` (task-level) or
        // `retry_status` (provider-level) event, exact up to the jitter, and the time the
        // server saw between the two requests, which must hold the whole wait (the product
        // really waited) and not much more (HUNG bounds a hang; how much longer a loaded
        // machine takes is not asserted here).
        let stated: Vec<f64> = events
            .iter()
            .filter(|e| e["type"] == "error_retry" || e["type"] == "retry_status")
            .filter_map(|e| e["delay_seconds"].as_f64())
            .collect();
        let waits = want["waits_s"].as_array().unwrap();
        if stated.len() != waits.len() {
            problems.push(format!(
                "{} retry events with a delay, want {}",
                stated.len(),
                waits.len()
            ));
        }
        for (i, wait) in waits.iter().enumerate() {
            let wait = Duration::from_secs_f64(wait.as_f64().unwrap());
            if let Some(said) = stated.get(i).map(|s| Duration::from_secs_f64(*s)) {
                if said < wait.mul_f64(0.9) || said > wait.mul_f64(1.1) + JITTER_ROUNDING {
                    problems.push(format!(
                        "wait {} was stated as {said:?}, want {wait:?}",
                        i + 1
                    ));
                }
            }
            let gap = requests[i + 1].at - requests[i].at;
            if gap < wait.mul_f64(0.9) || gap > wait.mul_f64(1.1) + HUNG {
                problems.push(format!("wait {} was {gap:?}, want {wait:?}", i + 1));
            }
        }
    }
    let error = of_type("error").next_back();
    let kind = error.map_or(Value::Null, |e| e["kind"].clone());
    if kind != want["error_kind"] {
        problems.push(format!("error kind {kind}, want {}", want["error_kind"]));
    }
    let message = error
        .and_then(|e| e["message"].as_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    for words in want["message_contains"].as_array().into_iter().flatten() {
        let words = words.as_str().unwrap();
        if !message.contains(&words.to_ascii_lowercase()) {
            problems.push(format!("the error does not say {words:?}: {message}"));
        }
    }
    if let Some(text) = want["text"].as_str() {
        let shown: String = of_type("text").filter_map(|e| e["text"].as_str()).collect();
        if shown != text {
            problems.push(format!("text {shown:?}, want {text:?}"));
        }
    }
    let calls: Vec<&Value> = of_type("tool_call").collect();
    let wanted = case["tool_calls"].as_array().unwrap();
    let mut ids = HashSet::new();
    if calls.len() != wanted.len() {
        problems.push(format!("{} tool calls, want {}", calls.len(), wanted.len()));
    }
    for (got, want) in calls.iter().zip(wanted) {
        let arguments: Value =
            serde_json::from_str(got["arguments"].as_str().unwrap_or("")).unwrap_or(Value::Null);
        let id_ok = want["id"].is_null() || want["id"] == got["id"];
        if got["name"] != want["name"] || arguments != want["arguments"] || !id_ok {
            problems.push(format!("tool call {got}, want {want}"));
        }
        if !ids.insert(got["id"].to_string()) {
            problems.push(format!("tool call id {} repeated", got["id"]));
        }
    }
    if out.stdout.contains(KEY) || out.stderr.contains(KEY) {
        problems.push("the key was printed".to_owned());
    }
    if !problems.is_empty() {
        problems.push(format!("stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr));
    }
    problems
}

#[tokio::test(flavor = "multi_thread")]
async fn every_case_through_the_cli_gives_the_user_what_its_file_says() {
    let cases = case_expectations();
    assert!(cases.len() >= 41, "{} cases", cases.len());
    let mut runs = tokio::task::JoinSet::new();
    for (id, case) in cases {
        runs.spawn(async move { (id.clone(), check(id, case).await) });
    }
    let mut failures = Vec::new();
    while let Some(done) = runs.join_next().await {
        let (id, problems) = done.unwrap();
        if !problems.is_empty() {
            failures.push(format!("{id}: {}", problems.join("; ")));
        }
    }
    failures.sort();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
