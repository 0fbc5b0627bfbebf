//! GitHub Copilot CLI (`@github/copilot`, pinned in scripts/agent-clients.sh) finishes a
//! one-tool task through `switchyard serve` (SPEC R14.1, R14.2) in its own-key mode (BYOK, no
//! GitHub sign-in) in each dialect it speaks, in a network namespace with only loopback: Chat
//! Completions (`COPILOT_PROVIDER_TYPE=openai`, wire API `completions`), OpenAI Responses (wire
//! API `responses`) and Anthropic Messages (`COPILOT_PROVIDER_TYPE=anthropic`), each to an
//! upstream of its own dialect (forwarded, SPEC R14.2a) where the gateway forwards it and of
//! another (translated).
//!
//! How it is pointed at the gateway (`copilot help providers`): `COPILOT_PROVIDER_BASE_URL`
//! (the gateway's URL with `/v1` for type `openai`, which appends `/chat/completions` or
//! `/responses`; without it for type `anthropic`, which appends `/v1/messages`),
//! `COPILOT_PROVIDER_TYPE`, `COPILOT_PROVIDER_WIRE_API`, `COPILOT_PROVIDER_API_KEY`,
//! `COPILOT_MODEL`, and the model's limits (`COPILOT_PROVIDER_MAX_PROMPT_TOKENS`,
//! `COPILOT_PROVIDER_MAX_OUTPUT_TOKENS`: a model outside its catalogue otherwise runs on
//! guessed defaults with a warning, github/copilot-cli#2637). Run as `copilot -p TASK
//! --allow-all-tools`.
//!
//! Switches that keep it off the network: `COPILOT_OFFLINE=true` (no GitHub sign-in, telemetry,
//! web tools, GitHub MCP server or auto-update) and `COPILOT_AUTO_UPDATE=false`; its state in
//! `COPILOT_HOME`. It unpacks its JavaScript package into `~/.cache/copilot` on a first run.
//!
//! What Copilot CLI 1.0.102 sends, as seen here: one streamed request per turn, about 47 KB,
//! offering 17 tools (`bash`, `view`, `create`, `edit`, `grep`, `glob`, `task`, …), with
//! `temperature: 0` and `top_p: 0.95` in Chat Completions (`temperature` alone in Messages);
//! user agent `OpenAI/JS 5.20.1` or `Anthropic/JS 0.94.0`. It writes files with
//! `create {path, file_text}` (an absolute path) and ends on a turn without tool calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use switchyard_testkit::{AgentTurn, AgentTurnRequest, UpstreamDialect};

mod common;

use common::agents::{self, AgentScene, CLIENT_KEY, ClientRun, Route};

/// Where scripts/agent-clients.sh installs `copilot` (a node launcher of the native binary of
/// its optional per-platform package), under `.agent-clients/`.
const COPILOT: &str = "npm/node_modules/.bin/copilot";

/// The switches that keep Copilot CLI off the network (besides the gateway).
const OFFLINE: &[(&str, &str)] = &[
    ("COPILOT_OFFLINE", "true"),
    ("COPILOT_AUTO_UPDATE", "false"),
];

/// The task, as the user types it.
const TASK: &str = "create hello.txt containing hi";

/// The model Copilot CLI asks for; the route `*` catches it.
const MODEL: &str = "copilot-agent";

/// The ways Copilot CLI can speak to the gateway.
#[derive(Clone, Copy, Debug)]
enum Speaks {
    Chat,
    Messages,
    Responses,
}

impl Speaks {
    /// The path Copilot CLI posts each turn to.
    fn path(self) -> &'static str {
        match self {
            Speaks::Chat => "/v1/chat/completions",
            Speaks::Messages => "/v1/messages",
            Speaks::Responses => "/v1/responses",
        }
    }

    /// `COPILOT_PROVIDER_TYPE`, `COPILOT_PROVIDER_WIRE_API` and the suffix of the base URL.
    fn provider(self) -> [&'static str; 3] {
        match self {
            Speaks::Chat => ["openai", "completions", "/v1"],
            Speaks::Responses => ["openai", "responses", "/v1"],
            Speaks::Messages => ["anthropic", "completions", ""],
        }
    }
}

/// The route to an upstream of `dialect`: every model Copilot CLI asks for, to one model there.
fn route(dialect: UpstreamDialect) -> (Route, &'static str) {
    let (provider, model) = match dialect {
        UpstreamDialect::ChatCompletions => ("openai", "gpt-4o"),
        UpstreamDialect::Messages => ("anthropic", "claude-sonnet-4-5"),
        UpstreamDialect::Responses => ("openai-native", "gpt-5.4-mini"),
        UpstreamDialect::Gemini => ("gemini", "gemini-2.5-pro"),
    };
    (Route::new("*", provider, model), model)
}

/// The model: `create` the file when the tool is offered and nothing has been done yet, then
/// "Done."; anything else a short text.
fn model(hello: String) -> impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static {
    move |r: &AgentTurnRequest| {
        if r.offers_tool("create") && r.tool_results == 0 {
            AgentTurn::tool_call("create", json!({"path": hello, "file_text": "hi"}))
        } else {
            AgentTurn::text("Done.")
        }
    }
}

