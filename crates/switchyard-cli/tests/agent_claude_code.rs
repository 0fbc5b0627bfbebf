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
fn script(hello: String) -> impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static {
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
    run_claude(
        "claude_code_creates_hello_txt_through_a_chat_completions_upstream",
        Some("claude-sonnet-4-5"),
        UpstreamDialect::ChatCompletions,
    );
}

/// Claude Code's own default model (no `--model`; 2.1.197 picks `claude-opus-4-8`): eight
/// `anthropic-beta` values, `thinking: adaptive`, `output_config.effort`.
#[test]
fn claude_code_on_its_default_model_creates_hello_txt() {
    run_claude(
        "claude_code_on_its_default_model_creates_hello_txt",
        None,
        UpstreamDialect::ChatCompletions,
    );
}

/// The other pair: Anthropic Messages in, OpenAI Responses out (`openai-native`'s
/// `gpt-5.4-mini`, a Responses model in the catalogue).
#[test]
fn claude_code_creates_hello_txt_through_a_responses_upstream() {
    run_claude(
        "claude_code_creates_hello_txt_through_a_responses_upstream",
        None,
        UpstreamDialect::Responses,
    );
}

/// The routes for an upstream of `dialect`: every model Claude Code asks for (`claude-*` and
/// anything else) to one model of that dialect.
fn routes(dialect: UpstreamDialect) -> Vec<Route> {
    let (provider, model) = match dialect {
        UpstreamDialect::ChatCompletions => ("openai", "gpt-4o"),
        UpstreamDialect::Responses => ("openai-native", "gpt-5.4-mini"),
        UpstreamDialect::Messages => unreachable!("Claude Code speaks Messages itself"),
    };
    vec![
        Route::new("claude-*", provider, model),
        Route::new("*", provider, model),
    ]
}

/// Runs `claude -p` (test `name`, for the namespace re-run) with `model` (`None`: its
/// default) against an upstream of `dialect`, and checks the file and the exchanges.
fn run_claude(name: &str, model: Option<&str>, dialect: UpstreamDialect) {
    let Some(claude) = agents::client_bin("npm/node_modules/.bin/claude") else {
        return;
    };
    if !agents::isolated(name) {
        return;
    }
    let scene = AgentScene::start_in(dialect, &routes(dialect), "", |work| {
        script(work.join("hello.txt").display().to_string())
    });
    let mut cmd = scene.command(&claude);
    cmd.env("ANTHROPIC_BASE_URL", scene.client_url())
        .env("ANTHROPIC_API_KEY", CLIENT_KEY)
        .env("CLAUDE_CONFIG_DIR", scene.home.join(".claude"))
        .envs(OFFLINE.iter().copied())
        .args(["-p", "create hello.txt containing hi"])
        .args(["--permission-mode", "acceptEdits"])
        .args(["--max-turns", "4", "--output-format", "text"]);
    if let Some(model) = model {
        cmd.args(["--model", model]);
    }
    let run = scene.run(cmd, Duration::from_secs(120));
    scene.assert_hello(&run);
    let report = || scene.report(&run);
    assert_eq!(run.status.map(|s| s.success()), Some(true), "{}", report());
    assert!(
        run.stdout.contains("Done."),
        "the last turn's text: {}",
        report()
    );
    check_exchanges(&scene);
}

/// What the run must have looked like on both sides: every `/v1/messages` request streamed
/// and answered 200; upstream, the `Write` call once, then one request carrying its result
/// (the call not repeated: bifrost#5128 sent every tool call twice).
fn check_exchanges(scene: &AgentScene) {
    let messages: Vec<_> = (scene.tap.requests().into_iter())
        .filter(|r| r.path.starts_with("/v1/messages"))
        .collect();
    assert!(!messages.is_empty(), "{}", scene.figures());
    assert!(
        messages.iter().all(|r| r.json()["stream"] == true),
        "Claude Code fell back to stream: false: {}",
        scene.figures()
    );
    let exchanges = scene.upstream.exchanges();
    assert!(
        exchanges.iter().all(|e| e.status == 200),
        "{}",
        scene.figures()
    );
    let calls = (exchanges.iter())
        .filter(|e| e.turn.as_ref().and_then(AgentTurn::call).is_some())
        .count();
    assert_eq!(calls, 1, "{}", scene.figures());
    let last = exchanges.last().expect("the upstream was asked");
    let body = last.request.json();
    let raw = body.to_string();
    assert_eq!(
        raw.matches("\"Write\"").count() - tools_named_write(&body),
        1,
        "the call appears once in the history sent upstream: {}",
        scene.figures()
    );
    println!("x-switchyard-dropped seen: {:?}", scene.tap.dropped());
}

/// How many tool definitions named `Write` a request body offers (0 or 1).
fn tools_named_write(body: &serde_json::Value) -> usize {
    (body["tools"].as_array().into_iter().flatten())
        .filter(|t| t["name"] == "Write" || t["function"]["name"] == "Write")
        .count()
}
