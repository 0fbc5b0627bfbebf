//! Codex CLI (`@openai/codex`, pinned in scripts/agent-clients.sh) finishes a one-tool task
//! through `switchyard serve` (SPEC R14.1, R14.2): it speaks OpenAI Responses to the gateway
//! (a custom model provider with `wire_api = "responses"` in its `config.toml`), which routes
//! its model to an Anthropic Messages upstream (the testkit's agent upstream), in a network
//! namespace with only loopback.
//!
//! What Codex offers depends on the model's name: for a name it does not know
//! (`claude-sonnet-4-5`) its fallback tools, the function `exec_command` among them and the
//! `namespace` group `multi_agent_v1`; for `gpt-5.5` also the custom (freeform)
//! `apply_patch`, whose input is a raw patch; for `gpt-6.1-sol` a "Responses Lite" request
//! whose tools are all in an `additional_tools` item, the freeform JavaScript `exec` of the
//! group `functions` first. The gateway offers Anthropic custom tools as functions taking one
//! `input` string and group members as `NAMESPACE__NAME`, and sends their calls back in
//! Codex's form (`custom_tool_call`, `namespace`). Each is run.
//! Codex acts on a call only at its `response.output_item.done` and needs
//! `response.completed`; a stream without it is retried (five times, history re-sent), so
//! each test also checks Codex sent exactly two requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::{AgentTurn, AgentTurnRequest, UpstreamDialect};

mod common;

use common::agents::{self, AgentScene, CLIENT_KEY, Route};

/// The installed launcher (a node script starting the native binary of the optional
/// per-platform package).
const CODEX: &str = "npm/node_modules/.bin/codex";

/// The environment variable Codex reads its provider key from (`env_key`); the gateway runs
/// with `--no-auth`, so any value does.
const KEY_ENV: &str = "SWITCHYARD_CODEX_KEY";

/// The patch `apply_patch` is called with.
const PATCH: &str = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n";

/// Writes `$CODEX_HOME/config.toml`: the gateway as a custom Responses provider for `model`,
/// and every switch that keeps Codex 0.171.0 off the network besides it: no update check,
/// no curated-plugin sync (without `features.plugins = false` it runs `git ls-remote` on
/// github.com and then asks api.github.com), no analytics, no feedback uploads, no
/// OpenTelemetry export. A custom provider makes Codex fetch no model list.
/// With `websockets`, the provider says it takes Responses over a WebSocket
/// (`supports_websockets`), and Codex speaks it to the gateway instead of HTTP.
fn write_config(codex_home: &Path, base_url: &str, model: &str, websockets: bool) {
    std::fs::create_dir_all(codex_home).unwrap();
    let config = format!(
        r#"model = "{model}"
model_provider = "switchyard"
check_for_update_on_startup = false

[model_providers.switchyard]
name = "Switchyard"
base_url = "{base_url}/v1"
env_key = "{KEY_ENV}"
wire_api = "responses"
supports_websockets = {websockets}

[features]
plugins = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
"#
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
}

/// Runs `codex exec` for the task with `model` against `scene`: non-interactive, outside a
/// git repository, without approvals or its own sandbox (the test's namespace is the
/// sandbox), refusing unknown config keys.
fn run_codex(scene: &AgentScene, codex: &Path, model: &str) -> agents::ClientRun {
    run_codex_over(scene, codex, model, false)
}

/// [`run_codex`] with the WebSocket transport on or off.
fn run_codex_over(
    scene: &AgentScene,
    codex: &Path,
    model: &str,
    websockets: bool,
) -> agents::ClientRun {
    let codex_home = scene.home.join(".codex");
    write_config(&codex_home, &scene.client_url(), model, websockets);
    let mut cmd = scene.command(codex);
    cmd.env("CODEX_HOME", &codex_home)
        .env(KEY_ENV, CLIENT_KEY)
        .args(["exec", "--skip-git-repo-check", "--strict-config"])
        .arg("--dangerously-bypass-approvals-and-sandbox")
        .args(["--color", "never"])
        .arg("create hello.txt containing hi");
    scene.run(cmd, Duration::from_secs(120))
}

/// Checks the run: `hello.txt` is `hi`, Codex exited 0 and sent exactly two Responses
/// requests (the task, then the tool's result), so nothing was retried.
fn assert_finished(scene: &AgentScene, run: &agents::ClientRun) {
    scene.assert_hello(run);
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "{}",
        scene.report(run)
    );
    let posts: Vec<String> = scene
        .tap
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        posts,
        ["POST /v1/responses", "POST /v1/responses"],
        "{}",
        scene.report(run)
    );
    println!("x-switchyard-dropped seen: {:?}", scene.tap.dropped());
}

