//! The official SDKs through `switchyard serve` (SPEC R14.1, R14.2, R14.5): Python `openai`
//! (Chat Completions and Responses) and `anthropic`, Node `openai` (Chat and Responses) and
//! `@anthropic-ai/sdk`, pinned in scripts/agent-clients.sh, each streamed and not, each in front
//! of the testkit's agent upstream **of another dialect** (Chat → Anthropic, Responses →
//! Anthropic and → Chat, Anthropic → Chat), in a network namespace with only loopback.
//!
//! Each run is `tests/agents/sdk/sdk_client.{py,mjs}`: a two-turn tool conversation (turn 1 the
//! model calls `write_file {path, content}`, the script writes the file and sends the result
//! back the SDK's own way, turn 2 is text), printed as one JSON summary. The test checks it
//! exactly against what the upstream was asked and answered: the text, the tool call (the
//! upstream's own call id, carried both ways), the stop reason and the usage in the client's
//! dialect (the upstream's deterministic counts, cached and reasoning tokens zero); streamed
//! turns must have gone through the SDK's own accumulating helper with the events it needs.
//! It also checks what the client sent (two POSTs to its dialect's path; the Anthropic SDKs'
//! `Authorization: Bearer` and newer `anthropic-version`, which the gateway must take), what
//! the gateway sent upstream (two requests, the second carrying the tool result for the same
//! call id, no blank text block — Anthropic refuses one with a 400), the `x-switchyard-dropped`
//! headers, and that no key is in the gateway's log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::{AgentExchange, AgentTurn, AgentTurnRequest, UpstreamDialect};

mod common;

use common::agents::{self, AgentScene, CLIENT_KEY, Route, UPSTREAM_KEY};

/// The model's last word, after the tool result.
const DONE: &str = "Done: hello.txt now contains hi.";

/// The model: call `write_file` for hello.txt while no tool result has come back, then say
/// [`DONE`].
fn model(r: &AgentTurnRequest) -> AgentTurn {
    if r.offers_tool("write_file") && r.tool_results == 0 {
        AgentTurn::tool_call("write_file", json!({"path": "hello.txt", "content": "hi"}))
    } else {
        AgentTurn::text(DONE)
    }
}

/// Which SDK family runs the script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lang {
    Python,
    Node,
}

/// The client's dialect: the script's `--api`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    Chat,
    Responses,
    Messages,
}

impl Api {
    fn arg(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Responses => "responses",
            Api::Messages => "messages",
        }
    }

    /// The path the SDK posts to.
    fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Responses => "/v1/responses",
            Api::Messages => "/v1/messages",
        }
    }

    /// The stop reasons of the tool turn and the text turn, as the SDK reports them.
    fn stops(self) -> [&'static str; 2] {
        match self {
            Api::Chat => ["tool_calls", "stop"],
            Api::Responses => ["completed", "completed"],
            Api::Messages => ["tool_use", "end_turn"],
        }
    }

    /// The usage the client must see for `input`/`output` upstream tokens (no cache, no
    /// reasoning upstream), in the script's names for this dialect.
    fn usage(self, input: u64, output: u64) -> Value {
        match self {
            Api::Chat => json!({"prompt_tokens": input, "completion_tokens": output,
                "cached_tokens": 0, "reasoning_tokens": 0}),
            Api::Responses => json!({"input_tokens": input, "output_tokens": output,
                "cached_tokens": 0, "reasoning_tokens": 0}),
            Api::Messages => json!({"input_tokens": input, "output_tokens": output,
                "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}),
        }
    }

    /// The stream events the SDK's helper must have yielded in the tool turn and in the text
    /// turn (a missing `response.output_text.done` broke the Python SDK's Responses stream
    /// through LlamaStack, ogx-ai/ogx#5309).
    fn events(self) -> [&'static [&'static str]; 2] {
        match self {
            Api::Chat => [
                &[
                    "tool_calls.function.arguments.delta",
                    "tool_calls.function.arguments.done",
                ],
                &["content.delta", "content.done"],
            ],
            Api::Responses => [
                &[
                    "response.created",
                    "response.in_progress",
                    "response.output_item.added",
                    "response.function_call_arguments.delta",
                    "response.function_call_arguments.done",
                    "response.output_item.done",
                    "response.completed",
                ],
                &[
                    "response.created",
                    "response.in_progress",
                    "response.output_item.added",
                    "response.content_part.added",
                    "response.output_text.delta",
                    "response.output_text.done",
                    "response.content_part.done",
                    "response.output_item.done",
                    "response.completed",
                ],
            ],
            Api::Messages => {
                const ALL: &[&str] = &[
                    "message_start",
                    "content_block_start",
                    "content_block_delta",
                    "content_block_stop",
                    "message_delta",
                    "message_stop",
                ];
                [ALL, ALL]
            }
        }
    }
}

