//! The `switchyard` binary run as a person would: a clean environment (only `PATH`,
//! `SWITCHYARD_HOME` pointing at a fresh temporary directory, and the key variables a test
//! names), against the testkit's mock server on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use switchyard_testkit::{HttpResponse, MockServer, Reply, test_data_dir};
use tempfile::TempDir;

mod common;

/// A key that must never be printed.
const KEY: &str = "sk-test-cli-key-must-never-be-printed-7f3a9c";

/// One finished run of the binary.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Stderr lines without trailing whitespace, empty lines dropped.
    fn stderr_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// The `error: …` lines of stderr.
    fn error_lines(&self) -> Vec<&str> {
        self.stderr_lines()
            .into_iter()
            .filter(|l| l.starts_with("error:"))
            .collect()
    }

    /// The `warning: …` lines of stderr.
    fn warning_lines(&self) -> Vec<&str> {
        self.stderr_lines()
            .into_iter()
            .filter(|l| l.starts_with("warning:"))
            .collect()
    }

    /// Every stdout line parsed as a JSON object with a string `type`.
    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line).unwrap_or_else(|e| {
                    panic!("stdout line is not JSON ({e}): {line:?}\n{self:#?}")
                });
                assert!(v.is_object(), "stdout line is not an object: {line:?}");
                assert!(v["type"].is_string(), "stdout line has no `type`: {line:?}");
                v
            })
            .collect()
    }

    fn types(&self) -> Vec<String> {
        self.json_lines()
            .iter()
            .map(|v| v["type"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Neither stream shows the key.
    fn assert_no_key(&self) {
        assert!(
            !self.stdout.contains(KEY),
            "the key leaked to stdout: {self:#?}"
        );
        assert!(
            !self.stderr.contains(KEY),
            "the key leaked to stderr: {self:#?}"
        );
    }
}

/// A fresh `SWITCHYARD_HOME`.
fn home() -> TempDir {
    tempfile::tempdir().unwrap()
}

/// Writes `text` to `dir/name` and returns the path.
fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `switchyard ARGS` with a clean environment: `PATH`, `SWITCHYARD_HOME=home` and `vars`.
/// The child runs on a blocking thread so the mock server keeps serving; it is killed after 60 s.
async fn switchyard(home: &Path, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    tokio::task::spawn_blocking(move || run_blocking(cmd))
        .await
        .unwrap()
}

fn run_blocking(mut cmd: Command) -> Run {
    let mut child = cmd.spawn().expect("cannot start the switchyard binary");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).map(|_| v)
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).map(|_| v)
    });
    let status = common::wait_or_kill(&mut child, Duration::from_secs(60), &cmd);
    let stdout = String::from_utf8(out_reader.join().unwrap().unwrap()).expect("stdout is UTF-8");
    let stderr = String::from_utf8(err_reader.join().unwrap().unwrap()).expect("stderr is UTF-8");
    Run {
        code: status.code(),
        stdout,
        stderr,
    }
}

async fn serve(response: HttpResponse) -> MockServer {
    MockServer::start(vec![Reply::new(response)]).await
}