/// Every name the gateway's `x-switchyard-dropped` headers gave Codex.
fn dropped(scene: &AgentScene) -> Vec<String> {
    scene
        .tap
        .dropped()
        .iter()
        .flat_map(|h| h.split(','))
        .map(|d| d.trim().to_owned())
        .collect()
}

/// The upstream's request bodies, in order.
fn upstream_bodies(scene: &AgentScene) -> Vec<Value> {
    scene
        .upstream
        .exchanges()
        .iter()
        .map(|e| serde_json::from_slice(&e.request.body).unwrap())
        .collect()
}

/// The tool called `name` among an Anthropic request's `tools`.
fn tool<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("no tool {name} in {}", body["tools"]))
}

/// The `tool_result` blocks' texts of an Anthropic request's last message.
fn last_tool_results(body: &Value) -> Vec<String> {
    let last = body["messages"].as_array().and_then(|m| m.last()).unwrap();
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| match &b["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// With a model name Codex does not know, it offers its fallback tools: the model runs
/// `printf hi > hello.txt` with the function tool `exec_command`, then says "Done.".
#[test]
fn codex_runs_a_shell_command_through_an_anthropic_upstream() {
    let Some(codex) = agents::client_bin(CODEX) else {
        return;
    };
    if !agents::isolated("codex_runs_a_shell_command_through_an_anthropic_upstream") {
        return;
    }
    let routes = [Route::new("*", "anthropic", "claude-sonnet-4-5")];
    let scene = AgentScene::start(
        UpstreamDialect::Messages,
        &routes,
        |r: &AgentTurnRequest| {
            if r.offers_tool("exec_command") && r.tool_results == 0 {
                AgentTurn::tool_call("exec_command", json!({"cmd": "printf hi > hello.txt"}))
            } else {
                AgentTurn::text("Done.")
            }
        },
    );
    let run = run_codex(&scene, &codex, "claude-sonnet-4-5");
    assert_finished(&scene, &run);
    let bodies = upstream_bodies(&scene);
    assert_eq!(bodies.len(), 2, "{}", scene.report(&run));
    assert_eq!(
        tool(&bodies[0], "exec_command")["input_schema"]["properties"]["cmd"]["type"],
        "string"
    );
    let results = last_tool_results(&bodies[1]);
    assert!(
        results.iter().any(|r| r.contains("exited with code 0")),
        "the command's result reached the model: {results:?}"
    );
    // Its sub-agent tools (a `namespace` group) are offered by qualified names; its hosted
    // web search cannot be and is named.
    tool(&bodies[0], "multi_agent_v1__spawn_agent");
    let dropped = dropped(&scene);
    assert!(
        dropped.iter().any(|d| d == "tools[type=web_search]"),
        "{dropped:?}"
    );
    assert!(
        !dropped.iter().any(|d| d.contains("namespace")),
        "{dropped:?}"
    );
}

/// Issue 43, cases W01–W04: Codex configured for Responses over a WebSocket
/// (`supports_websockets = true`) runs the same task over it. The tap shows it from the
/// gateway's side: the upgrade answered `101`, no `POST /v1/responses`, so no fallback to HTTP.
/// The gateway's debug log showed what Codex sends: a warm-up (`generate: false`, one item),
/// then the task continuing it by id with three items of its own, then the tool's output alone
/// continuing that, six items in all; the upstream's second request holding the tool's result
/// shows the socket put them back together.
/// Gateways without the socket made Codex retry five times and fall back
/// (github.com/qxcnm/Codex-Manager/issues/91, github.com/openai/codex/issues/19821).
#[test]
fn codex_runs_a_shell_command_over_the_responses_websocket() {
    let Some(codex) = agents::client_bin(CODEX) else {
        return;
    };
    if !agents::isolated("codex_runs_a_shell_command_over_the_responses_websocket") {
        return;
    }
    let routes = [Route::new("*", "anthropic", "claude-sonnet-4-5")];
    let scene = AgentScene::start(
        UpstreamDialect::Messages,
        &routes,
        |r: &AgentTurnRequest| {
            if r.offers_tool("exec_command") && r.tool_results == 0 {
                AgentTurn::tool_call("exec_command", json!({"cmd": "printf hi > hello.txt"}))
            } else {
                AgentTurn::text("Done.")
            }
        },
    );
    let run = run_codex_over(&scene, &codex, "claude-sonnet-4-5", true);
    scene.assert_hello(&run);
    let report = scene.report(&run);
    assert_eq!(run.status.map(|s| s.success()), Some(true), "{report}");
    let requests = scene.tap.requests();
    let upgrades: Vec<usize> = (0..requests.len())
        .filter(|&i| requests[i].method == "GET" && requests[i].path == "/v1/responses")
        .filter(|&i| requests[i].header_values("upgrade").contains(&"websocket"))
        .collect();
    assert!(
        !upgrades.is_empty(),
        "Codex asked for no WebSocket: {report}"
    );
    // The socket's bytes as the tap saw them: the turns' events, the names of what the
    // Anthropic route cannot carry in an event of their own, which Codex skips.
    let socket: String = (upgrades.iter())
        .filter_map(|&i| scene.tap.answer_to(i))
        .collect();
    assert!(socket.contains("response.completed"), "{report}");
    assert!(socket.contains("switchyard.dropped"), "{report}");
    let posts = (requests.iter()).filter(|r| r.method == "POST").count();
    assert_eq!(posts, 0, "Codex fell back to HTTP: {report}");
    let statuses = scene.tap.statuses();
    assert!(statuses.contains(&101), "{statuses:?} {report}");
    assert!(statuses.iter().all(|s| *s < 400), "{statuses:?} {report}");
    let bodies = upstream_bodies(&scene);
    assert_eq!(bodies.len(), 2, "{report}");
    let results = last_tool_results(&bodies[1]);
    assert!(
        results.iter().any(|r| r.contains("exited with code 0")),
        "the command's result reached the model: {results:?}"
    );
    println!("{}", scene.figures());
}

/// A call of a `namespace` member (Codex's `multi_agent_v1.close_agent`, offered as
/// `multi_agent_v1__close_agent`) reaches Codex in the form it runs: the tool answers for
/// itself (an unknown agent id) instead of "unsupported call".
#[test]
fn codex_runs_a_namespaced_tool_through_an_anthropic_upstream() {
    let Some(codex) = agents::client_bin(CODEX) else {
        return;
    };
    if !agents::isolated("codex_runs_a_namespaced_tool_through_an_anthropic_upstream") {
        return;
    }
    let routes = [Route::new("*", "anthropic", "claude-sonnet-4-5")];
    let scene = AgentScene::start(
        UpstreamDialect::Messages,
        &routes,
        |r: &AgentTurnRequest| {
            if r.offers_tool("multi_agent_v1__close_agent") && r.tool_results == 0 {
                AgentTurn::tool_call("multi_agent_v1__close_agent", json!({"target": "agent-x"}))
            } else {
                AgentTurn::text("Done.")
            }
        },
    );
    let run = run_codex(&scene, &codex, "claude-sonnet-4-5");
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "{}",
        scene.report(&run)
    );
    let bodies = upstream_bodies(&scene);
    assert_eq!(bodies.len(), 2, "{}", scene.report(&run));
    let results = last_tool_results(&bodies[1]);
    println!("{}close_agent answered: {results:?}", scene.figures());
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        !results[0].contains("unsupported call") && results[0].contains("agent-x"),
        "close_agent ran: {results:?}"
    );
}