/// The provider and model of the route to an upstream of `dialect`.
fn route_to(dialect: UpstreamDialect) -> Route {
    match dialect {
        UpstreamDialect::Messages => Route::new("*", "anthropic", "claude-sonnet-4-5"),
        _ => Route::new("*", "openai", "gpt-4o"),
    }
}

/// The prefix of the upstream's call ids in `dialect` (carried to the client unchanged).
fn call_id_prefix(dialect: UpstreamDialect) -> &'static str {
    match dialect {
        UpstreamDialect::Messages => "toolu_agent",
        _ => "call_agent",
    }
}

/// The program and script of `lang`, or `None` after a skip (a missing SDK install).
fn client(lang: Lang) -> Option<(PathBuf, PathBuf)> {
    let scripts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/sdk");
    match lang {
        Lang::Python => {
            let python = agents::client_bin("sdk-venv/bin/python")?;
            Some((python, scripts.join("sdk_client.py")))
        }
        Lang::Node => {
            agents::client_bin("npm/node_modules/openai/package.json")?;
            agents::client_bin("npm/node_modules/@anthropic-ai/sdk/package.json")?;
            if !switchyard_testkit::require_program("node", "apt-get install nodejs") {
                return None;
            }
            Some((PathBuf::from("node"), scripts.join("sdk_client.mjs")))
        }
    }
}

/// Both runs (streamed and not) of one SDK in front of an upstream of `upstream`'s dialect,
/// isolated when it can be.
fn run_both(test: &str, lang: Lang, api: Api, upstream: UpstreamDialect) {
    let Some((program, script)) = client(lang) else {
        return;
    };
    if !agents::isolated(test) {
        return;
    }
    for stream in [true, false] {
        run_one(&program, &script, lang, api, upstream, stream);
    }
}

/// One run: the scene, the script, and every check of the module docs.
fn run_one(
    program: &Path,
    script: &Path,
    lang: Lang,
    api: Api,
    upstream: UpstreamDialect,
    stream: bool,
) {
    let scene = AgentScene::start(upstream, &[route_to(upstream)], model);
    let base = match api {
        Api::Messages => scene.client_url(),
        _ => format!("{}/v1", scene.client_url()),
    };
    let mut cmd = scene.command(program);
    cmd.env("OPENAI_API_KEY", CLIENT_KEY)
        .env("ANTHROPIC_API_KEY", CLIENT_KEY)
        .env(
            "SWITCHYARD_SDK_NODE_MODULES",
            agents::clients_dir().join("npm/node_modules"),
        )
        .arg(script)
        .args(["--api", api.arg()])
        .arg(if stream { "--stream" } else { "--no-stream" })
        .args(["--base-url", &base, "--model", "sdk-test-model"])
        .arg("--workdir")
        .arg(&scene.work);
    let run = scene.run(cmd, Duration::from_secs(60));
    let what = format!("{lang:?} {api:?} → {upstream:?}, stream {stream}");
    println!("== {what}");
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "{what}: the script failed\n{}",
        scene.report(&run)
    );
    scene.assert_hello(&run);
    let summary: Value = serde_json::from_str(run.stdout.trim().lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{what}: no JSON summary ({e})\n{}", scene.report(&run)));
    let exchanges = scene.upstream.exchanges();
    let failures = [
        check_upstream(&exchanges, upstream),
        check_summary(&summary, &exchanges, api, upstream, stream),
        check_client_side(&scene, api, stream),
    ]
    .concat();
    assert!(
        failures.is_empty(),
        "{what}: {} check(s) failed:\n- {}\n--- summary ---\n{summary}\n{}",
        failures.len(),
        failures.join("\n- "),
        scene.report(&run)
    );
    let log = scene.gateway_log();
    assert!(
        !log.contains(UPSTREAM_KEY) && !log.contains(CLIENT_KEY),
        "{what}: a key is in the log:\n{log}"
    );
    println!("x-switchyard-dropped: {:?}", scene.tap.dropped());
}

