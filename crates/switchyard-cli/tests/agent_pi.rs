//! pi (`@earendil-works/pi-coding-agent`, formerly `@mariozechner/pi-coding-agent`; pinned in
//! scripts/agent-clients.sh, on the node 22 it needs) finishes a one-tool task through
//! `switchyard serve` (SPEC R14.1, R14.2) in each dialect it speaks, in a network namespace with
//! only loopback: Chat Completions (`api: "openai-completions"`), Anthropic Messages
//! (`anthropic-messages`) and OpenAI Responses (`openai-responses`), each to an upstream of its
//! own dialect (forwarded, SPEC R14.2a) where the gateway forwards it and of another
//! (translated).
//!
//! How it is pointed at the gateway, as its docs say (`docs/models.md`, "Configure a compatible
//! endpoint"): `models.json` in its agent directory (`~/.pi/agent`, or `PI_CODING_AGENT_DIR`)
//! adds a provider with `baseUrl` (the gateway's URL with `/v1` for the OpenAI APIs, which
//! append `/chat/completions` or `/responses`), `api`, `apiKey` and its `models`; or, for
//! Anthropic, overrides the built-in `anthropic` provider's `baseUrl` only (the gateway's URL
//! without `/v1`: the Anthropic SDK appends `/v1/messages`), keeping its models and its
//! `ANTHROPIC_API_KEY`. Run as `pi -p TASK --model PROVIDER/MODEL`.
//!
//! Switches that keep it off the network: `PI_OFFLINE=1` (no model catalog refresh, no package
//! installs or updates), `PI_SKIP_VERSION_CHECK=1` (no pi.dev version request),
//! `PI_TELEMETRY=0` and `enableInstallTelemetry: false` in its settings (no install
//! reporting, no attribution headers).
//!
//! What pi 1.6.0 sends, as seen here: one streamed request per turn, about 5.5 KB, offering
//! `read`, `bash`, `edit` and `write` (Chat Completions with `max_completion_tokens` and
//! `store: false`); user agent `pi/1.6.0`. It writes files with `write {path, content}` and
//! ends on a turn without tool calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::{AgentTurn, AgentTurnRequest, UpstreamDialect};

mod common;

use common::agents::{self, AgentScene, CLIENT_KEY, ClientRun, Route};

/// Where scripts/agent-clients.sh installs `pi`, under `.agent-clients/`.
const PI: &str = "npm/node_modules/.bin/pi";

/// The switches that keep pi off the network (besides the gateway).
const OFFLINE: &[(&str, &str)] = &[
    ("PI_OFFLINE", "1"),
    ("PI_SKIP_VERSION_CHECK", "1"),
    ("PI_TELEMETRY", "0"),
];

/// The task, as the user types it.
const TASK: &str = "create hello.txt containing hi";

/// The model id of pi's own providers (Chat and Responses); the route `*` catches it.
const MODEL: &str = "pi-agent";

/// A model of pi's built-in `anthropic` provider, used when only its `baseUrl` is moved.
const ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

/// The ways pi can speak to the gateway.
#[derive(Clone, Copy, Debug)]
enum Speaks {
    Chat,
    Messages,
    Responses,
}

impl Speaks {
    /// The path pi posts each turn to.
    fn path(self) -> &'static str {
        match self {
            Speaks::Chat => "/v1/chat/completions",
            Speaks::Messages => "/v1/messages",
            Speaks::Responses => "/v1/responses",
        }
    }

    /// `models.json` pointing pi at `url` (the gateway, no `/v1`), and the `--model` to run.
    fn models_json(self, url: &str) -> (Value, String) {
        let provider = |api: &str| {
            json!({"providers": {"switchyard": {
                "baseUrl": format!("{url}/v1"),
                "api": api,
                "apiKey": CLIENT_KEY,
                "models": [{"id": MODEL, "contextWindow": 200_000, "maxTokens": 8192}],
            }}})
        };
        match self {
            Speaks::Chat => (
                provider("openai-completions"),
                format!("switchyard/{MODEL}"),
            ),
            Speaks::Responses => (provider("openai-responses"), format!("switchyard/{MODEL}")),
            Speaks::Messages => (
                json!({"providers": {"anthropic": {"baseUrl": url}}}),
                format!("anthropic/{ANTHROPIC_MODEL}"),
            ),
        }
    }
}

/// The route to an upstream of `dialect`: every model pi asks for, to one model there.
fn route(dialect: UpstreamDialect) -> (Route, &'static str) {
    let (provider, model) = match dialect {
        UpstreamDialect::ChatCompletions => ("openai", "gpt-4o"),
        UpstreamDialect::Messages => ("anthropic", "claude-sonnet-4-5-20250929"),
        UpstreamDialect::Responses => ("openai-native", "gpt-5.4-mini"),
        UpstreamDialect::Gemini => ("gemini", "gemini-2.5-pro"),
    };
    (Route::new("*", provider, model), model)
}

