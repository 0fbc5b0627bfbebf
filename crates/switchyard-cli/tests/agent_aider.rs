//! aider (`aider-chat`, pinned in scripts/agent-clients.sh, with the litellm and openai it
//! pins) finishes a one-file task through `switchyard serve` (SPEC R14.1, R14.2): its
//! `openai/NAME` model speaks Chat Completions to the gateway (`OPENAI_API_BASE`), which
//! routes it to an **Anthropic Messages** upstream (the testkit's agent upstream), in a network
//! namespace with only loopback; streamed and not.
//!
//! What aider 0.86.2 sends and needs, as seen here: one `POST /v1/chat/completions` per turn
//! (~2.9 KiB for this task: a system message, three example exchanges and the request with
//! the *file listing* rules of the `whole` edit format), `temperature: 0`, `stream: true`
//! without `stream_options` (so no usage chunk: it counts tokens itself) or, with
//! `--no-stream`, no `stream` at all (it then reads `usage`), no tools — it asks for edits in text and writes
//! the file from a reply like `hello.txt` followed by a fenced block; user agent
//! `OpenAI/Python` (the openai SDK under litellm).
//!
//! Switches: `--no-git`, `--edit-format whole`, `--map-tokens 0`, `--yes-always`,
//! `--no-check-update`, `--analytics-disable`, `--no-show-model-warnings`,
//! `--no-show-release-notes`, `--no-pretty`, `--no-fancy-input`,
//! `LITELLM_LOCAL_MODEL_COST_MAP=True` (litellm's own price list, not a download), and
//! `--model-metadata-file` with the model's limits and prices: without it aider's model-info
//! manager fetches litellm's price list from raw.githubusercontent.com (a 5 s timeout on a
//! machine with DNS, an error line in the namespace).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use switchyard_testkit::{AgentTurn, AgentTurnRequest, UpstreamDialect};

mod common;

use common::agents::{self, AgentScene, CLIENT_KEY, ClientRun, Route};

/// The model aider asks for: `openai/` picks litellm's OpenAI client, the rest is sent as
/// the model id, which the route `aider-*` catches.
const MODEL: &str = "openai/aider-agent";

/// The task, as the user types it.
const TASK: &str = "create hello.txt containing hi";

/// The model's answer to the task: the whole file in aider's *file listing* format.
const REPLY: &str = "hello.txt\n```\nhi\n```\n";

/// The model: the whole file in aider's *file listing* format when asked for the task,
/// anything else a short text.
fn model(r: &AgentTurnRequest) -> AgentTurn {
    match &r.last_user_text {
        Some(text) if text.contains(TASK) => AgentTurn::text(REPLY),
        _ => AgentTurn::text("Ok."),
    }
}

/// Runs aider on the task in a scene whose only route goes to an Anthropic upstream, with
/// `extra` switches.
fn run_aider(test: &str, extra: &[&str]) -> Option<(AgentScene, ClientRun)> {
    let bin = agents::client_bin("aider-venv/bin/aider")?;
    if !agents::isolated(test) {
        return None;
    }
    let routes = [Route::new("aider-*", "anthropic", "claude-sonnet-4-5")];
    let scene = AgentScene::start(UpstreamDialect::Messages, &routes, model);
    let metadata = scene.dir.path().join("aider-models.json");
    let limits = json!({
        "max_input_tokens": 200_000, "max_output_tokens": 8192,
        "input_cost_per_token": 0, "output_cost_per_token": 0,
        "litellm_provider": "openai", "mode": "chat",
    });
    std::fs::write(&metadata, json!({ MODEL: limits }).to_string()).unwrap();
    let mut cmd = scene.command(&bin);
    cmd.env("OPENAI_API_BASE", format!("{}/v1", scene.client_url()))
        .env("OPENAI_API_KEY", CLIENT_KEY)
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .args(["--model", MODEL, "--message", TASK])
        .args(["--edit-format", "whole", "--map-tokens", "0", "--no-git"])
        .args(["--yes-always", "--no-check-update", "--analytics-disable"])
        .args(["--no-show-model-warnings", "--no-show-release-notes"])
        .args(["--no-pretty", "--no-fancy-input"])
        .arg("--model-metadata-file")
        .arg(&metadata)
        .args(extra);
    let run = scene.run(cmd, Duration::from_secs(120));
    scene.assert_hello(&run);
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "{}",
        scene.report(&run)
    );
    Some((scene, run))
}

/// Asserts aider sent one Chat Completions request with `stream` as given and no tools, and
/// the gateway one Messages request.
fn assert_one_turn(scene: &AgentScene, run: &ClientRun, stream: bool) {
    let requests = scene.tap.requests();
    assert_eq!(requests.len(), 1, "{}", scene.report(run));
    let body = requests[0].json();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(body["model"], "aider-agent");
    // Unstreamed, litellm leaves `stream` out.
    assert_eq!(body["stream"].as_bool().unwrap_or(false), stream, "{body}");
    assert_eq!(body["temperature"], 0);
    assert!(body.get("tools").is_none(), "aider offered tools: {body}");
    let exchanges = scene.upstream.exchanges();
    assert_eq!(exchanges.len(), 1, "{}", scene.report(run));
    assert!(exchanges[0].request.path.ends_with("/v1/messages"));
    assert!(
        scene.tap.dropped().is_empty(),
        "dropped: {:?}",
        scene.tap.dropped()
    );
}

#[test]
fn aider_creates_hello_txt_through_an_anthropic_upstream() {
    let test = "aider_creates_hello_txt_through_an_anthropic_upstream";
    let Some((scene, run)) = run_aider(test, &[]) else {
        return;
    };
    assert_one_turn(&scene, &run, true);
}

#[test]
fn aider_creates_hello_txt_through_an_anthropic_upstream_without_streaming() {
    let test = "aider_creates_hello_txt_through_an_anthropic_upstream_without_streaming";
    let Some((scene, run)) = run_aider(test, &["--no-stream"]) else {
        return;
    };
    assert_one_turn(&scene, &run, false);
    // Unstreamed, aider reads the answer's `usage`: the upstream's own figures (the agent
    // upstream counts a token per 4 request bytes, and (text / 4) + 1 out) reach it through
    // the translation.
    let upstream = &scene.upstream.exchanges()[0];
    let input = upstream.request.body.len() / 4;
    let output = REPLY.len() / 4 + 1;
    let line = format!(
        "Tokens: {} sent, {} received.",
        aider_count(input),
        aider_count(output)
    );
    assert!(
        run.stdout.contains(&line),
        "no `{line}`:\n{}",
        scene.report(&run)
    );
}

/// A token count as aider prints it (`format_tokens` in `aider/utils.py`).
fn aider_count(n: usize) -> String {
    match n {
        0..1000 => n.to_string(),
        1000..10_000 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{}k", (n as f64 / 1000.0).round()),
    }
}
