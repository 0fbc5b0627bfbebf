//! Cline CLI (`cline`, pinned in scripts/agent-clients.sh) finishes a one-tool task through
//! `switchyard serve` (SPEC R14.1, R14.2): its OpenAI-compatible provider speaks Chat
//! Completions to the gateway, which routes its model to an OpenAI **Responses** upstream (the
//! testkit's agent upstream, provider `openai-native` with a model of the Responses API), and
//! to an Anthropic Messages one, in a network namespace with only loopback.
//!
//! What Cline 3.0.65 sends and needs, as seen here: every turn is one streamed
//! `POST /v1/chat/completions` (`stream: true`, `stream_options.include_usage`, `tool_choice:
//! "auto"`, ~21 KiB: a ~4 KiB system message and 25 native function tools — `read_files`,
//! `search_codebase`, `run_commands`, `editor`, `ask_question`, the `team_*` tools…; no XML
//! tool text), `Authorization: Bearer` with the key of `cline auth`, user agent
//! `ai-sdk/openai-compatible`. It writes files with its `editor` tool (`path`, `new_text`;
//! the file is created when missing) and ends the task on a turn without tool calls. A stream
//! without a `finish_reason` fails the run ("Response stream ended without a finish reason.",
//! exit 1). Assistant turns come back with `content: null` beside `tool_calls`, and with
//! `reasoning_content` when the answer had reasoning; `--thinking LEVEL` sends
//! `reasoning_effort`.
//!
//! Switches: `--data-dir` (all its state in the test's temp dir), `CLINE_SESSION_BACKEND_MODE=
//! local` (else it starts a detached hub daemon on 127.0.0.1:25463 that outlives the run and is
//! shared by every run on the machine), `CLINE_NO_AUTO_UPDATE=1`, `telemetryOptOut` in its
//! global settings. It still resolves `data.cline.bot` and `otel.cline.bot` once; in the
//! namespace the lookups fail at once and do not hold the run up.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use switchyard_testkit::{AgentTurn, AgentTurnRequest, UpstreamDialect};

mod common;

use common::agents::{self, AgentScene, CLIENT_KEY, ClientRun, Route};

/// The model id Cline is configured with; the route `cline-*` catches it.
const MODEL: &str = "cline-agent";

/// The switches that keep Cline off the network and out of the machine's shared state.
const OFFLINE: &[(&str, &str)] = &[
    ("CLINE_SESSION_BACKEND_MODE", "local"),
    ("CLINE_NO_AUTO_UPDATE", "1"),
];

/// The model: the `editor` tool creates the file when it is offered and nothing has been done
/// yet, then "Done." (a turn without tool calls ends Cline's task); anything else gets a
/// short text.
fn model(hello: String) -> impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static {
    move |r: &AgentTurnRequest| {
        if r.offers_tool("editor") && r.tool_results == 0 {
            AgentTurn::tool_call("editor", json!({"path": hello, "new_text": "hi"}))
        } else {
            AgentTurn::text("Done.")
        }
    }
}

/// `cline` in `scene` with its state in `data` and the offline switches.
fn cline(scene: &AgentScene, bin: &Path, data: &Path) -> Command {
    let mut cmd = scene.command(bin);
    cmd.envs(OFFLINE.iter().copied())
        .arg("--data-dir")
        .arg(data);
    cmd
}

/// Configures the OpenAI-compatible provider (base URL, key, model) with `cline auth`, and
/// opts out of telemetry and auto-updates in its global settings.
fn configure(scene: &AgentScene, bin: &Path, data: &Path) {
    let mut auth = scene.command(bin);
    auth.envs(OFFLINE.iter().copied())
        .args(["auth", "--data-dir"])
        .arg(data)
        .args(["-p", "openai-compatible", "-k", CLIENT_KEY, "-m", MODEL])
        .arg("-b")
        .arg(format!("{}/v1", scene.client_url()));
    let run = scene.run(auth, Duration::from_secs(60));
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "cline auth failed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    let settings = data.join("settings");
    assert!(
        settings.join("providers.json").exists(),
        "cline auth wrote no providers.json"
    );
    std::fs::write(
        settings.join("global-settings.json"),
        json!({"telemetryOptOut": true, "autoUpdateEnabled": false}).to_string(),
    )
    .unwrap();
}

/// Asserts the run succeeded, Cline spoke as described in the module docs, and the gateway
/// asked the upstream in its dialect (`upstream_path`, the path's end) once per Cline request.
fn assert_cline_spoke_chat(scene: &AgentScene, run: &ClientRun, upstream_path: &str) {
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "{}",
        scene.report(run)
    );
    let requests = scene.tap.requests();
    assert!(requests.len() >= 2, "{}", scene.report(run));
    for r in &requests {
        let body = r.json();
        assert_eq!(
            (r.method.as_str(), r.path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(body["model"], MODEL);
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
    }
    assert!(
        requests[0].json()["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "editor")),
        "Cline offered no editor tool"
    );
    let exchanges = scene.upstream.exchanges();
    assert_eq!(exchanges.len(), requests.len(), "{}", scene.report(run));
    assert!(
        exchanges
            .iter()
            .all(|e| e.request.path.ends_with(upstream_path)),
        "{}",
        scene.report(run)
    );
    // Cline's last line is its run result: the task completed.
    assert!(
        run.stdout.contains(r#""finishReason":"completed""#),
        "{}",
        scene.report(run)
    );
}

/// Runs the task with Cline's model routed by `route` to an upstream speaking `dialect`.
fn run_cline(test: &str, dialect: UpstreamDialect, route: Route, upstream_path: &str) {
    let Some(bin) = agents::client_bin("npm/node_modules/.bin/cline") else {
        return;
    };
    if !agents::isolated(test) {
        return;
    }
    let scene = AgentScene::start_in(dialect, &[route], "", |work| {
        model(work.join("hello.txt").display().to_string())
    });
    let data = scene.home.join("cline-data");
    configure(&scene, &bin, &data);
    let mut cmd = cline(&scene, &bin, &data);
    cmd.arg("--json")
        .arg("-c")
        .arg(&scene.work)
        .arg("create hello.txt containing hi");
    let run = scene.run(cmd, Duration::from_secs(120));
    scene.assert_hello(&run);
    assert_cline_spoke_chat(&scene, &run, upstream_path);
}

#[test]
fn cline_creates_hello_txt_through_a_responses_upstream() {
    run_cline(
        "cline_creates_hello_txt_through_a_responses_upstream",
        UpstreamDialect::Responses,
        Route::new("cline-*", "openai-native", "gpt-5.4-mini"),
        "/v1/responses",
    );
}

/// The same through an Anthropic Messages upstream: Cline's tool call and its result cross
/// Chat Completions ⇄ Messages both ways.
#[test]
fn cline_creates_hello_txt_through_an_anthropic_upstream() {
    run_cline(
        "cline_creates_hello_txt_through_an_anthropic_upstream",
        UpstreamDialect::Messages,
        Route::new("cline-*", "anthropic", "claude-sonnet-4-5"),
        "/v1/messages",
    );
}