/// What the gateway sent upstream: two answered requests, the first before any tool result,
/// the second with exactly one; no blank text block in either.
fn check_upstream(exchanges: &[AgentExchange], dialect: UpstreamDialect) -> Vec<String> {
    let mut failures = Vec::new();
    if exchanges.len() != 2 {
        failures.push(format!("{} upstream requests, not 2", exchanges.len()));
        return failures;
    }
    for (i, e) in exchanges.iter().enumerate() {
        if e.status != 200 {
            failures.push(format!("upstream request #{} answered {}", i + 1, e.status));
        }
        let parsed = AgentTurnRequest::parse(dialect, &e.request);
        match parsed {
            Ok(r) if r.tool_results != i => failures.push(format!(
                "upstream request #{} carries {} tool result(s), not {i}",
                i + 1,
                r.tool_results
            )),
            Ok(r) => blank_text_blocks(&r.body, "body", &mut failures),
            Err(e) => failures.push(format!("upstream request #{}: {e}", i + 1)),
        }
    }
    failures
}

/// Every `{"type": "text", "text": <blank>}` under `value` (Anthropic: "text content blocks
/// must be non-empty", experientiallabs/experiential#804).
fn blank_text_blocks(value: &Value, at: &str, failures: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let blank = map
                .get("text")
                .and_then(Value::as_str)
                .is_some_and(|t| t.trim().is_empty());
            if map.get("type").and_then(Value::as_str) == Some("text") && blank {
                failures.push(format!("a blank text block upstream at {at}: {value}"));
            }
            for (key, v) in map {
                blank_text_blocks(v, &format!("{at}.{key}"), failures);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                blank_text_blocks(v, &format!("{at}[{i}]"), failures);
            }
        }
        _ => {}
    }
}

/// The upstream's deterministic usage of `exchange`: (request bytes / 4, answer bytes / 4 + 1),
/// as the testkit's agent upstream counts it.
fn upstream_usage(exchange: &AgentExchange) -> (u64, u64) {
    let turn = exchange.turn.as_ref();
    let said = turn.and_then(AgentTurn::said).map_or(0, str::len);
    let args = turn
        .and_then(AgentTurn::call)
        .map_or(0, |(_, a)| a.to_string().len());
    (
        (exchange.request.body.len() / 4) as u64,
        ((said + args) / 4 + 1) as u64,
    )
}

