//! opencode (`opencode-ai`, pinned in scripts/agent-clients.sh) finishes a one-tool task through
//! `switchyard serve` (SPEC R14.1, R14.2) in each dialect it speaks, in a network namespace
//! with only loopback: a custom provider of `@ai-sdk/openai-compatible` speaks Chat
//! Completions, one of `@ai-sdk/anthropic` Anthropic Messages, one of `@ai-sdk/openai` OpenAI
//! Responses (the three provider packages are bundled in its binary: nothing is installed at
//! run time). Each goes to an upstream of its own dialect (forwarded, SPEC R14.2a) and of
//! another (translated).
//!
//! How it is pointed at the gateway, as users write it (`~/.config/opencode/opencode.json`):
//! a `provider` entry with `npm`, `options.baseURL` (the gateway's URL with `/v1`: opencode
//! appends `/chat/completions`, `/messages` or `/responses` to it) and `options.apiKey`, its
//! `models`, and `model: "PROVIDER/MODEL"`. Run as `opencode run MESSAGE`.
//!
//! Switches that keep it off the network: `OPENCODE_DISABLE_AUTOUPDATE`,
//! `OPENCODE_DISABLE_MODELS_FETCH` (else it fetches models.dev), `OPENCODE_DISABLE_DEFAULT_PLUGINS`
//! (else it installs its default plugins from npm), `OPENCODE_DISABLE_LSP_DOWNLOAD`,
//! `OPENCODE_DISABLE_SHARE`; `autoupdate: false` and `share: "disabled"` in the config. It has
//! no telemetry switch of its own; `DO_NOT_TRACK` is set by the harness.
//!
//! What opencode 1.18.33 sends, as seen here: a title request first (the same model, no tools,
//! `agent=title` in its log), then one streamed request per turn offering its tools (`bash`,
//! `read`, `edit`, `write`, …); it writes files with `write {filePath, content}` (absolute
//! path) and ends the task on a turn without tool calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::{AgentTurn, AgentTurnRequest, UpstreamDialect};

mod common;

use common::agents::{self, AgentScene, CLIENT_KEY, ClientRun, Route};

/// Where scripts/agent-clients.sh installs `opencode`, under `.agent-clients/`.
const OPENCODE: &str = "npm/node_modules/.bin/opencode";

/// The switches that keep opencode off the network (besides the gateway).
const OFFLINE: &[(&str, &str)] = &[
    ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
    ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
    ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1"),
    ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
    ("OPENCODE_DISABLE_SHARE", "1"),
];

/// The task, as the user types it.
const TASK: &str = "create hello.txt containing hi";

/// The three ways opencode can speak to the gateway: its provider package and the path it
/// posts to.
#[derive(Clone, Copy, Debug)]
enum Speaks {
    Chat,
    Messages,
    Responses,
}

impl Speaks {
    /// The AI SDK provider package of the custom provider.
    fn package(self) -> &'static str {
        match self {
            Speaks::Chat => "@ai-sdk/openai-compatible",
            Speaks::Messages => "@ai-sdk/anthropic",
            Speaks::Responses => "@ai-sdk/openai",
        }
    }

    /// The path opencode posts each turn to.
    fn path(self) -> &'static str {
        match self {
            Speaks::Chat => "/v1/chat/completions",
            Speaks::Messages => "/v1/messages",
            Speaks::Responses => "/v1/responses",
        }
    }
}

/// The route to an upstream of `dialect`: every model opencode asks for, to one model there.
fn route(dialect: UpstreamDialect) -> (Route, &'static str) {
    let (provider, model) = match dialect {
        UpstreamDialect::ChatCompletions => ("openai", "gpt-4o"),
        UpstreamDialect::Messages => ("anthropic", "claude-sonnet-4-5"),
        UpstreamDialect::Responses => ("openai-native", "gpt-5.4-mini"),
        UpstreamDialect::Gemini => ("gemini", "gemini-2.5-pro"),
    };
    (Route::new("*", provider, model), model)
}

/// The patch opencode's `apply_patch` is called with (offered instead of `write` and `edit`
/// to models named like OpenAI's GPT-5).
const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch";