/// The model: `write` the file when the tool is offered and nothing has been done yet, then
/// "Done."; anything else a short text.
fn model(r: &AgentTurnRequest) -> AgentTurn {
    if r.offers_tool("write") && r.tool_results == 0 {
        AgentTurn::tool_call("write", json!({"path": "hello.txt", "content": "hi"}))
    } else {
        AgentTurn::text("Done.")
    }
}

/// Runs `pi -p` for the task against `scene`, speaking `speaks`, on node 22.
fn run_pi(scene: &AgentScene, bin: &Path, node: &Path, speaks: Speaks) -> ClientRun {
    let agent_dir = scene.home.join(".pi/agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    let (models, model_arg) = speaks.models_json(&scene.client_url());
    std::fs::write(agent_dir.join("models.json"), format!("{models:#}")).unwrap();
    let settings = json!({"enableInstallTelemetry": false});
    std::fs::write(agent_dir.join("settings.json"), settings.to_string()).unwrap();
    let mut cmd = scene.command_on_node(bin, node);
    cmd.envs(OFFLINE.iter().copied())
        .env("PI_CODING_AGENT_DIR", &agent_dir)
        .env("ANTHROPIC_API_KEY", CLIENT_KEY)
        .args(["-p", TASK, "--model", &model_arg]);
    scene.run(cmd, Duration::from_secs(120))
}

/// Runs the task with pi speaking `speaks` to an upstream of `dialect`, and checks the file,
/// the exit, and what went through: every turn one request to `speaks`'s path answered 200,
/// one upstream request each (nothing retried), and the tool's result reached the model.
fn run_case(test: &str, speaks: Speaks, dialect: UpstreamDialect) -> Option<AgentScene> {
    let bin = agents::client_bin(PI)?;
    let node = agents::node22_dir()?;
    if !agents::isolated(test) {
        return None;
    }
    let scene = AgentScene::start(dialect, &[route(dialect).0], model);
    let run = run_pi(&scene, &bin, &node, speaks);
    scene.assert_hello(&run);
    let report = || scene.report(&run);
    assert_eq!(run.status.map(|s| s.success()), Some(true), "{}", report());
    assert!(run.stdout.contains("Done."), "the last turn: {}", report());
    let posts: Vec<_> = (scene.tap.requests().into_iter())
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(posts.len(), 2, "{}", report());
    assert!(
        (posts.iter()).all(|r| r.path.split('?').next() == Some(speaks.path())),
        "{}",
        report()
    );
    assert!(
        scene.tap.statuses().iter().all(|&s| s == 200),
        "{}",
        report()
    );
    assert_eq!(scene.upstream.request_count(), 2, "{}", report());
    let last = scene.upstream.exchanges().pop().unwrap();
    assert!(
        String::from_utf8_lossy(&last.request.body).contains("hello.txt"),
        "the tool's result did not reach the model: {}",
        report()
    );
    Some(scene)
}

/// A custom OpenAI-compatible provider from `models.json` is called at all
/// (earendil-works/pi#3095, #3168: such providers showed in `--list-models` and then hung on
/// every request, 0.66.1); the run's time limit catches a hang.
#[test]
fn pi_chat_creates_hello_txt_forwarded_to_a_chat_upstream() {
    let test = "pi_chat_creates_hello_txt_forwarded_to_a_chat_upstream";
    let dialect = UpstreamDialect::ChatCompletions;
    let Some(scene) = run_case(test, Speaks::Chat, dialect) else {
        return;
    };
    scene.assert_forwarded(Speaks::Chat.path(), route(dialect).1);
}

#[test]
fn pi_chat_creates_hello_txt_translated_to_an_anthropic_upstream() {
    let test = "pi_chat_creates_hello_txt_translated_to_an_anthropic_upstream";
    run_case(test, Speaks::Chat, UpstreamDialect::Messages);
}

/// Its built-in Anthropic provider moved to the gateway by `baseUrl` alone, the way pi's docs
/// route a built-in provider through a proxy (earendil-works/pi#1447: it ignores
/// `ANTHROPIC_BASE_URL`, so the environment variable Claude Code users set does nothing).
#[test]
fn pi_messages_creates_hello_txt_forwarded_to_an_anthropic_upstream() {
    let test = "pi_messages_creates_hello_txt_forwarded_to_an_anthropic_upstream";
    let dialect = UpstreamDialect::Messages;
    let Some(scene) = run_case(test, Speaks::Messages, dialect) else {
        return;
    };
    scene.assert_forwarded(Speaks::Messages.path(), route(dialect).1);
    let first = &scene.tap.requests()[0];
    assert_eq!(first.json()["model"], ANTHROPIC_MODEL);
    assert_eq!(first.header_values("x-api-key"), [CLIENT_KEY]);
}

#[test]
fn pi_messages_creates_hello_txt_translated_to_a_chat_upstream() {
    let test = "pi_messages_creates_hello_txt_translated_to_a_chat_upstream";
    run_case(test, Speaks::Messages, UpstreamDialect::ChatCompletions);
}

#[test]
fn pi_responses_creates_hello_txt_translated_to_an_anthropic_upstream() {
    let test = "pi_responses_creates_hello_txt_translated_to_an_anthropic_upstream";
    run_case(test, Speaks::Responses, UpstreamDialect::Messages);
}
