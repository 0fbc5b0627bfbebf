//! Qwen Code (`@qwen-code/qwen-code`, pinned in scripts/agent-clients.sh, on the node 22 it
//! needs) finishes a one-tool task through `switchyard serve` (SPEC R14.1, R14.2) in each
//! dialect it speaks, in a network namespace with only loopback: Chat Completions (auth type
//! `openai`), Anthropic Messages (`anthropic`) and OpenAI Responses (`openai-responses`), each
//! to an upstream of its own dialect (forwarded, SPEC R14.2a) where the gateway forwards it and
//! of another (translated).
//!
//! How it is pointed at the gateway: its environment variables, as its docs give them,
//! `OPENAI_BASE_URL` (the gateway's URL with `/v1`), `OPENAI_API_KEY` and `OPENAI_MODEL` (with
//! the three set it picks the auth type `openai` by itself); `ANTHROPIC_BASE_URL` (the gateway's
//! URL, no `/v1`), `ANTHROPIC_API_KEY` and `ANTHROPIC_MODEL`; `--auth-type` says which when more
//! than one is set or for `openai-responses`. Run as `qwen -p TASK --approval-mode yolo`.
//!
//! Switches that keep it off the network: `general.enableAutoUpdate: false`,
//! `privacy.usageStatisticsEnabled: false` and `telemetry.enabled: false` in
//! `~/.qwen/settings.json`, and `QWEN_CODE_SKIP_UPDATE_CHECK_ONCE` against the update check.
//!
//! What Qwen Code 0.24.4 sends, as seen here: one streamed request per turn, about 77 KB, with
//! `max_tokens: 32768` and 14 tools (`write_file`, `edit`, `run_shell_command`, `read_file`,
//! `grep_search`, `agent`, …); user agent `QwenCode/0.24.4`. It writes files with
//! `write_file {file_path, content}` (an absolute path) and ends on a turn without tool calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use switchyard_testkit::{AgentTurn, AgentTurnRequest, UpstreamDialect};

mod common;

use common::agents::{self, AgentScene, CLIENT_KEY, ClientRun, Route};

/// Where scripts/agent-clients.sh installs `qwen`, under `.agent-clients/`.
const QWEN: &str = "npm/node_modules/.bin/qwen";

/// The task, as the user types it.
const TASK: &str = "create hello.txt containing hi";

/// The model Qwen Code asks for; the route `*` catches it.
const MODEL: &str = "qwen3-coder-plus";

/// The ways Qwen Code can speak to the gateway.
#[derive(Clone, Copy, Debug)]
enum Speaks {
    Chat,
    Messages,
    Responses,
}

impl Speaks {
    /// The path Qwen Code posts each turn to.
    fn path(self) -> &'static str {
        match self {
            Speaks::Chat => "/v1/chat/completions",
            Speaks::Messages => "/v1/messages",
            Speaks::Responses => "/v1/responses",
        }
    }

    /// `--auth-type`'s value.
    fn auth_type(self) -> &'static str {
        match self {
            Speaks::Chat => "openai",
            Speaks::Messages => "anthropic",
            Speaks::Responses => "openai-responses",
        }
    }
}

/// The route to an upstream of `dialect`: every model Qwen Code asks for, to one model there.
fn route(dialect: UpstreamDialect) -> (Route, &'static str) {
    let (provider, model) = match dialect {
        UpstreamDialect::ChatCompletions => ("openai", "gpt-4o"),
        UpstreamDialect::Messages => ("anthropic", "claude-sonnet-4-5"),
        UpstreamDialect::Responses => ("openai-native", "gpt-5.4-mini"),
        UpstreamDialect::Gemini => ("gemini", "gemini-2.5-pro"),
    };
    (Route::new("*", provider, model), model)
}

/// The model: `write_file` the file when the tool is offered and nothing has been done yet,
/// then "Done."; anything else (a request without the tool) a short text.
fn model(hello: String) -> impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static {
    move |r: &AgentTurnRequest| {
        if r.offers_tool("write_file") && r.tool_results == 0 {
            AgentTurn::tool_call("write_file", json!({"file_path": hello, "content": "hi"}))
        } else {
            AgentTurn::text("Done.")
        }
    }
}

/// Writes `~/.qwen/settings.json`: no auto-update, no usage statistics, no telemetry.
fn write_settings(home: &Path) {
    let dir = home.join(".qwen");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({
        "general": {"enableAutoUpdate": false},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
    });
    std::fs::write(dir.join("settings.json"), format!("{settings:#}")).unwrap();
}