/// The model: `write` the file (or `apply_patch` it) when the tool is offered and nothing has
/// been done yet, then "Done."; a request without tools (the session title) gets a short
/// title.
fn model(hello: String) -> impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static {
    move |r: &AgentTurnRequest| {
        let tools = r.offers_tool("write") || r.offers_tool("apply_patch");
        if r.offers_tool("write") && r.tool_results == 0 {
            AgentTurn::tool_call("write", json!({"filePath": hello, "content": "hi"}))
        } else if r.offers_tool("apply_patch") && r.tool_results == 0 {
            AgentTurn::tool_call("apply_patch", json!({ "patchText": PATCH }))
        } else if tools {
            AgentTurn::text("Done.")
        } else {
            AgentTurn::text("Hello file")
        }
    }
}

/// Writes opencode's global config: the gateway as a provider `switchyard` of `speaks`'s
/// package, with `model_id`, as the default model; its own updates and sharing off, and
/// every tool allowed (a run cannot answer a permission question).
fn write_config(scene: &AgentScene, speaks: Speaks, model_id: &str) {
    let dir = scene.home.join(".config/opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let config = json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow"},
        "provider": {"switchyard": {
            "npm": speaks.package(),
            "name": "Switchyard",
            "options": {"baseURL": format!("{}/v1", scene.client_url()), "apiKey": CLIENT_KEY},
            "models": {model_id: {"name": model_id}},
        }},
        "model": format!("switchyard/{model_id}"),
    });
    std::fs::write(dir.join("opencode.json"), format!("{config:#}")).unwrap();
}

/// Runs `opencode run` for the task against `scene` with opencode speaking `speaks` and
/// asking for `model_id`.
fn run_opencode(scene: &AgentScene, bin: &Path, speaks: Speaks, model_id: &str) -> ClientRun {
    write_config(scene, speaks, model_id);
    let mut cmd = scene.command(bin);
    cmd.envs(OFFLINE.iter().copied())
        .args(["run", "--print-logs", TASK]);
    scene.run(cmd, Duration::from_secs(150))
}

/// Runs the task with opencode speaking `speaks` to an upstream of `dialect`, and checks the
/// file, the exit, and what went through: each of opencode's turns one request to `speaks`'s
/// path, answered 200, and one upstream request each (nothing retried).
fn run_case(
    test: &str,
    speaks: Speaks,
    dialect: UpstreamDialect,
    model_id: &str,
) -> Option<(AgentScene, ClientRun)> {
    let bin = agents::client_bin(OPENCODE)?;
    if !agents::isolated(test) {
        return None;
    }
    let (route, _) = route(dialect);
    let scene = AgentScene::start_in(dialect, &[route], "", |work| {
        model(work.join("hello.txt").display().to_string())
    });
    let run = run_opencode(&scene, &bin, speaks, model_id);
    scene.assert_hello(&run);
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "{}",
        scene.report(&run)
    );
    let posts: Vec<_> = (scene.tap.requests().into_iter())
        .filter(|r| r.method == "POST")
        .collect();
    assert!(posts.len() >= 2, "{}", scene.report(&run));
    for r in &posts {
        assert_eq!(r.path, speaks.path(), "{}", scene.report(&run));
        assert_eq!(r.json()["model"], model_id, "{}", scene.report(&run));
    }
    assert!(
        scene.tap.statuses().iter().all(|&s| s == 200),
        "{}",
        scene.report(&run)
    );
    assert_eq!(
        scene.upstream.request_count(),
        posts.len(),
        "{}",
        scene.report(&run)
    );
    Some((scene, run))
}

/// The `write` call's result reached the model: the last upstream request carries it.
fn assert_result_reached_upstream(scene: &AgentScene) {
    let last = scene.upstream.exchanges().pop().unwrap();
    let raw = String::from_utf8_lossy(&last.request.body).into_owned();
    assert!(
        raw.contains("hello.txt") && (raw.contains("write") || raw.contains("apply_patch")),
        "the tool's result did not reach the model: {}",
        scene.figures()
    );
}

#[test]
fn opencode_chat_creates_hello_txt_forwarded_to_a_chat_upstream() {
    let test = "opencode_chat_creates_hello_txt_forwarded_to_a_chat_upstream";
    let dialect = UpstreamDialect::ChatCompletions;
    let Some((scene, _)) = run_case(test, Speaks::Chat, dialect, "opencode-agent") else {
        return;
    };
    scene.assert_forwarded(Speaks::Chat.path(), route(dialect).1);
}

