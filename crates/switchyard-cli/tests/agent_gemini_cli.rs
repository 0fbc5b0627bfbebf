//! Gemini CLI (`@google/gemini-cli`, pinned in scripts/agent-clients.sh) finishes a one-tool
//! task through `switchyard serve` (SPEC R14.12, R14.2): it speaks Google's Gemini API to the
//! gateway (`GOOGLE_GEMINI_BASE_URL`), which routes its models to an Anthropic Messages
//! upstream (translated) and to a Gemini one (forwarded), in a network namespace with only
//! loopback.
//!
//! What Gemini CLI sends and needs, as seen here: every turn is one
//! `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse` with `x-goog-api-key` (its
//! `GEMINI_API_KEY`), tools as `functionDeclarations` with `parametersJsonSchema`, and thinking
//! on with thoughts shown for its Gemini 2.5 and 3 models. It writes files with
//! `write_file` (`file_path`, `content`), runs tools without asking under `--yolo`, and ends
//! the turn on an answer without calls. It reads each event with the genai SDK's `data: …`
//! pattern and fails a stream that ends without a `finishReason`. A call's id comes back on its
//! `functionResponse` prefixed with the tool's name (`write_file__ID`).
//!
//! Switches: `GEMINI_CLI_NO_RELAUNCH` (no second node process), and in its settings no update
//! checks, no usage statistics, no telemetry and no folder-trust prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use switchyard_testkit::{AgentTurn, AgentTurnRequest, UpstreamDialect};

mod common;

use common::agents::{self, AgentScene, CLIENT_KEY, ClientRun, Route};

const GEMINI: &str = "npm/node_modules/.bin/gemini";

/// The model Gemini CLI is told to use; the route `gemini-*` catches it and any other of its
/// models.
const MODEL: &str = "gemini-2.5-flash";

/// The model: `write_file` creates the file when it is offered and nothing has been done yet,
/// then "Done."; anything else (a routing or title request) gets a short text.
fn model(hello: String) -> impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static {
    move |r: &AgentTurnRequest| {
        if r.offers_tool("write_file") && r.tool_results == 0 {
            AgentTurn::tool_call("write_file", json!({"file_path": hello, "content": "hi"}))
        } else {
            AgentTurn::text("Done.")
        }
    }
}

/// Gemini CLI's user settings: its key from GEMINI_API_KEY, and no update checks, usage
/// statistics, telemetry or folder-trust prompt.
fn configure(home: &Path) {
    let dir = home.join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        // Without a chosen auth type 0.61.0 exits 41, "Invalid auth method selected", whatever
        // GEMINI_API_KEY holds.
        "security": {"folderTrust": {"enabled": false}, "auth": {"selectedType": "gemini-api-key"}},
    });
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
}

fn gemini(scene: &AgentScene, bin: &Path) -> Command {
    let mut cmd = scene.command(bin);
    cmd.env("GOOGLE_GEMINI_BASE_URL", scene.client_url())
        .env("GEMINI_API_KEY", CLIENT_KEY)
        .env("GEMINI_CLI_NO_RELAUNCH", "true")
        .args([
            "--yolo",
            "-m",
            MODEL,
            "-p",
            "create hello.txt containing hi",
        ]);
    cmd
}

/// Asserts the run succeeded, Gemini CLI spoke as described in the module docs, and the
/// gateway asked the upstream at `upstream_path`'s end once per model request.
fn assert_gemini_spoke(scene: &AgentScene, run: &ClientRun, upstream_path: &str) {
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "{}",
        scene.report(run)
    );
    let requests = scene.tap.requests();
    let turns: Vec<_> = (requests.iter())
        .filter(|r| r.path.contains(":streamGenerateContent"))
        .collect();
    assert!(turns.len() >= 2, "{}", scene.report(run));
    for r in &turns {
        assert_eq!(r.method, "POST");
        assert!(r.path.starts_with("/v1beta/models/gemini-"), "{}", r.path);
        assert!(r.path.ends_with("?alt=sse"), "{}", r.path);
        assert_eq!(r.header_values("x-goog-api-key"), [CLIENT_KEY]);
    }
    assert!(
        (turns[0].json()["tools"].as_array().into_iter().flatten())
            .flat_map(|t| t["functionDeclarations"]
                .as_array()
                .cloned()
                .unwrap_or_default())
            .any(|d| d["name"] == "write_file"),
        "Gemini CLI offered no write_file tool"
    );
    let exchanges = scene.upstream.exchanges();
    let models = (requests.iter())
        .filter(|r| {
            r.path.contains(":streamGenerateContent") || r.path.contains(":generateContent")
        })
        .count();
    assert_eq!(exchanges.len(), models, "{}", scene.report(run));
    assert!(
        exchanges.iter().all(|e| e
            .request
            .path
            .split('?')
            .next()
            .unwrap()
            .ends_with(upstream_path)),
        "{}",
        scene.report(run)
    );
    assert!(
        scene.tap.statuses().iter().all(|s| *s == 200),
        "{}",
        scene.report(run)
    );
}