/// Runs `copilot -p` for the task against `scene`, speaking `speaks`.
fn run_copilot(scene: &AgentScene, bin: &Path, speaks: Speaks) -> ClientRun {
    let [kind, wire, suffix] = speaks.provider();
    let mut cmd = scene.command(bin);
    cmd.envs(OFFLINE.iter().copied())
        .env("COPILOT_HOME", scene.home.join(".copilot"))
        .env(
            "COPILOT_PROVIDER_BASE_URL",
            format!("{}{suffix}", scene.client_url()),
        )
        .env("COPILOT_PROVIDER_TYPE", kind)
        .env("COPILOT_PROVIDER_WIRE_API", wire)
        .env("COPILOT_PROVIDER_API_KEY", CLIENT_KEY)
        .env("COPILOT_MODEL", MODEL)
        .env("COPILOT_PROVIDER_MAX_PROMPT_TOKENS", "128000")
        .env("COPILOT_PROVIDER_MAX_OUTPUT_TOKENS", "8192")
        .args(["-p", TASK, "--allow-all-tools"]);
    scene.run(cmd, Duration::from_secs(150))
}

/// Runs the task with Copilot CLI speaking `speaks` to an upstream of `dialect`, and checks the
/// file, the exit, and what went through: every turn one request to `speaks`'s path answered
/// 200, one upstream request each (nothing retried), and the tool's result reached the model.
fn run_case(test: &str, speaks: Speaks, dialect: UpstreamDialect) -> Option<AgentScene> {
    let bin = agents::client_bin(COPILOT)?;
    if !agents::isolated(test) {
        return None;
    }
    let scene = AgentScene::start_in(dialect, &[route(dialect).0], "", |work| {
        model(work.join("hello.txt").display().to_string())
    });
    let run = run_copilot(&scene, &bin, speaks);
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
fn copilot_chat_creates_hello_txt_forwarded_to_a_chat_upstream() {
    let test = "copilot_chat_creates_hello_txt_forwarded_to_a_chat_upstream";
    let dialect = UpstreamDialect::ChatCompletions;
    let Some(scene) = run_case(test, Speaks::Chat, dialect) else {
        return;
    };
    scene.assert_forwarded(Speaks::Chat.path(), route(dialect).1);
}

#[test]
fn copilot_chat_creates_hello_txt_translated_to_an_anthropic_upstream() {
    let test = "copilot_chat_creates_hello_txt_translated_to_an_anthropic_upstream";
    run_case(test, Speaks::Chat, UpstreamDialect::Messages);
}

/// Type `anthropic` with the gateway's URL without `/v1` (the Anthropic SDK appends
/// `/v1/messages`; a base URL ending in `/v1`, as openkaiden/kaiden#2585 first gave it, posts
/// to `/v1/v1/messages`). Its key goes as `x-api-key`, which the gateway reads; it sends no
/// Bearer token in this mode (github/copilot-sdk#910: proxies that want one refused it).
#[test]
fn copilot_messages_creates_hello_txt_forwarded_to_an_anthropic_upstream() {
    let test = "copilot_messages_creates_hello_txt_forwarded_to_an_anthropic_upstream";
    let dialect = UpstreamDialect::Messages;
    let Some(scene) = run_case(test, Speaks::Messages, dialect) else {
        return;
    };
    scene.assert_forwarded(Speaks::Messages.path(), route(dialect).1);
    let first = &scene.tap.requests()[0];
    assert_eq!(first.header_values("x-api-key"), [CLIENT_KEY]);
}

#[test]
fn copilot_messages_creates_hello_txt_translated_to_a_chat_upstream() {
    let test = "copilot_messages_creates_hello_txt_translated_to_a_chat_upstream";
    run_case(test, Speaks::Messages, UpstreamDialect::ChatCompletions);
}

#[test]
fn copilot_responses_creates_hello_txt_translated_to_an_anthropic_upstream() {
    let test = "copilot_responses_creates_hello_txt_translated_to_an_anthropic_upstream";
    run_case(test, Speaks::Responses, UpstreamDialect::Messages);
}

/// Copilot CLI's Chat requests carry `temperature: 0` and `top_p: 0.95` together. Claude
/// Sonnet 4.5 and later refuse the two in one request with a 400 ("`temperature` and `top_p`
/// cannot both be specified for this model": microsoft/copilot-intellij-feedback#1478, the same
/// Copilot requests through its own-key mode to Anthropic), so on a route to such a model the
/// gateway sends the temperature alone.
#[test]
fn copilot_chat_translated_to_claude_sends_temperature_or_top_p_not_both() {
    let test = "copilot_chat_translated_to_claude_sends_temperature_or_top_p_not_both";
    let Some(scene) = run_case(test, Speaks::Chat, UpstreamDialect::Messages) else {
        return;
    };
    let sent = scene.tap.requests()[0].json();
    assert!(
        sent.get("temperature").is_some() && sent.get("top_p").is_some(),
        "Copilot CLI no longer sends both: {sent}"
    );
    for exchange in scene.upstream.exchanges() {
        let body = exchange.request.json();
        assert!(
            body.get("temperature").is_none() || body.get("top_p").is_none(),
            "both reach claude-sonnet-4-5: temperature {} top_p {}",
            body["temperature"],
            body["top_p"]
        );
    }
}
