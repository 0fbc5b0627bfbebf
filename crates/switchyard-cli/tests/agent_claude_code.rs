//! Claude Code (`@anthropic-ai/claude-code`, pinned in scripts/agent-clients.sh) finishes a
//! one-tool task through `switchyard serve` (SPEC R14.1, R14.2): it speaks Anthropic Messages
//! to the gateway, which routes every model it asks for to an OpenAI Chat Completions upstream
//! (the testkit's agent upstream), in a network namespace with only loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use switchyard_testkit::{AgentTurn, AgentTurnRequest, UpstreamDialect, skip_or_fail};

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

/// The session title the model gives when Claude Code asks for one.
const TITLE: &str = "Create hello file";

/// The model: `Write` the file when the tool is offered and nothing has been done yet (said
/// first when `preamble`: a text block, then the `tool_use` block), then say "Done."; a
/// title request gets the JSON title it asks for; any other request a short text.
fn script(
    hello: String,
    preamble: bool,
) -> impl Fn(&AgentTurnRequest) -> AgentTurn + Send + Sync + 'static {
    move |r: &AgentTurnRequest| {
        if r.offers_tool("Write") && r.tool_results == 0 {
            let arguments = json!({"file_path": hello, "content": "hi"});
            if preamble {
                AgentTurn::TextAndToolCall {
                    text: "I'll create hello.txt.".to_owned(),
                    name: "Write".to_owned(),
                    arguments,
                }
            } else {
                AgentTurn::tool_call("Write", arguments)
            }
        } else if r.offers_tool("Write") {
            AgentTurn::text("Done.")
        } else if r
            .raw()
            .contains("Return JSON with a single \\\"title\\\" field")
        {
            AgentTurn::text(format!(r#"{{"title": "{TITLE}"}}"#))
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
        Traffic::EssentialOnly,
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
        Traffic::EssentialOnly,
    );
}

/// Its own dialect (SPEC R14.2): an Anthropic upstream gets Claude Code's bodies as it sent
/// them (but for the route's model and what the route fits) and Claude Code gets the
/// upstream's events as they came.
#[test]
fn claude_code_creates_hello_txt_through_an_anthropic_upstream_forwarded() {
    run_claude(
        "claude_code_creates_hello_txt_through_an_anthropic_upstream_forwarded",
        Some("claude-sonnet-4-5"),
        UpstreamDialect::Messages,
        Traffic::EssentialOnly,
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
        Traffic::EssentialOnly,
    );
}

/// As people run it: nonessential traffic on (telemetry, error reports and the updater still
/// off), so Claude Code also asks the gateway for a session title (a `tools: []` request with
/// `thinking: disabled` and a JSON-schema `output_config.format`). Only inside the network
/// namespace: elsewhere its nonessential requests would reach Anthropic's hosts.
#[test]
fn claude_code_with_nonessential_traffic_titles_the_session_through_the_gateway() {
    let name = "claude_code_with_nonessential_traffic_titles_the_session_through_the_gateway";
    if agents::client_bin(CLAUDE).is_none() || !agents::isolated(name) {
        return;
    }
    if std::env::var_os(agents::IN_NETNS_ENV).is_none() {
        skip_or_fail(
            "nonessential traffic is let on only inside a network namespace (as root with unshare)",
        );
        return;
    }
    run_claude(name, None, UpstreamDialect::ChatCompletions, Traffic::All);
}

/// Whether Claude Code may make its nonessential requests (titles, release notes, …).
#[derive(Clone, Copy, PartialEq)]
enum Traffic {
    EssentialOnly,
    All,
}

/// Where scripts/agent-clients.sh installs `claude`, under `.agent-clients/`.
const CLAUDE: &str = "npm/node_modules/.bin/claude";

/// The routes for an upstream of `dialect`: every model Claude Code asks for (`claude-*` and
/// anything else) to one model of that dialect.
fn routes(dialect: UpstreamDialect) -> Vec<Route> {
    let (provider, model) = match dialect {
        UpstreamDialect::ChatCompletions => ("openai", "gpt-4o"),
        UpstreamDialect::Responses => ("openai-native", "gpt-5.4-mini"),
        // Its own dialect: forwarded, not translated (SPEC R14.2).
        UpstreamDialect::Messages => ("anthropic", "claude-sonnet-4-5-20250929"),
        UpstreamDialect::Gemini => ("gemini", "gemini-2.5-pro"),
    };
    vec![
        Route::new("claude-*", provider, model),
        Route::new("*", provider, model),
    ]
}

/// Runs `claude -p` (test `name`, for the namespace re-run) with `model` (`None`: its
/// default) against an upstream of `dialect`, and checks the file and the exchanges.
fn run_claude(name: &str, model: Option<&str>, dialect: UpstreamDialect, traffic: Traffic) {
    let Some(claude) = agents::client_bin(CLAUDE) else {
        return;
    };
    if !agents::isolated(name) {
        return;
    }
    let scene = AgentScene::start_in(dialect, &routes(dialect), "", |work| {
        // Claude Code's default model (the newer tests) says a sentence before the call.
        script(
            work.join("hello.txt").display().to_string(),
            model.is_none(),
        )
    });
    let mut cmd = scene.command(&claude);
    cmd.env("ANTHROPIC_BASE_URL", scene.client_url())
        .env("ANTHROPIC_API_KEY", CLIENT_KEY)
        .env("CLAUDE_CONFIG_DIR", scene.home.join(".claude"))
        .envs(OFFLINE.iter().copied().filter(|(name, _)| {
            traffic == Traffic::EssentialOnly || *name != "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"
        }))
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
    check_exchanges(&scene, dialect);
    if traffic == Traffic::All {
        check_title(&scene);
    }
}

/// The title request went through and Claude Code kept the title it got (in its session
/// files under `CLAUDE_CONFIG_DIR`). The pinned version always asks for one; a newer one may
/// not (2.1.337 did not in a `-p` run), and then every request it made is still answered.
fn check_title(scene: &AgentScene) {
    let asked = (scene.upstream.exchanges().iter()).any(|e| {
        e.turn
            .as_ref()
            .and_then(AgentTurn::said)
            .is_some_and(|t| t.contains(TITLE))
    });
    if !asked && !runs_the_pinned_version() {
        let statuses = scene.tap.statuses();
        assert!(
            statuses.iter().all(|s| *s < 400),
            "a request was refused: {}",
            scene.figures()
        );
        eprintln!("note: this Claude Code asked for no title");
        return;
    }
    assert!(asked, "no title request: {}", scene.figures());
    let kept = files_under(&scene.home.join(".claude"))
        .iter()
        .any(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains(TITLE)));
    assert!(
        kept,
        "the title is not in Claude Code's session files: {}",
        scene.figures()
    );
}

/// Whether the installed Claude Code is the version scripts/agent-clients.sh pins.
fn runs_the_pinned_version() -> bool {
    let script = agents::repo_root().join("scripts/agent-clients.sh");
    let script = std::fs::read_to_string(script).unwrap();
    let pin = (script.lines())
        .find_map(|l| l.strip_prefix("claude-code "))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap();
    let package =
        agents::clients_dir().join("npm/node_modules/@anthropic-ai/claude-code/package.json");
    let package: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(package).unwrap()).unwrap();
    package["version"] == pin
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// What the run must have looked like on both sides: every `/v1/messages` request streamed
/// and answered 200; upstream, the `Write` call once, then one request carrying its result
/// (the call not repeated: bifrost#5128 sent every tool call twice).
fn check_exchanges(scene: &AgentScene, dialect: UpstreamDialect) {
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
    if dialect == UpstreamDialect::Messages {
        check_forwarded(&messages, &exchanges, scene);
    }
    println!("x-switchyard-dropped seen: {:?}", scene.tap.dropped());
}

/// Each body Claude Code sent reached the Anthropic upstream with every field it had (SPEC
/// R14.2): the same top-level fields and the same conversation and tools, the model the
/// route's; nothing named dropped.
fn check_forwarded(
    sent: &[agents::TappedRequest],
    got: &[switchyard_testkit::AgentExchange],
    scene: &AgentScene,
) {
    let sent: Vec<_> = sent
        .iter()
        .filter(|r| r.path.starts_with("/v1/messages?") || r.path == "/v1/messages")
        .collect();
    assert_eq!(sent.len(), got.len(), "{}", scene.figures());
    for (client, upstream) in sent.iter().zip(got) {
        let (client, upstream) = (client.json(), upstream.request.json());
        let keys = |v: &serde_json::Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(keys(&client), keys(&upstream), "{}", scene.figures());
        assert_eq!(
            client["messages"],
            upstream["messages"],
            "{}",
            scene.figures()
        );
        assert_eq!(client["tools"], upstream["tools"], "{}", scene.figures());
        assert_eq!(upstream["model"], "claude-sonnet-4-5-20250929");
    }
    assert!(scene.tap.dropped().is_empty(), "{:?}", scene.tap.dropped());
}

/// How many tool definitions named `Write` a request body offers (0 or 1).
fn tools_named_write(body: &serde_json::Value) -> usize {
    (body["tools"].as_array().into_iter().flatten())
        .filter(|t| t["name"] == "Write" || t["function"]["name"] == "Write")
        .count()
}