/// Runs the task with Gemini CLI's models routed by `route` to an upstream speaking `dialect`.
fn run_gemini(
    test: &str,
    dialect: UpstreamDialect,
    route: Route,
    upstream_path: &str,
) -> Option<AgentScene> {
    let bin = agents::client_bin(GEMINI)?;
    if !agents::isolated(test) {
        return None;
    }
    let scene = AgentScene::start_in(dialect, &[route], "", |work| {
        model(work.join("hello.txt").display().to_string())
    });
    configure(&scene.home);
    let run = scene.run(gemini(&scene, &bin), Duration::from_secs(180));
    scene.assert_hello(&run);
    assert_gemini_spoke(&scene, &run, upstream_path);
    Some(scene)
}

/// Translated: Gemini's API in, Anthropic Messages out. The call's id and the thought
/// signature Gemini CLI sends back cross Gemini ⇄ Messages both ways.
#[test]
fn gemini_cli_creates_hello_txt_through_an_anthropic_upstream() {
    let Some(scene) = run_gemini(
        "gemini_cli_creates_hello_txt_through_an_anthropic_upstream",
        UpstreamDialect::Messages,
        Route::new("gemini-*", "anthropic", "claude-sonnet-4-5"),
        "/v1/messages",
    ) else {
        return;
    };
    // The tool result reached Anthropic paired with the call it answers.
    let exchanges = scene.upstream.exchanges();
    let last = serde_json::from_slice::<serde_json::Value>(&exchanges.last().unwrap().request.body)
        .unwrap();
    let messages = last["messages"].as_array().unwrap();
    let call = (messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default()))
    .find(|b| b["type"] == "tool_use")
    .expect("the call in the conversation");
    let result = (messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default()))
    .find(|b| b["type"] == "tool_result")
    .expect("the result in the conversation");
    assert_eq!(result["tool_use_id"], call["id"]);
}

/// Forwarded (SPEC R14.2a): a Gemini upstream gets Gemini CLI's bodies as it sent them and
/// Gemini CLI gets the upstream's events as they came; nothing is named dropped.
#[test]
fn gemini_cli_creates_hello_txt_through_a_gemini_upstream_forwarded() {
    let Some(scene) = run_gemini(
        "gemini_cli_creates_hello_txt_through_a_gemini_upstream_forwarded",
        UpstreamDialect::Gemini,
        Route::new("gemini-*", "gemini", "gemini-2.5-pro"),
        ":streamGenerateContent",
    ) else {
        return;
    };
    assert_eq!(scene.tap.dropped(), Vec::<String>::new());
    let requests = scene.tap.requests();
    let turns: Vec<_> = (requests.iter())
        .filter(|r| r.path.contains(":streamGenerateContent"))
        .collect();
    let exchanges = scene.upstream.exchanges();
    let sent = exchanges.last().unwrap();
    assert!(
        sent.request
            .path
            .starts_with("/v1beta/models/gemini-2.5-pro:"),
        "{}",
        sent.request.path
    );
    // The last body as Gemini CLI sent it: its call's thought signature went back as it came.
    let client = turns.last().unwrap().json();
    let upstream: serde_json::Value = serde_json::from_slice(&sent.request.body).unwrap();
    assert_eq!(upstream["contents"], client["contents"]);
    assert!(upstream.to_string().contains("YWdlbnQtdXBzdHJlYW0="));
}