/// Runs `qwen -p` for the task against `scene` (at `base_url`, as given to
/// `OPENAI_BASE_URL` or `ANTHROPIC_BASE_URL`) speaking `speaks`, on node 22.
fn run_qwen(scene: &AgentScene, bin: &Path, node: &Path, speaks: Speaks, base: &str) -> ClientRun {
    write_settings(&scene.home);
    let mut cmd = scene.command_on_node(bin, node);
    match speaks {
        Speaks::Chat | Speaks::Responses => cmd
            .env("OPENAI_BASE_URL", base)
            .env("OPENAI_API_KEY", CLIENT_KEY)
            .env("OPENAI_MODEL", MODEL),
        Speaks::Messages => cmd
            .env("ANTHROPIC_BASE_URL", base)
            .env("ANTHROPIC_API_KEY", CLIENT_KEY)
            .env("ANTHROPIC_MODEL", MODEL),
    };
    cmd.env("QWEN_CODE_SKIP_UPDATE_CHECK_ONCE", "true")
        .args(["--auth-type", speaks.auth_type()])
        .args(["-p", TASK, "--approval-mode", "yolo"]);
    scene.run(cmd, Duration::from_secs(120))
}

/// Runs the task with Qwen Code speaking `speaks` (to the gateway at its URL plus `suffix`) to
/// an upstream of `dialect`, and checks the file, the exit, and what went through: every turn
/// one request to `speaks`'s path answered 200, one upstream request each (nothing retried),
/// and the tool's result reached the model.
fn run_case(
    test: &str,
    speaks: Speaks,
    dialect: UpstreamDialect,
    suffix: &str,
) -> Option<AgentScene> {
    let bin = agents::client_bin(QWEN)?;
    let node = agents::node22_dir()?;
    if !agents::isolated(test) {
        return None;
    }
    let scene = AgentScene::start_in(dialect, &[route(dialect).0], "", |work| {
        model(work.join("hello.txt").display().to_string())
    });
    let base = format!("{}{suffix}", scene.client_url());
    let run = run_qwen(&scene, &bin, &node, speaks, &base);
    scene.assert_hello(&run);
    let report = || scene.report(&run);
    assert_eq!(run.status.map(|s| s.success()), Some(true), "{}", report());
    let posts: Vec<_> = (scene.tap.requests().into_iter())
        .filter(|r| r.method == "POST")
        .collect();
    assert!(posts.len() >= 2, "{}", report());
    for r in &posts {
        assert_eq!(
            r.path.split('?').next(),
            Some(speaks.path()),
            "{}",
            report()
        );
        assert_eq!(r.json()["model"], MODEL, "{}", report());
    }
    assert!(
        scene.tap.statuses().iter().all(|&s| s == 200),
        "{}",
        report()
    );
    assert_eq!(scene.upstream.request_count(), posts.len(), "{}", report());
    let last = scene.upstream.exchanges().pop().unwrap();
    assert!(
        String::from_utf8_lossy(&last.request.body).contains("hello.txt"),
        "the tool's result did not reach the model: {}",
        report()
    );
    Some(scene)
}

#[test]
fn qwen_code_chat_creates_hello_txt_forwarded_to_a_chat_upstream() {
    let test = "qwen_code_chat_creates_hello_txt_forwarded_to_a_chat_upstream";
    let dialect = UpstreamDialect::ChatCompletions;
    let Some(scene) = run_case(test, Speaks::Chat, dialect, "/v1") else {
        return;
    };
    scene.assert_forwarded(Speaks::Chat.path(), route(dialect).1);
}

/// `OPENAI_BASE_URL` with a trailing slash, as the users of QwenLM/qwen-code#36 set it for
/// their OpenAI-compatible servers (`http://HOST:PORT/v1/`, answered "400 status code (no
/// body)"): the requests still land on `/v1/chat/completions` and the task finishes.
#[test]
fn qwen_code_chat_creates_hello_txt_translated_to_an_anthropic_upstream() {
    let test = "qwen_code_chat_creates_hello_txt_translated_to_an_anthropic_upstream";
    run_case(test, Speaks::Chat, UpstreamDialect::Messages, "/v1/");
}

#[test]
fn qwen_code_messages_creates_hello_txt_forwarded_to_an_anthropic_upstream() {
    let test = "qwen_code_messages_creates_hello_txt_forwarded_to_an_anthropic_upstream";
    let dialect = UpstreamDialect::Messages;
    let Some(scene) = run_case(test, Speaks::Messages, dialect, "") else {
        return;
    };
    scene.assert_forwarded(Speaks::Messages.path(), route(dialect).1);
}

#[test]
fn qwen_code_messages_creates_hello_txt_translated_to_a_chat_upstream() {
    let test = "qwen_code_messages_creates_hello_txt_translated_to_a_chat_upstream";
    run_case(test, Speaks::Messages, UpstreamDialect::ChatCompletions, "");
}

#[test]
fn qwen_code_responses_creates_hello_txt_translated_to_an_anthropic_upstream() {
    let test = "qwen_code_responses_creates_hello_txt_translated_to_an_anthropic_upstream";
    run_case(test, Speaks::Responses, UpstreamDialect::Messages, "/v1");
}