#[test]
fn opencode_chat_creates_hello_txt_translated_to_an_anthropic_upstream() {
    let test = "opencode_chat_creates_hello_txt_translated_to_an_anthropic_upstream";
    let dialect = UpstreamDialect::Messages;
    let Some((scene, _)) = run_case(test, Speaks::Chat, dialect, "opencode-agent") else {
        return;
    };
    assert_result_reached_upstream(&scene);
}

/// Its Anthropic provider with `baseURL` ending in `/v1`: opencode appends `/messages` only
/// (anomalyco/opencode#35005: the same `ANTHROPIC_BASE_URL` as Claude Code's, without `/v1`,
/// posts to `/messages` and gets a 404 from gateways), so the documented configuration keeps
/// `/v1`, and the request lands on `/v1/messages`. It sends the key as `x-api-key`, which the
/// gateway reads (anomalyco/opencode#21737: gateways that take only a Bearer key refuse it).
#[test]
fn opencode_messages_creates_hello_txt_forwarded_to_an_anthropic_upstream() {
    let test = "opencode_messages_creates_hello_txt_forwarded_to_an_anthropic_upstream";
    let dialect = UpstreamDialect::Messages;
    let Some((scene, _)) = run_case(test, Speaks::Messages, dialect, "claude-sonnet-4-5") else {
        return;
    };
    scene.assert_forwarded(Speaks::Messages.path(), route(dialect).1);
    let first = &scene.tap.requests()[0];
    assert_eq!(first.header_values("x-api-key"), [CLIENT_KEY]);
}

#[test]
fn opencode_messages_creates_hello_txt_translated_to_a_chat_upstream() {
    let test = "opencode_messages_creates_hello_txt_translated_to_a_chat_upstream";
    let dialect = UpstreamDialect::ChatCompletions;
    let Some((scene, _)) = run_case(test, Speaks::Messages, dialect, "claude-sonnet-4-5") else {
        return;
    };
    assert_result_reached_upstream(&scene);
}

#[test]
fn opencode_responses_creates_hello_txt_translated_to_an_anthropic_upstream() {
    let test = "opencode_responses_creates_hello_txt_translated_to_an_anthropic_upstream";
    let dialect = UpstreamDialect::Messages;
    let Some((scene, _)) = run_case(test, Speaks::Responses, dialect, "gpt-4.1") else {
        return;
    };
    assert_result_reached_upstream(&scene);
}

/// A model id containing `gpt-5` on its OpenAI-compatible provider: opencode adds reasoning
/// options for it (1.18.33: `reasoning_effort: "medium"`; earlier versions also a raw
/// `reasoningSummary`, which OpenAI-compatible gateways refused as "Unknown parameter" so that
/// every request failed: anomalyco/opencode#13546, BerriAI/litellm#21998,
/// databricks/unity-gateway#85) and offers `apply_patch` instead of `write`. Translated to an
/// Anthropic upstream, the task finishes, and what the gateway cannot carry is named in
/// `x-switchyard-dropped`, not refused.
#[test]
fn opencode_with_a_gpt_5_model_name_creates_hello_txt_translated() {
    let test = "opencode_with_a_gpt_5_model_name_creates_hello_txt_translated";
    let dialect = UpstreamDialect::Messages;
    let Some((scene, _)) = run_case(test, Speaks::Chat, dialect, "gpt-5.4-mini") else {
        return;
    };
    assert_result_reached_upstream(&scene);
    let sent: Vec<Value> = scene.tap.requests().iter().map(|r| r.json()).collect();
    let dropped = scene.tap.dropped().join(",");
    for field in ["reasoning_effort", "reasoningSummary"] {
        if sent.iter().any(|b| b.get(field).is_some()) {
            assert!(dropped.contains(field), "{field} not named: {dropped}");
        }
    }
    assert!(
        sent.iter().any(|b| b["reasoning_effort"] == "medium"),
        "opencode sent no reasoning_effort for a gpt-5 name: {}",
        scene.figures()
    );
}
