//! Claude Code (`@anthropic-ai/claude-code`, pinned in scripts/agent-clients.sh) finishes a
//! one-tool task through `switchyard serve` (SPEC R14.1, R14.2): it speaks Anthropic Messages
//! to the gateway, which routes every model it asks for to an OpenAI Chat Completions upstream
//! (the testkit's agent upstream), in a network namespace with only loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use switchyard_testkit::{AgentTurn, AgentTurnRequest, UpstreamDialect};

mod common;

use common::agents::{self, AgentScene, CLIENT_KEY, Route};

/// The switches that keep Claude Code off the network (besides its base URL) and quiet:
/// telemetry, the auto-updater, error reports (Sentry), `/bug`, and every other nonessential
/// request (release notes, model capabilities, grove); no cost warnings.
const OFFLINE: &[(&str, &str)] = &[
    ("DISABLE_TELEMETRY", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
    ("DISABLE_ERROR_REPORTING", "1"),
    ("DISABLE_BUG_COMMAND", "1"),
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("DISABLE_COST_WARNINGS", "1"),
];

/// The model: `Write` the file when the tool is offered and nothing has been done yet, then
/// say "Done."; any other request (a title or topic with a haiku id, a quota probe) gets a
/// short text.
fn model(hello: String) -> impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static {
    move |r: &AgentTurnRequest| {
        if r.offers_tool("Write") && r.tool_results == 0 {
            AgentTurn::tool_call("Write", json!({"file_path": hello, "content": "hi"}))
        } else if r.offers_tool("Write") {
            AgentTurn::text("Done.")
        } else {
            AgentTurn::text("Hello file")
        }
    }
}

#[test]
fn claude_code_creates_hello_txt_through_a_chat_completions_upstream() {
    let Some(claude) = agents::client_bin("npm/node_modules/.bin/claude") else {
        return;
    };
    if !agents::isolated("claude_code_creates_hello_txt_through_a_chat_completions_upstream") {
        return;
    }
    let routes = [
        Route::new("claude-*", "openai", "gpt-4o"),
        Route::new("*", "openai", "gpt-4o"),
    ];
    let scene = AgentScene::start_in(UpstreamDialect::ChatCompletions, &routes, "", |work| {
        model(work.join("hello.txt").display().to_string())
    });
    let mut cmd = scene.command(&claude);
    cmd.env("ANTHROPIC_BASE_URL", scene.client_url())
        .env("ANTHROPIC_API_KEY", CLIENT_KEY)
        .env("CLAUDE_CONFIG_DIR", scene.home.join(".claude"))
        .envs(OFFLINE.iter().copied())
        .args(["-p", "create hello.txt containing hi"])
        .args(["--permission-mode", "acceptEdits"])
        .args(["--model", "claude-sonnet-4-5", "--max-turns", "4"])
        .args(["--output-format", "text"]);
    let run = scene.run(cmd, Duration::from_secs(120));
    scene.assert_hello(&run);
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "{}",
        scene.report(&run)
    );
    let dropped = scene.tap.dropped();
    println!("x-switchyard-dropped seen: {dropped:?}");
}