/// With one of Codex's own model names it offers the freeform `apply_patch`: the model, an
/// Anthropic one, sees a function taking the patch as its one `input` string (the grammar in
/// the description), calls it, and Codex applies the patch it gets back as a
/// `custom_tool_call`; its `custom_tool_call_output` reaches the model as the tool result.
/// (Proxies that drop the custom tool, or send the call back as a `function_call`, break it:
/// github.com/decolua/9router/issues/1371, github.com/router-for-me/CLIProxyAPI/issues/4078,
/// github.com/barbacane-dev/barbacane/issues/134.)
#[test]
fn codex_applies_a_patch_through_an_anthropic_upstream() {
    let Some(codex) = agents::client_bin(CODEX) else {
        return;
    };
    if !agents::isolated("codex_applies_a_patch_through_an_anthropic_upstream") {
        return;
    }
    let routes = [Route::new("*", "anthropic", "claude-sonnet-4-5")];
    let scene = AgentScene::start(
        UpstreamDialect::Messages,
        &routes,
        |r: &AgentTurnRequest| {
            if r.offers_tool("apply_patch") && r.tool_results == 0 {
                AgentTurn::tool_call("apply_patch", json!({ "input": PATCH }))
            } else {
                AgentTurn::text("Done.")
            }
        },
    );
    let run = run_codex(&scene, &codex, "gpt-5.5");
    assert_finished(&scene, &run);
    let bodies = upstream_bodies(&scene);
    assert_eq!(bodies.len(), 2, "{}", scene.report(&run));
    let patch = tool(&bodies[0], "apply_patch");
    assert_eq!(patch["input_schema"]["required"], json!(["input"]));
    let description = patch["description"].as_str().unwrap();
    assert!(
        description.contains("*** Begin Patch"),
        "the grammar is in the description: {description}"
    );
    let results = last_tool_results(&bodies[1]);
    assert!(
        results.iter().any(|r| r.contains("A hello.txt")),
        "the patch's result reached the model: {results:?}"
    );
    let dropped = dropped(&scene);
    assert!(
        dropped.iter().any(|d| d == "tools[type=custom].format"),
        "the unenforced grammar is named: {dropped:?}"
    );
    assert!(
        !dropped.iter().any(|d| d == "tools[type=custom]"),
        "the tool is carried: {dropped:?}"
    );
}