/// The script's summary against what the upstream was asked and answered.
fn check_summary(
    summary: &Value,
    exchanges: &[AgentExchange],
    api: Api,
    upstream: UpstreamDialect,
    stream: bool,
) -> Vec<String> {
    let mut failures = Vec::new();
    let turns = summary["turns"].as_array().cloned().unwrap_or_default();
    if turns.len() != 2 || exchanges.len() != 2 {
        failures.push(format!("{} turns, not 2", turns.len()));
        return failures;
    }
    if summary["wrote"] != json!({"hello.txt": "hi"}) {
        failures.push(format!("the script wrote {}", summary["wrote"]));
    }
    let id = turns[0]["tool_calls"][0]["id"].as_str().unwrap_or_default();
    if !id.starts_with(call_id_prefix(upstream)) {
        failures.push(format!(
            "the call id `{id}` is not the upstream's ({}…)",
            call_id_prefix(upstream)
        ));
    }
    let second = String::from_utf8_lossy(&exchanges[1].request.body);
    if id.is_empty() || !second.contains(&format!("\"{id}\"")) {
        failures.push(format!(
            "the tool result upstream does not name the call `{id}`"
        ));
    }
    let calls = [
        json!([{"id": id, "name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}}]),
        json!([]),
    ];
    let texts = ["", DONE];
    let events = api.events();
    for (i, turn) in turns.iter().enumerate() {
        let (input, output) = upstream_usage(&exchanges[i]);
        let expected = json!({
            "text": texts[i],
            "tool_calls": calls[i],
            "stop": api.stops()[i],
            "usage": api.usage(input, output),
        });
        for field in ["text", "tool_calls", "stop", "usage"] {
            if turn[field] != expected[field] {
                failures.push(format!(
                    "turn {}: {field} is {}, not {}",
                    i + 1,
                    turn[field],
                    expected[field]
                ));
            }
        }
        let deltas = turn["deltas"].as_u64().unwrap_or(0);
        let seen: Vec<&str> = (turn["events"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        if stream {
            if deltas == 0 {
                failures.push(format!("turn {}: streamed, but no delta", i + 1));
            }
            let missing: Vec<&&str> = events[i].iter().filter(|e| !seen.contains(e)).collect();
            if !missing.is_empty() {
                failures.push(format!(
                    "turn {}: no {missing:?} event (saw {seen:?})",
                    i + 1
                ));
            }
        } else if deltas != 0 || !seen.is_empty() {
            failures.push(format!(
                "turn {}: not streamed, but {deltas} deltas, {seen:?}",
                i + 1
            ));
        }
    }
    failures
}

/// What the client sent through the tap: two POSTs to its dialect's path with `stream` as
/// asked; the key as `Authorization: Bearer` (the Anthropic SDKs too: no `x-api-key`), an
/// `anthropic-version` from the Anthropic SDKs; every answer a 200.
fn check_client_side(scene: &AgentScene, api: Api, stream: bool) -> Vec<String> {
    let mut failures = Vec::new();
    let requests = scene.tap.requests();
    if requests.len() != 2 {
        failures.push(format!(
            "the client sent {} requests, not 2",
            requests.len()
        ));
    }
    for (i, r) in requests.iter().enumerate() {
        let n = i + 1;
        if r.method != "POST" || r.path != api.path() {
            failures.push(format!("client request #{n} is {} {}", r.method, r.path));
        }
        if r.json()["stream"].as_bool().unwrap_or(false) != stream {
            failures.push(format!(
                "client request #{n}: stream is {}",
                r.json()["stream"]
            ));
        }
        if r.header_values("authorization") != [format!("Bearer {CLIENT_KEY}").as_str()] {
            failures.push(format!(
                "client request #{n}: authorization is not `Bearer <key>`"
            ));
        }
        if api == Api::Messages {
            if !r.header_values("x-api-key").is_empty() {
                failures.push(format!("client request #{n}: an x-api-key too"));
            }
            match r.header_values("anthropic-version").as_slice() {
                [version] => println!("client request #{n}: anthropic-version {version}"),
                other => failures.push(format!("client request #{n}: anthropic-version {other:?}")),
            }
        }
    }
    let statuses = scene.tap.statuses();
    if statuses.iter().any(|s| *s != 200) {
        failures.push(format!("gateway statuses {statuses:?}"));
    }
    failures
}

/// One `#[test]` per SDK, dialect and upstream: its name is the one [`agents::isolated`]
/// re-runs.
macro_rules! sdk_test {
    ($name:ident, $lang:expr, $api:expr, $upstream:expr) => {
        #[test]
        fn $name() {
            run_both(stringify!($name), $lang, $api, $upstream);
        }
    };
}

sdk_test!(
    python_openai_chat_through_an_anthropic_upstream,
    Lang::Python,
    Api::Chat,
    UpstreamDialect::Messages
);
sdk_test!(
    python_openai_responses_through_an_anthropic_upstream,
    Lang::Python,
    Api::Responses,
    UpstreamDialect::Messages
);
sdk_test!(
    python_openai_responses_through_a_chat_upstream,
    Lang::Python,
    Api::Responses,
    UpstreamDialect::ChatCompletions
);
sdk_test!(
    python_anthropic_through_a_chat_upstream,
    Lang::Python,
    Api::Messages,
    UpstreamDialect::ChatCompletions
);
sdk_test!(
    node_openai_chat_through_an_anthropic_upstream,
    Lang::Node,
    Api::Chat,
    UpstreamDialect::Messages
);
sdk_test!(
    node_openai_responses_through_an_anthropic_upstream,
    Lang::Node,
    Api::Responses,
    UpstreamDialect::Messages
);
sdk_test!(
    node_openai_responses_through_a_chat_upstream,
    Lang::Node,
    Api::Responses,
    UpstreamDialect::ChatCompletions
);
sdk_test!(
    node_anthropic_sdk_through_a_chat_upstream,
    Lang::Node,
    Api::Messages,
    UpstreamDialect::ChatCompletions
);

/// `GET /v1/models` with both SDKs of `lang`: the same list for each (the Anthropic SDK's
/// request carries `anthropic-version`, so the gateway answers in Anthropic's shape), the
/// configured route and the catalogue's `provider/model` ids in it.
fn list_models(test: &str, lang: Lang) {
    let Some((program, script)) = client(lang) else {
        return;
    };
    if !agents::isolated(test) {
        return;
    }
    let routes = [Route::new("sdk-route", "openai", "gpt-4o")];
    let scene = AgentScene::start(UpstreamDialect::ChatCompletions, &routes, model);
    let mut cmd = scene.command(&program);
    cmd.env("OPENAI_API_KEY", CLIENT_KEY)
        .env("ANTHROPIC_API_KEY", CLIENT_KEY)
        .env(
            "SWITCHYARD_SDK_NODE_MODULES",
            agents::clients_dir().join("npm/node_modules"),
        )
        .arg(&script)
        .args(["--api", "models", "--base-url", &scene.client_url()]);
    let run = scene.run(cmd, Duration::from_secs(60));
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "{}",
        scene.report(&run)
    );
    let ids: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let openai: Vec<&str> = (ids["openai"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        ids["openai"], ids["anthropic"],
        "the two SDKs read different lists"
    );
    assert_eq!(openai.first(), Some(&"sdk-route"), "{openai:?}");
    for id in [
        "openai-native/gpt-4o",
        "anthropic/claude-sonnet-4-5-20250929",
    ] {
        assert!(openai.contains(&id), "{id} is not listed: {openai:?}");
    }
    let requests = scene.tap.requests();
    let versions: Vec<usize> = requests
        .iter()
        .map(|r| r.header_values("anthropic-version").len())
        .collect();
    assert_eq!(versions, [0, 1], "{}", scene.tap.summary());
    println!("{} models listed; {}", openai.len(), scene.tap.summary());
}

#[test]
fn python_sdks_list_the_gateways_models() {
    list_models("python_sdks_list_the_gateways_models", Lang::Python);
}

#[test]
fn node_sdks_list_the_gateways_models() {
    list_models("node_sdks_list_the_gateways_models", Lang::Node);
}

/// The sampling and tool parameters an SDK sets (`extra`, in its own dialect's names), as the
/// gateway sent them upstream in the other dialect: each of `carried` in the first upstream
/// request's body, none of `absent` there, and `x-switchyard-dropped` naming exactly
/// `dropped` on every answer (no header when nothing is).
fn run_params(test: &str, lang: Lang, api: Api, upstream: UpstreamDialect, case: Params) {
    let Some((program, script)) = client(lang) else {
        return;
    };
    if !agents::isolated(test) {
        return;
    }
    let scene = AgentScene::start(upstream, &[route_to(upstream)], model);
    let base = match api {
        Api::Messages => scene.client_url(),
        _ => format!("{}/v1", scene.client_url()),
    };
    let mut cmd = scene.command(&program);
    cmd.env("OPENAI_API_KEY", CLIENT_KEY)
        .env("ANTHROPIC_API_KEY", CLIENT_KEY)
        .env(
            "SWITCHYARD_SDK_NODE_MODULES",
            agents::clients_dir().join("npm/node_modules"),
        )
        .arg(&script)
        .args(["--api", api.arg(), "--stream", "--base-url", &base])
        .args([
            "--model",
            "sdk-test-model",
            "--extra",
            &case.extra.to_string(),
        ])
        .arg("--workdir")
        .arg(&scene.work);
    let run = scene.run(cmd, Duration::from_secs(60));
    assert_eq!(
        run.status.map(|s| s.success()),
        Some(true),
        "{}",
        scene.report(&run)
    );
    scene.assert_hello(&run);
    let exchanges = scene.upstream.exchanges();
    let body: Value = serde_json::from_slice(&exchanges[0].request.body).unwrap();
    let mut failures = Vec::new();
    for (field, value) in case.carried.as_object().into_iter().flatten() {
        if &body[field] != value {
            failures.push(format!("upstream {field} is {}, not {value}", body[field]));
        }
    }
    for field in case.absent {
        if body.get(field).is_some() {
            failures.push(format!("upstream {field} is {}, not left out", body[field]));
        }
    }
    let dropped = scene.tap.dropped();
    let expected = vec![case.dropped.join(","); 2];
    if (case.dropped.is_empty() && !dropped.is_empty())
        || (!case.dropped.is_empty() && dropped != expected)
    {
        failures.push(format!(
            "x-switchyard-dropped: {dropped:?}, not {expected:?}"
        ));
    }
    assert!(
        failures.is_empty(),
        "{} sent {}:\n- {}\n{}",
        api.arg(),
        case.extra,
        failures.join("\n- "),
        scene.report(&run)
    );
}

/// One case of [`run_params`].
struct Params {
    /// What the SDK sets, in its dialect.
    extra: Value,
    /// What the upstream body must hold, in the upstream's dialect.
    carried: Value,
    /// What the upstream body must not hold.
    absent: &'static [&'static str],
    /// What `x-switchyard-dropped` names.
    dropped: &'static [&'static str],
}

#[test]
fn python_openai_chat_top_p_stop_and_tool_choice_reach_an_anthropic_upstream() {
    // `top_p` alone: no default temperature beside it (Claude Sonnet 4.5 and later refuse
    // both, langfuse/langfuse#9882).
    let case = Params {
        extra: json!({"top_p": 0.9, "stop": ["END"], "tool_choice": "required"}),
        carried: json!({"top_p": 0.9, "stop_sequences": ["END"], "tool_choice": {"type": "any"}}),
        absent: &["temperature"],
        dropped: &[],
    };
    run_params(
        "python_openai_chat_top_p_stop_and_tool_choice_reach_an_anthropic_upstream",
        Lang::Python,
        Api::Chat,
        UpstreamDialect::Messages,
        case,
    );
}

#[test]
fn node_openai_responses_temperature_and_tool_choice_reach_an_anthropic_upstream() {
    let case = Params {
        extra: json!({"temperature": 0.3, "tool_choice": {"type": "function", "name": "write_file"}}),
        carried: json!({"temperature": 0.3, "tool_choice": {"type": "tool", "name": "write_file"}}),
        absent: &["top_p"],
        dropped: &[],
    };
    run_params(
        "node_openai_responses_temperature_and_tool_choice_reach_an_anthropic_upstream",
        Lang::Node,
        Api::Responses,
        UpstreamDialect::Messages,
        case,
    );
}

#[test]
fn python_anthropic_stop_and_tool_choice_reach_a_chat_upstream_and_speed_is_named_dropped() {
    // anthropic 2.14.0's `messages.create` takes no temperature, top_p or top_k any more; it
    // takes `speed` (fast mode), which no Chat Completions provider has.
    let case = Params {
        extra: json!({"stop_sequences": ["END"], "tool_choice": {"type": "any"}, "speed": "fast"}),
        carried: json!({"stop": ["END"], "tool_choice": "required"}),
        absent: &[],
        dropped: &["speed"],
    };
    run_params(
        "python_anthropic_stop_and_tool_choice_reach_a_chat_upstream_and_speed_is_named_dropped",
        Lang::Python,
        Api::Messages,
        UpstreamDialect::ChatCompletions,
        case,
    );
}