// ---------------------------------------------------------------------------------------------
// 1. Streaming text
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn text_mode_streams_text_to_stdout_and_reasoning_and_usage_to_stderr() {
    let server = serve(HttpResponse::fixture("anthropic_thinking")).await;
    let home = home();
    let url = server.url();
    let run = switchyard(
        home.path(),
        &[
            "task",
            "What is 27 * 453?",
            "--provider",
            "anthropic",
            "--base-url",
            &url,
        ],
        &[("ANTHROPIC_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(
        run.stdout, "27 * 453 = **12,231** (10,800 + 1,350 + 81).\n",
        "{run:#?}"
    );
    let reasoning = "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3\n3. 27 * 400 = 10800, 27 * 50 = 1350, 27 * 3 = 81\n4. 10800 + 1350 + 81 = 12231";
    assert!(run.stderr.contains(reasoning), "{run:#?}");
    let last = *run.stderr_lines().last().unwrap();
    assert!(last.contains("52 in"), "{last}");
    assert!(last.contains("137 out"), "{last}");
    assert!(last.contains('$'), "{last}");
    assert!(!last.contains("failed"), "{last}");
    // No colour codes when stderr is not a terminal.
    assert!(!run.stderr.contains('\x1b'), "{run:#?}");
    assert!(run.error_lines().is_empty(), "{run:#?}");
    run.assert_no_key();

    // The request went to the mock with the key in its header and the default model: the
    // reference's (Cline v4.0.10 `anthropicDefaultModelId`).
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(req.json()["model"], "claude-sonnet-5");
    assert_eq!(
        req.json()["messages"][0]["content"][0]["text"],
        "What is 27 * 453?"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn quiet_hides_reasoning() {
    let server = serve(HttpResponse::fixture("anthropic_thinking")).await;
    let home = home();
    let url = server.url();
    let run = switchyard(
        home.path(),
        &[
            "task",
            "What is 27 * 453?",
            "--quiet",
            "--provider",
            "anthropic",
            "--base-url",
            &url,
        ],
        &[("ANTHROPIC_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(
        run.stdout, "27 * 453 = **12,231** (10,800 + 1,350 + 81).\n",
        "{run:#?}"
    );
    assert!(!run.stderr.contains("step by step"), "{run:#?}");
    assert!(!run.stderr.contains("12231"), "{run:#?}");
    let last = *run.stderr_lines().last().unwrap();
    assert!(
        last.contains("52 in") && last.contains("137 out") && last.contains('$'),
        "{last}"
    );
    run.assert_no_key();
}

// ---------------------------------------------------------------------------------------------
// 2. The --json contract
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn json_lines_follow_the_contract_for_a_tool_call() {
    let server = serve(HttpResponse::fixture("anthropic_tool_use")).await;
    let home = home();
    let url = server.url();
    let run = switchyard(
        home.path(),
        &[
            "task",
            "Weather in SF?",
            "--json",
            "--provider",
            "anthropic",
            "--base-url",
            &url,
        ],
        &[("ANTHROPIC_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    run.assert_no_key();
    let lines = run.json_lines();
    assert_eq!(
        run.types(),
        [
            "task_started",
            "api_req_started",
            "text",
            "text",
            "text",
            "tool_call",
            "usage",
            "task_finished"
        ],
        "{run:#?}"
    );

    let started = &lines[0];
    assert!(
        !started["task_id"].as_str().unwrap().is_empty(),
        "{started}"
    );
    assert_eq!(started["mode"], "act");
    assert_eq!(started["provider"], "anthropic");
    assert_eq!(started["model"], "claude-sonnet-5");

    let text: String = lines[2..5]
        .iter()
        .map(|v| v["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Okay, let's check the weather for San Francisco, CA:");

    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(test_data_dir().join("fixtures/anthropic_tool_use.expected.json"))
            .unwrap(),
    )
    .unwrap();
    let want = expected
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["type"] == "tool_call")
        .unwrap();
    let call = &lines[5];
    assert_eq!(call["id"], want["id"]);
    assert_eq!(call["name"], want["name"]);
    assert!(call["arguments"].is_string(), "{call}");
    assert_eq!(call["arguments"], want["arguments"]);

    let usage = &lines[6];
    assert_eq!(usage["input_tokens"], 472);
    assert_eq!(usage["output_tokens"], 89);
    assert_eq!(usage["cache_read_tokens"], 0);
    assert_eq!(usage["cache_write_tokens"], 0);
    assert_eq!(usage["estimated"], false);
    let cost = usage["cost_usd"].as_f64().unwrap();
    // claude-sonnet-5 at the reference's prices: $2 in, $10 out per million tokens.
    let want_cost = (472.0 * 2.0 + 89.0 * 10.0) / 1e6;
    assert!((cost - want_cost).abs() < 1e-12, "{cost} vs {want_cost}");

    let finished = &lines[7];
    assert_eq!(finished["status"], "completed");
    assert!(finished["duration_ms"].is_u64(), "{finished}");
    assert!(finished["first_token_ms"].is_u64(), "{finished}");
    // Human notes stay off stdout; stderr has no error.
    assert!(run.error_lines().is_empty(), "{run:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn json_error_line_for_insufficient_quota() {
    let server = serve(HttpResponse::fixture("openai_insufficient_quota")).await;
    let home = home();
    let url = format!("{}/v1", server.url());
    let run = switchyard(
        home.path(),
        &[
            "task",
            "hello",
            "--json",
            "--provider",
            "openai",
            "--model",
            "gpt-4o",
            "--base-url",
            &url,
        ],
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    run.assert_no_key();
    let lines = run.json_lines();
    assert_eq!(
        run.types(),
        [
            "task_started",
            "api_req_started",
            "api_req_failed",
            "error",
            "task_finished"
        ],
        "{run:#?}"
    );
    let error = &lines[3];
    assert_eq!(error["kind"], "quota_exceeded");
    assert_eq!(error["status"], 429);
    assert!(
        error["message"].as_str().unwrap().contains("quota"),
        "{error}"
    );
    assert_eq!(lines[4]["status"], "failed");
    assert_eq!(server.request_count(), 1, "a quota error is not retried");
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
}

// ---------------------------------------------------------------------------------------------
// 3. A typed model id is the model called (SPEC R2.3, R2.5)
// ---------------------------------------------------------------------------------------------

/// Runs `task` with `--provider provider [--model model] --base-url {mock}{suffix}` against a
/// server replaying `fixture`, with the provider's key set.
async fn typed(
    provider: &str,
    model: Option<&str>,
    fixture: &str,
    suffix: &str,
    key_var: &str,
    extra: &[&str],
) -> (Run, MockServer) {
    let server = serve(HttpResponse::fixture(fixture)).await;
    let home = home();
    let url = format!("{}{suffix}", server.url());
    let mut args = vec!["task", "hi", "--provider", provider, "--base-url", &url];
    if let Some(m) = model {
        args.extend(["--model", m]);
    }
    args.extend(extra);
    let run = switchyard(home.path(), &args, &[(key_var, KEY)]).await;
    (run, server)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_typed_model_id_is_the_id_sent() {
    // (provider, typed id, fixture, request path, warnings expected)
    let cases = [
        // In the reference's table (Chat Completions there): before issue 11 this warned and
        // called gpt-4.1.
        (
            "openai-native",
            "gpt-5.1",
            "openai_chat_text",
            "/v1/chat/completions",
            0,
        ),
        // A dated variant of a Responses model: its base's info, no warning.
        (
            "openai-native",
            "gpt-5.4-2026-03-05",
            "openai_responses",
            "/v1/responses",
            0,
        ),
        // Unknown, of OpenAI's reasoning family: the Responses API, one warning.
        (
            "openai-native",
            "gpt-5.9-pro",
            "openai_responses",
            "/v1/responses",
            1,
        ),
        // Unknown elsewhere: sent as typed, one warning.
        (
            "deepseek",
            "deepseek-nope",
            "deepseek_reasoner",
            "/v1/chat/completions",
            1,
        ),
    ];
    for (provider, model, fixture, path, warnings) in cases {
        let key_var = if provider == "deepseek" {
            "DEEPSEEK_API_KEY"
        } else {
            "OPENAI_API_KEY"
        };
        let (run, server) = typed(provider, Some(model), fixture, "/v1", key_var, &[]).await;
        assert_eq!(run.code, Some(0), "{model}: {run:#?}");
        run.assert_no_key();
        let req = &server.requests()[0];
        assert_eq!(req.path, path, "{model}");
        assert_eq!(
            req.json()["model"],
            model,
            "{model}: the typed id is the id sent"
        );
        let lines = run.warning_lines();
        assert_eq!(lines.len(), warnings, "{model}: {run:#?}");
        if warnings == 1 {
            assert!(lines[0].contains(model), "{model}: {lines:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_model_the_references_default_is_called() {
    // (provider, fixture, base URL suffix, key variable, the reference's default)
    let cases = [
        (
            "anthropic",
            "anthropic_text",
            "",
            "ANTHROPIC_API_KEY",
            "claude-sonnet-5",
        ),
        (
            "deepseek",
            "deepseek_reasoner",
            "/v1",
            "DEEPSEEK_API_KEY",
            "deepseek-chat",
        ),
        (
            "qwen",
            "openai_chat_text",
            "/v1",
            "DASHSCOPE_API_KEY",
            "qwen3-coder-plus",
        ),
    ];
    for (provider, fixture, suffix, key_var, default) in cases {
        let (run, server) = typed(provider, None, fixture, suffix, key_var, &[]).await;
        assert_eq!(run.code, Some(0), "{provider}: {run:#?}");
        assert!(run.warning_lines().is_empty(), "{provider}: {run:#?}");
        assert_eq!(server.requests()[0].json()["model"], default, "{provider}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn qwen_in_china_uses_the_mainland_table() {
    let server = serve(HttpResponse::fixture("openai_chat_text")).await;
    let home = home();
    let config = format!(
        "[act]\nprovider = \"qwen\"\n[providers.qwen]\nregion = \"china\"\nbase_url = \"{}/v1\"\n",
        server.url()
    );
    write_file(home.path(), "config.toml", &config);
    let run = switchyard(home.path(), &["task", "hi"], &[("DASHSCOPE_API_KEY", KEY)]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    // mainlandQwenModels' default (the reference's `mainlandQwenDefaultModelId`).
    assert_eq!(server.requests()[0].json()["model"], "qwen3-235b-a22b");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_provider_on_the_command_line_is_an_error_that_says_what_was_meant() {
    let server = serve(HttpResponse::fixture("openai_chat_text")).await;
    let home = home();
    let url = format!("{}/v1", server.url());
    let run = switchyard(
        home.path(),
        &["task", "hi", "--base-url", &url, "--provider", "antropic"],
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:#?}");
    let errors = run.error_lines();
    assert_eq!(errors.len(), 1, "{run:#?}");
    for w in ["`antropic`", "did you mean `anthropic`?"] {
        assert!(errors[0].contains(w), "`{w}` missing: {errors:?}");
    }
    assert_eq!(server.request_count(), 0, "nothing is sent");
    // `config check` reports the same problem.
    let run = switchyard(
        home.path(),
        &["config", "check", "--provider", "antropic"],
        &[],
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(run.stdout.contains("did you mean `anthropic`?"), "{run:#?}");
}

/// SPEC R2.3, R2.5 (issue 26): a model id newer than the catalogue, or one edit from a known
/// one, is sent as typed with one notice; it is the provider that says whether it exists.
#[tokio::test(flavor = "multi_thread")]
async fn any_model_id_on_the_command_line_is_sent_as_typed() {
    let home = home();
    for (provider, model, fixture) in [
        ("openai-native", "gpt-6-codex", "openai_responses"),
        ("openai-native", "o5", "openai_responses"),
        ("openai-native", "gpt-5.55", "openai_responses"),
        ("deepseek", "deepseek-chta", "openai_chat_text"),
    ] {
        let server = serve(HttpResponse::fixture(fixture)).await;
        let url = format!("{}/v1", server.url());
        let run = switchyard(
            home.path(),
            &[
                "task",
                "hi",
                "--base-url",
                &url,
                "--provider",
                provider,
                "--model",
                model,
            ],
            &[("OPENAI_API_KEY", KEY), ("DEEPSEEK_API_KEY", KEY)],
        )
        .await;
        assert_eq!(run.code, Some(0), "{model}: {run:#?}");
        let warnings = run.warning_lines();
        assert_eq!(warnings.len(), 1, "{model}: one notice: {run:#?}");
        assert!(warnings[0].contains(&format!("`{model}`")), "{warnings:?}");
        let sent = server.requests();
        assert!(!sent.is_empty(), "{model}: nothing sent: {run:#?}");
        assert_eq!(sent[0].json()["model"], model, "{model}");
        run.assert_no_key();
    }
}

/// SPEC R2.5: the provider's "model not found" (OpenAI's 404 `model_not_found`) names the
/// catalogue's nearest ids, is not retried, and exits as a failed request, not a typo.
#[tokio::test(flavor = "multi_thread")]
async fn a_model_the_provider_does_not_serve_names_the_nearest_known_ids() {
    let body = r#"{"error":{"message":"The model `gpt-6-codex` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#;
    let server = serve(HttpResponse::json(404, body)).await;
    let home = home();
    let url = format!("{}/v1", server.url());
    let run = switchyard(
        home.path(),
        &[
            "task",
            "hi",
            "--base-url",
            &url,
            "--provider",
            "openai-native",
            "--model",
            "gpt-6-codex",
        ],
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    assert_ne!(run.code, Some(0), "{run:#?}");
    assert_ne!(run.code, Some(2), "{run:#?}");
    assert_eq!(server.request_count(), 1, "not retried: {run:#?}");
    let errors = run.error_lines();
    assert_eq!(errors.len(), 1, "{run:#?}");
    assert!(
        errors[0].contains("did you mean `gpt-5-codex`"),
        "{errors:?}"
    );
    run.assert_no_key();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_typo_in_the_configuration_file_warns_and_sends_the_id_as_written() {
    let server = serve(HttpResponse::fixture("deepseek_reasoner")).await;
    let home = home();
    let config = format!(
        "[act]\nprovider = \"deepseek\"\nmodel = \"deepseek-chta\"\n[providers.deepseek]\nbase_url = \"{}/v1\"\n",
        server.url()
    );
    write_file(home.path(), "config.toml", &config);
    let run = switchyard(home.path(), &["task", "hi"], &[("DEEPSEEK_API_KEY", KEY)]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let warnings = run.warning_lines();
    assert_eq!(warnings.len(), 1, "{run:#?}");
    assert!(
        warnings[0].contains("`deepseek-chta`")
            && warnings[0].contains("did you mean `deepseek-chat`?"),
        "{warnings:?}"
    );
    assert_eq!(server.requests()[0].json()["model"], "deepseek-chta");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unpriced_model_has_an_unknown_cost_everywhere() {
    let server = serve(HttpResponse::fixture("deepseek_reasoner")).await;
    let home = home();
    let url = format!("{}/v1", server.url());
    let base = [
        "task",
        "9.11 or 9.8?",
        "--provider",
        "deepseek",
        "--model",
        "deepseek-nope",
    ];
    let mut args = base.to_vec();
    args.extend(["--base-url", &url, "--json"]);
    let run = switchyard(home.path(), &args, &[("DEEPSEEK_API_KEY", KEY)]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let lines = run.json_lines();
    let usage = lines.iter().find(|l| l["type"] == "usage").unwrap();
    assert_eq!(usage["output_tokens"], 58, "{usage}");
    assert!(usage["cost_usd"].is_null(), "unknown, not $0: {usage}");
    // The stderr line of a text run.
    let server = serve(HttpResponse::fixture("deepseek_reasoner")).await;
    let url = format!("{}/v1", server.url());
    let mut args = base.to_vec();
    args.extend(["--base-url", &url]);
    let run = switchyard(home.path(), &args, &[("DEEPSEEK_API_KEY", KEY)]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let last = *run.stderr_lines().last().unwrap();
    assert!(last.contains("cost unknown"), "{last}");
    assert!(!last.contains('$'), "{last}");
    // `switchyard tasks`, both ways.
    let run = switchyard(home.path(), &["tasks", "--json"], &[]).await;
    let tasks: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(tasks.len(), 2, "{run:#?}");
    for t in &tasks {
        assert!(t["cost_usd"].is_null(), "{t}");
        assert_eq!(t["unpriced_requests"], 1, "{t}");
    }
    let run = switchyard(home.path(), &["tasks"], &[]).await;
    let rows: Vec<&str> = run.stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{run:#?}");
    assert!(rows.iter().all(|r| r.contains("unknown")), "{run:#?}");
}

// ---------------------------------------------------------------------------------------------
// 4. Bad input: one clear line on stderr, a non-zero exit, nothing but JSON on stdout
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn missing_key_names_the_variable() {
    let home = home();
    let run = switchyard(
        home.path(),
        &["task", "hello", "--provider", "anthropic"],
        &[],
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert_eq!(run.stdout, "", "{run:#?}");
    let errors = run.error_lines();
    assert_eq!(errors.len(), 1, "{run:#?}");
    assert!(errors[0].contains("ANTHROPIC_API_KEY"), "{run:#?}");

    // The same in --json mode: stdout holds only JSON lines.
    let run = switchyard(
        home.path(),
        &["task", "hello", "--json", "--provider", "anthropic"],
        &[],
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:#?}");
    let lines = run.json_lines();
    let error = lines
        .iter()
        .find(|v| v["type"] == "error")
        .expect("an error line");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY"),
        "{error}"
    );
    assert_eq!(lines.last().unwrap()["type"], "task_finished");
    assert_eq!(lines.last().unwrap()["status"], "failed");
    // The field is always present: null when no content arrived.
    assert_eq!(lines.last().unwrap()["first_token_ms"], Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_provider_warning_comes_before_the_missing_key_error() {
    let home = home();
    let config = write_file(home.path(), "c.toml", "[act]\nprovider = \"antropic\"\n");
    let config = config.to_str().unwrap();
    let run = switchyard(home.path(), &["--config", config, "task", "hello"], &[]).await;
    assert_eq!(run.code, Some(2), "{run:#?}");
    let lines = run.stderr_lines();
    let warning = lines
        .iter()
        .position(|l| l.starts_with("warning:") && l.contains("`antropic`"));
    let error = lines
        .iter()
        .position(|l| l.starts_with("error:") && l.contains("ANTHROPIC_API_KEY"));
    assert!(
        matches!((warning, error), (Some(w), Some(e)) if w < e),
        "{run:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_base_url_is_named() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let home = home();
    let run = switchyard(
        home.path(),
        &[
            "task",
            "hello",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            &url,
            "--retries",
            "0",
        ],
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert_eq!(run.stdout, "", "{run:#?}");
    let errors = run.error_lines();
    assert_eq!(errors.len(), 1, "{run:#?}");
    assert!(errors[0].contains(&url), "{run:#?}");
    run.assert_no_key();

    let run = switchyard(
        home.path(),
        &[
            "task",
            "hello",
            "--json",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            &url,
            "--retries",
            "0",
        ],
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert_eq!(
        run.types(),
        [
            "task_started",
            "api_req_started",
            "api_req_failed",
            "error",
            "task_finished"
        ],
        "{run:#?}"
    );
    let lines = run.json_lines();
    assert_eq!(lines[3]["kind"], "network");
    assert!(
        lines[2]["message"].as_str().unwrap().contains(&url),
        "{run:#?}"
    );
    run.assert_no_key();
}

/// Runs a task with the broken configuration `text` (written to `home/name`), in text and in
/// `--json` mode, and checks the one error names `FILE:LINE:` and `field`, exits 2, and leaves
/// the file as it was.
async fn assert_config_error(home: &Path, name: &str, text: &str, line: usize, field: &str) {
    let path = write_file(home, name, text);
    let file = path.to_str().unwrap();
    for json in [false, true] {
        let mut args = vec!["--config", file, "task", "hello"];
        if json {
            args.push("--json");
        }
        let run = switchyard(home, &args, &[("ANTHROPIC_API_KEY", KEY)]).await;
        let label = format!("{name} json={json}");
        assert_eq!(run.code, Some(2), "{label}: {run:#?}");
        run.assert_no_key();
        let message = if json {
            let lines = run.json_lines();
            let error = lines
                .iter()
                .find(|v| v["type"] == "error")
                .expect("an error line");
            assert_eq!(error["kind"], "config", "{label}");
            assert_eq!(lines.last().unwrap()["status"], "failed", "{label}");
            error["message"].as_str().unwrap().to_owned()
        } else {
            assert_eq!(run.stdout, "", "{label}: {run:#?}");
            let errors = run.error_lines();
            assert_eq!(errors.len(), 1, "{label}: {run:#?}");
            errors[0].to_owned()
        };
        assert!(
            message.contains(&format!("{file}:{line}:")),
            "{label}: {message}"
        );
        assert!(
            message.contains(field),
            "{label}: field `{field}` not named: {message}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "{label}: file changed"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn config_with_an_unknown_field_names_file_line_and_field() {
    let home = home();
    let text = "[act]\nprovider = \"anthropic\"\nmodle = \"x\"\n";
    assert_config_error(home.path(), "typo.toml", text, 3, "modle").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn config_with_a_syntax_error_names_file_line_and_field() {
    let home = home();
    // An unquoted string value for `model` on line 3.
    let text = "[act]\nprovider = \"anthropic\"\nmodel = claude\n";
    assert_config_error(home.path(), "syntax.toml", text, 3, "model").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_provider_in_config_warns_and_falls_back_to_anthropic() {
    let server = serve(HttpResponse::fixture("anthropic_text")).await;
    let home = home();
    // The default location: $SWITCHYARD_HOME/config.toml.
    let text = format!(
        "[act]\nprovider = \"antropic\"\n\n[providers.anthropic]\nbase_url = \"{}\"\n",
        server.url()
    );
    let path = write_file(home.path(), "config.toml", &text);
    let run = switchyard(
        home.path(),
        &["task", "capital of France?"],
        &[("ANTHROPIC_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    run.assert_no_key();
    let warnings = run.warning_lines();
    assert!(warnings.iter().any(|w| w.contains("antropic")), "{run:#?}");
    let warning_at = run
        .stderr_lines()
        .iter()
        .position(|l| l.contains("antropic"))
        .unwrap();
    let started_at = run
        .stderr_lines()
        .iter()
        .position(|l| l.starts_with("anthropic · "))
        .unwrap();
    assert!(warning_at < started_at, "the warning comes first: {run:#?}");
    assert_eq!(
        run.stdout,
        "The capital of France is Paris, often called « la Ville Lumière » — the City of Light.\n\nWant more facts?\n"
    );
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[tokio::test(flavor = "multi_thread")]
async fn base_url_flag_applies_after_the_unknown_provider_fallback() {
    let server = serve(HttpResponse::fixture("anthropic_text")).await;
    let home = home();
    write_file(
        home.path(),
        "config.toml",
        "[act]\nprovider = \"antropic\"\n",
    );
    // Should the flag be lost, the request must not leave this machine: HTTPS goes to a closed
    // local proxy port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let proxy = format!("http://127.0.0.1:{closed}");
    let url = server.url();
    let run = switchyard(
        home.path(),
        &["task", "capital of France?", "--base-url", &url],
        &[
            ("ANTHROPIC_API_KEY", KEY),
            ("HTTPS_PROXY", &proxy),
            ("https_proxy", &proxy),
        ],
    )
    .await;
    run.assert_no_key();
    assert!(
        run.warning_lines().iter().any(|w| w.contains("antropic")),
        "{run:#?}"
    );
    assert_eq!(
        server.request_count(),
        1,
        "--base-url {url} was not used: {run:#?}"
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn html_502_is_summarised_without_the_page() {
    let page = "<!doctype html><html><body><h1>502</h1>secret upstream internals</body></html>";
    let server = serve(HttpResponse::new(
        502,
        &[("content-type", "text/html")],
        page,
    ))
    .await;
    let home = home();
    let url = format!("{}/v1", server.url());
    let run = switchyard(
        home.path(),
        &[
            "task",
            "hello",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            &url,
            "--retries",
            "0",
        ],
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert_eq!(run.stdout, "", "{run:#?}");
    run.assert_no_key();
    let errors = run.error_lines();
    assert_eq!(errors.len(), 1, "{run:#?}");
    assert!(errors[0].contains("HTTP 502"), "{run:#?}");
    assert!(errors[0].contains("text/html"), "{run:#?}");
    assert!(
        !run.stderr.contains("secret upstream internals"),
        "{run:#?}"
    );
    assert!(!run.stderr.contains("<html"), "{run:#?}");
}

/// Each failure is shown once, at every verbosity: `-v` once printed a retried 500 three times
/// (the provider layer's log line, the task layer's, and the rendered line) and the last one
/// twice (tests/cases/CASES.md, issue 46 item 7).
#[tokio::test(flavor = "multi_thread")]
async fn each_failure_is_shown_once_at_every_verbosity() {
    let body = r#"{"error":{"message":"the upstream model crashed","type":"server_error"}}"#;
    let server = serve(HttpResponse::new(
        500,
        &[("content-type", "application/json")],
        body,
    ))
    .await;
    let home = home();
    let url = format!("{}/v1", server.url());
    for verbosity in [None, Some("-v"), Some("-vv")] {
        let mut args: Vec<&str> = verbosity.into_iter().collect();
        args.extend([
            "task",
            "hello",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            &url,
            "--retries",
            "1",
        ]);
        let run = switchyard(home.path(), &args, &[("OPENAI_API_KEY", KEY)]).await;
        assert_eq!(run.code, Some(1), "{run:#?}");
        run.assert_no_key();
        // Two requests, two failures: the retry's line and the final error, each once. The
        // `-vv` event dump (`debug: event: {…}`) is each event's JSON, not a failure's line.
        let shown: Vec<&str> = (run.stderr_lines().into_iter())
            .filter(|l| l.contains("server error") && !l.starts_with("debug: event: "))
            .collect();
        assert_eq!(shown.len(), 2, "{verbosity:?}: {shown:#?}\n{run:#?}");
        assert!(shown[0].contains("retrying"), "{verbosity:?}: {shown:#?}");
        assert!(
            shown[1].starts_with("error: ") && shown[1].contains("the upstream model crashed"),
            "{verbosity:?}: {shown:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn empty_prompt_is_rejected() {
    let home = home();
    for prompt in ["", "   \n\t"] {
        let run = switchyard(
            home.path(),
            &["task", prompt, "--provider", "anthropic"],
            &[("ANTHROPIC_API_KEY", KEY)],
        )
        .await;
        assert_eq!(run.code, Some(2), "{run:#?}");
        assert_eq!(run.stdout, "", "{run:#?}");
        let errors = run.error_lines();
        assert_eq!(errors.len(), 1, "{run:#?}");
        assert!(errors[0].contains("prompt"), "{run:#?}");
        run.assert_no_key();

        let run = switchyard(
            home.path(),
            &["task", prompt, "--json", "--provider", "anthropic"],
            &[("ANTHROPIC_API_KEY", KEY)],
        )
        .await;
        assert_eq!(run.code, Some(2), "{run:#?}");
        assert_eq!(run.types(), ["error", "task_finished"], "{run:#?}");
        assert!(
            run.json_lines()[0]["message"]
                .as_str()
                .unwrap()
                .contains("prompt")
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 6. config check
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn config_check_shows_both_modes_and_redacts_keys() {
    let home = home();
    let text = "[act]\nprovider = \"deepseek\"\nmodel = \"deepseek-reasoner\"\n\n[plan]\nprovider = \"openrouter\"\nmodel = \"anthropic/claude-sonnet-4.5\"\n";
    let path = write_file(home.path(), "switchyard.toml", text);
    let run = switchyard(
        home.path(),
        &["config", "check", "--config", path.to_str().unwrap()],
        &[("DEEPSEEK_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    run.assert_no_key();
    let out = format!("{}{}", run.stdout, run.stderr);
    for want in [
        "deepseek",
        "deepseek-reasoner",
        "openrouter",
        "anthropic/claude-sonnet-4.5",
    ] {
        assert!(out.contains(want), "`{want}` missing: {run:#?}");
    }
    assert!(out.contains("act mode"), "{run:#?}");
    assert!(out.contains("plan mode"), "{run:#?}");
    assert!(out.contains("[redacted]"), "{run:#?}");
    assert!(
        out.lines()
            .any(|l| l.contains("DEEPSEEK_API_KEY") && l.contains("[redacted]")),
        "{run:#?}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("error") && l.contains("OPENROUTER_API_KEY")),
        "{run:#?}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[tokio::test(flavor = "multi_thread")]
async fn config_check_without_a_file_shows_the_local_default() {
    let home = home();
    let run = switchyard(home.path(), &["config", "check"], &[]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let out = format!("{}{}", run.stdout, run.stderr);
    for want in [
        "openai",
        "smollm2-135m-instruct",
        "http://127.0.0.1:8089/v1",
    ] {
        assert!(out.contains(want), "`{want}` missing: {run:#?}");
    }
    assert!(out.contains("built-in"), "{run:#?}");
    assert!(!out.contains("error"), "{run:#?}");
    // Nothing was written into the fresh home.
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0);
}

// ---------------------------------------------------------------------------------------------
// 7. models
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn models_lists_anthropic_with_its_table() {
    let home = home();
    let run = switchyard(home.path(), &["models"], &[]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("claude-sonnet-4-5-20250929"))
        .unwrap_or_else(|| panic!("{run:#?}"));
    assert!(line.contains("200,000"), "{line}");
    assert!(
        run.stdout.lines().any(|l| l.starts_with("anthropic")),
        "{run:#?}"
    );

    let run = switchyard(home.path(), &["models", "--provider", "anthropic"], &[]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.stdout.starts_with("anthropic"), "{run:#?}");
    assert!(
        !run.stdout.contains("deepseek-chat"),
        "only the one provider: {run:#?}"
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.contains("claude-sonnet-4-5-20250929") && l.contains("200,000")),
        "{run:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn models_with_an_unknown_provider_names_the_known_ids() {
    let home = home();
    let run = switchyard(home.path(), &["models", "--provider", "nope"], &[]).await;
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert_eq!(run.stdout, "", "{run:#?}");
    let errors = run.error_lines();
    assert_eq!(errors.len(), 1, "{run:#?}");
    for want in ["nope", "anthropic", "openrouter", "deepseek"] {
        assert!(errors[0].contains(want), "`{want}` missing: {run:#?}");
    }
}

/// The reference's model tables, read from the repository's JSON (not through Switchyard).
fn reference_tables() -> Value {
    let text = std::fs::read_to_string(test_data_dir().join("reference/cline-v4.0.10-models.json"))
        .unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["tables"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn models_lists_every_reference_model_under_its_provider_ids_with_its_default() {
    let home = home();
    let run = switchyard(home.path(), &["models", "--json"], &[]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let listings: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let find = |provider: &str, region: Option<&str>| {
        listings
            .iter()
            .find(|l| l["provider"] == provider && l["region"].as_str() == region)
            .unwrap_or_else(|| panic!("{provider} {region:?} not listed"))
    };
    let regions = [
        ("internationalQwenModels", "international"),
        ("mainlandQwenModels", "china"),
        ("internationalZAiModels", "international"),
        ("mainlandZAiModels", "china"),
    ];
    let mut checked = 0;
    for (name, table) in reference_tables().as_object().unwrap() {
        let region = regions.iter().find(|(t, _)| t == name).map(|(_, r)| *r);
        for provider in table["provider_ids"].as_array().unwrap() {
            let listing = find(provider.as_str().unwrap(), region);
            assert_eq!(listing["default_model"], table["default_model"], "{name}");
            let ids: Vec<&str> = listing["models"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["id"].as_str().unwrap())
                .collect();
            for id in table["models"].as_object().unwrap().keys() {
                assert!(ids.contains(&id.as_str()), "{name}: {id} not listed");
                checked += 1;
            }
        }
    }
    assert_eq!(
        checked, 494,
        "every model of the reference's 31 tables with a provider"
    );
    let models: usize = listings
        .iter()
        .map(|l| l["models"].as_array().unwrap().len())
        .sum();
    let mut providers: Vec<&str> = listings
        .iter()
        .map(|l| l["provider"].as_str().unwrap())
        .collect();
    providers.dedup();
    assert!(models >= 490, "{models}");
    assert!(providers.len() >= 38, "{providers:?}");
    // The text listing ends with the same count.
    let run = switchyard(home.path(), &["models"], &[]).await;
    let last = run.stdout.lines().last().unwrap();
    assert!(
        last.starts_with(&format!(
            "{models} models across {} provider ids",
            providers.len()
        )),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_catalogue_adds_a_model_and_is_named_as_its_source() {
    let server = serve(HttpResponse::fixture("openai_chat_text")).await;
    let home = home();
    let path = write_file(
        home.path(),
        "models.toml",
        "[openai.models.\"team-model\"]\ncontext_window = 32000\ninput_price = 1.0\noutput_price = 4.0\n\n[anthropic.models.\"claude-sonnet-5\"]\ninput_price = 2.5\n",
    );
    let run = switchyard(home.path(), &["models", "--provider", "openai"], &[]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("team-model"))
        .unwrap();
    assert!(line.contains("32,000"), "{line}");
    assert!(
        line.contains(&format!("user file {}", path.display())),
        "{line}"
    );
    let run = switchyard(
        home.path(),
        &["models", "--provider", "anthropic", "--json"],
        &[],
    )
    .await;
    let listing: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let sonnet = listing["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "claude-sonnet-5")
        .unwrap();
    assert_eq!(sonnet["input_price"], 2.5);
    assert_eq!(
        sonnet["output_price"], 10.0,
        "the other fields stay the reference's"
    );
    assert_eq!(sonnet["source"]["kind"], "user");
    assert_eq!(sonnet["source"]["over"]["table"], "anthropicModels");
    // A task with the user's model: no warning, priced from the file (openai_chat_text's
    // usage: 19 prompt tokens, 10 output).
    let url = format!("{}/v1", server.url());
    let run = switchyard(
        home.path(),
        &[
            "task",
            "hi",
            "--provider",
            "openai",
            "--model",
            "team-model",
            "--base-url",
            &url,
            "--json",
        ],
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.warning_lines().is_empty(), "{run:#?}");
    let usage = run
        .json_lines()
        .into_iter()
        .find(|l| l["type"] == "usage")
        .unwrap();
    let (i, o) = (
        usage["input_tokens"].as_f64().unwrap(),
        usage["output_tokens"].as_f64().unwrap(),
    );
    let want = (i * 1.0 + o * 4.0) / 1e6;
    assert!(
        (usage["cost_usd"].as_f64().unwrap() - want).abs() < 1e-12,
        "{usage}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_user_catalogue_names_file_line_and_field() {
    let home = home();
    let path = write_file(
        home.path(),
        "models.toml",
        "[openai.models.\"m\"]\ncontext_window = 1000\ninput_price = \"cheap\"\n",
    );
    for args in [
        &["models"][..],
        &["task", "hi", "--provider", "openai", "--model", "m"][..],
    ] {
        let run = switchyard(home.path(), args, &[("OPENAI_API_KEY", KEY)]).await;
        assert_eq!(run.code, Some(2), "{args:?}: {run:#?}");
        let errors = run.error_lines();
        assert_eq!(errors.len(), 1, "{run:#?}");
        assert!(
            errors[0].contains(&format!("{}:3:", path.display()))
                && errors[0].contains("input_price"),
            "{errors:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Provider ids that need the reference's account or editor, and one that is a local program
// (issue 11 item 4)
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn account_and_editor_providers_fail_with_one_sentence_and_exit_2() {
    let home = home();
    for (id, why) in [
        ("cline", "needs a Cline account"),
        ("cline-pass", "ClinePass"),
        ("vscode-lm", "a running VS Code"),
        ("oca", "Oracle Code Assist"),
    ] {
        let run = switchyard(home.path(), &["task", "hello", "--provider", id], &[]).await;
        assert_eq!(run.code, Some(2), "{id}: {run:#?}");
        let errors = run.error_lines();
        assert_eq!(errors.len(), 1, "{id}: {run:#?}");
        assert!(
            errors[0].starts_with(&format!("error: provider `{id}`")),
            "{run:#?}"
        );
        assert!(
            errors[0].contains(why) && errors[0].contains("choose another provider"),
            "{run:#?}"
        );
        assert!(
            run.warning_lines().is_empty(),
            "no unknown-id fallback: {run:#?}"
        );
        // The same sentence as a JSON error line.
        let run = switchyard(
            home.path(),
            &["task", "hello", "--json", "--provider", id],
            &[],
        )
        .await;
        assert_eq!(run.code, Some(2), "{id}: {run:#?}");
        let error = run
            .json_lines()
            .into_iter()
            .find(|l| l["type"] == "error")
            .unwrap_or_else(|| panic!("{run:#?}"));
        assert_eq!(error["kind"], "config");
        assert!(error["message"].as_str().unwrap().contains(why), "{run:#?}");
    }
    let run = switchyard(home.path(), &["models", "--provider", "vscode-lm"], &[]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout
            .contains("vscode-lm — unavailable: provider `vscode-lm`"),
        "{run:#?}"
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn claude_code_runs_the_claude_cli_through_the_whole_task() {
    use std::os::unix::fs::PermissionsExt;
    if !switchyard_testkit::require_program("sh", "install a POSIX shell") {
        return;
    }
    let home = home();
    let fixture = test_data_dir().join("fixtures/claude_code/api_key.ndjson");
    let stub = home.path().join("claude");
    std::fs::write(
        &stub,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{0}/argv'\ncat > '{0}/stdin'\ncat '{1}'\n",
            home.path().display(),
            fixture.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = write_file(
        home.path(),
        "c.toml",
        &format!(
            "[act]\nprovider = \"claude-code\"\nmodel = \"claude-sonnet-4-5-20250929\"\n[providers.claude-code]\ncommand = \"{}\"\n",
            stub.display()
        ),
    );
    let run = switchyard(
        home.path(),
        &[
            "--config",
            config.to_str().unwrap(),
            "task",
            "--json",
            "What is borrowing?",
        ],
        // A key in the environment never reaches the child.
        &[("ANTHROPIC_API_KEY", KEY)],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    run.assert_no_key();
    let lines = run.json_lines();
    let text: String = lines
        .iter()
        .filter(|l| l["type"] == "text")
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    assert!(text.starts_with("A value has one owner"), "{run:#?}");
    let usage = lines.iter().find(|l| l["type"] == "usage").unwrap();
    assert_eq!(usage["output_tokens"], 61);
    assert_eq!(usage["cost_usd"], 0.0194283);
    let argv = std::fs::read_to_string(home.path().join("argv")).unwrap();
    assert!(
        argv.lines().any(|l| l == "claude-sonnet-4-5-20250929"),
        "{argv}"
    );
    let stdin = std::fs::read_to_string(home.path().join("stdin")).unwrap();
    assert!(stdin.contains("What is borrowing?"), "{stdin}");
    assert!(!stdin.contains(KEY));
}

// ---------------------------------------------------------------------------------------------
// Ctrl-C (SPEC R9.5)
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_mid_stream_cancels_records_it_and_exits_130() {
    use std::io::BufRead;
    // One text delta in one chunk of a chunked body, then the server holds the stream open.
    let event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Once upon\"}}]}\n\n";
    let body = format!("{:x}\r\n{event}\r\n", event.len());
    let response = HttpResponse::new(
        200,
        &[
            ("content-type", "text/event-stream"),
            ("transfer-encoding", "chunked"),
        ],
        body,
    );
    let reply = Reply::new(response).after_body(switchyard_testkit::AfterBody::HoldOpen(
        Duration::from_secs(60),
    ));
    let server = MockServer::start(vec![reply]).await;
    let home = home();
    let url = format!("{}/v1", server.url());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home.path())
        .env("OPENAI_API_KEY", KEY)
        .args([
            "task",
            "--json",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            &url,
            "story",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let lines = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut lines = Vec::new();
        // Wait until the text arrived, then press Ctrl-C.
        loop {
            let mut line = String::new();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "stdout closed early: {lines:?}"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            let is_text = v["type"] == "text";
            lines.push(v);
            if is_text {
                break;
            }
        }
        let pid = child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-INT", &pid])
                .status()
                .unwrap()
                .success()
        );
        let mut rest = String::new();
        out.read_to_string(&mut rest).unwrap();
        lines.extend(
            rest.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()),
        );
        let status = child.wait().unwrap();
        (lines, status.code())
    })
    .await
    .unwrap();
    let (lines, code) = lines;
    assert_eq!(code, Some(130), "{lines:?}");
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "task_started",
            "api_req_started",
            "text",
            "api_req_finished",
            "task_finished"
        ],
        "{lines:?}"
    );
    assert_eq!(lines[3]["cancel_reason"], "user_cancelled");
    assert_eq!(lines[4]["status"], "cancelled");
    assert!(lines[4]["first_token_ms"].is_u64());
}

/// `switchyard models | head -1`: the reader goes away after one line while `switchyard` still
/// has most of its output to write, so its later writes fail (EPIPE); it must end quietly, with
/// exit code 0. The pipe is shrunk to one page (`F_SETPIPE_SZ`) so that the output is several
/// pipe buffers long: with the default 64 KiB pipe the whole listing (about 20 KiB) would fit
/// in the pipe before the reader closed it, and no write could ever fail.
#[test]
fn models_survives_a_closed_pipe() {
    use std::io::BufRead;
    let full = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .arg("models")
        .output()
        .unwrap();
    assert_eq!(full.status.code(), Some(0));

    let (reader, writer) = std::io::pipe().unwrap();
    let pipe_bytes = rustix::pipe::fcntl_setpipe_size(&writer, 4096).unwrap();
    assert!(
        full.stdout.len() > 4 * pipe_bytes,
        "the output ({} bytes) must be several pipe buffers ({pipe_bytes} bytes) long",
        full.stdout.len()
    );
    let child = {
        // The `Command` holds the write end until it is dropped: only the child may keep it.
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
        cmd.arg("models").stdout(writer).stderr(Stdio::piped());
        cmd.spawn().unwrap()
    };
    let mut out = std::io::BufReader::new(reader);
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.starts_with("anthropic"), "{first}");
    // What we took plus what the pipe can still hold is less than the whole output: the rest
    // is written after the reader has gone.
    let taken = first.len() + out.buffer().len();
    assert!(
        taken + pipe_bytes < full.stdout.len(),
        "read {taken} of {} bytes",
        full.stdout.len()
    );
    drop(out);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "not quiet: {stderr}");
}

/// Case T02: streams go through the proxy the environment names (`HTTP_PROXY`), as every
/// other request does, and `NO_PROXY` exempts a host: the streaming client (issue 17) must not
/// be a client that silently ignores them.
#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_from_the_environment_carries_the_stream_and_no_proxy_exempts() {
    let proxy = serve(HttpResponse::fixture("anthropic_thinking")).await;
    let home = home();
    let task = |base: String, vars: Vec<(&'static str, String)>| {
        let home = home.path().to_owned();
        async move {
            let mut all: Vec<(&str, &str)> = vec![("ANTHROPIC_API_KEY", KEY)];
            all.extend(vars.iter().map(|(k, v)| (*k, v.as_str())));
            switchyard(
                &home,
                &["task", "hi", "--provider", "anthropic", "--base-url", &base],
                &all,
            )
            .await
        }
    };
    let run = task(
        "http://llm.example.invalid".to_owned(),
        vec![("HTTP_PROXY", proxy.url())],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.stdout.contains("12,231"), "{run:#?}");
    let reqs = proxy.requests();
    assert_eq!(reqs.len(), 1);
    // A forward proxy gets the request in absolute form.
    assert_eq!(reqs[0].path, "http://llm.example.invalid/v1/messages");
    assert_eq!(reqs[0].header("x-api-key"), Some(KEY));

    // NO_PROXY names the server's host: the stream goes straight to it, not to the (dead)
    // proxy.
    let direct = serve(HttpResponse::fixture("anthropic_thinking")).await;
    let run = task(
        direct.url(),
        vec![
            ("HTTP_PROXY", "http://127.0.0.1:9".to_owned()),
            ("NO_PROXY", "127.0.0.1".to_owned()),
        ],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(direct.requests()[0].path, "/v1/messages");
    run.assert_no_key();
}