/// With its newest models (`gpt-6.1-sol`) Codex sends "Responses Lite" requests
/// (`x-openai-internal-codex-responses-lite: true`): no top-level `tools`, its tools in an
/// `additional_tools` input item as `namespace` groups, the main one `functions` holding the
/// freeform `exec`, which runs JavaScript that calls the other tools. The model sees
/// `functions__exec` taking the script as its `input`, and Codex runs the script it gets
/// back as a `custom_tool_call` of `exec` in `functions`: the script's nested
/// `exec_command` writes the file.
#[test]
fn codex_runs_a_script_in_code_mode_through_an_anthropic_upstream() {
    let Some(codex) = agents::client_bin(CODEX) else {
        return;
    };
    if !agents::isolated("codex_runs_a_script_in_code_mode_through_an_anthropic_upstream") {
        return;
    }
    let routes = [Route::new("*", "anthropic", "claude-sonnet-4-5")];
    let script = "await tools.exec_command({cmd: 'printf hi > hello.txt'});";
    let scene = AgentScene::start(
        UpstreamDialect::Messages,
        &routes,
        move |r: &AgentTurnRequest| {
            if r.offers_tool("functions__exec") && r.tool_results == 0 {
                AgentTurn::tool_call("functions__exec", json!({ "input": script }))
            } else {
                AgentTurn::text("Done.")
            }
        },
    );
    let run = run_codex(&scene, &codex, "gpt-6.1-sol");
    assert_finished(&scene, &run);
    let lite = scene.tap.requests()[0]
        .header_values("x-openai-internal-codex-responses-lite")
        .join(",");
    assert_eq!(lite, "true", "Codex sent a Responses Lite request");
    let bodies = upstream_bodies(&scene);
    assert_eq!(
        tool(&bodies[0], "functions__exec")["input_schema"]["required"],
        json!(["input"])
    );
    let results = last_tool_results(&bodies[1]);
    assert!(
        results.iter().any(|r| r.contains("Script completed")),
        "the script ran: {results:?}"
    );
}
