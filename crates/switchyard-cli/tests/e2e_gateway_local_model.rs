//! End-to-end through the gateway (SPEC R14.1, R14.2, R14.4): the real `switchyard serve`
//! binary with a route to llama.cpp's native `llama-server` serving SmolLM2-135M (started by
//! `scripts/local-model.sh`, found as in `e2e_local_model.rs` via `SWITCHYARD_E2E_BASE_URLS`'s
//! `native=URL`), and the official SDKs streaming a real answer through it: Python `openai`
//! (Chat Completions, the route's own dialect) and Python `anthropic` (Messages, translated to
//! Chat Completions). Each must give non-empty text in more than one piece, a finish reason and
//! usage above zero — the server's own counts, carried through the gateway — and no more
//! output tokens than the client's `max_tokens`. A second question, far longer than its limit,
//! must come back cut and said so in each dialect.
//!
//! No network namespace here: the model server listens on this host's loopback. A missing
//! server or SDK is skipped where a person sees it and fails in CI (`skip_or_fail`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use switchyard_testkit::skip_or_fail;

mod common;

const MODEL: &str = "smollm2-135m-instruct";
const URLS_ENV: &str = "SWITCHYARD_E2E_BASE_URLS";
/// A question and the client's output limit, carried through the gateway.
struct Ask {
    prompt: &'static str,
    max_tokens: u64,
    /// The limit always cuts this answer.
    cut: bool,
}

/// A short answer: it may end by itself or at the limit. Whether a turn that used exactly the
/// limit was cut is the model's call (llama-server counts an end-of-turn token among the
/// output, so a natural end can land on the limit), so this one checks only the bounds.
const SHORT: Ask = Ask {
    prompt: "Name three colors of the rainbow.",
    max_tokens: 24,
    cut: false,
};
/// An answer far longer than its limit: the limit always cuts it, and the client must be told
/// so (Chat `length`, Anthropic `max_tokens`; SPEC R14.4) with exactly that many tokens.
const CUT: Ask = Ask {
    prompt: "Count from 1 to 200, one number per line.",
    max_tokens: 8,
    cut: true,
};
/// A key the gateway sends to llama-server, which checks none.
const UPSTREAM_KEY: &str = "sk-local-model-unchecked-0123456789";

/// The native server's base URL from `SWITCHYARD_E2E_BASE_URLS` (`python=URL,native=URL`), or
/// `None` after [`skip_or_fail`].
fn native_url() -> Option<String> {
    let Ok(all) = std::env::var(URLS_ENV) else {
        skip_or_fail(&format!(
            "{URLS_ENV} is not set: run scripts/test.sh, which starts the local model servers and sets it"
        ));
        return None;
    };
    let url = all.split(',').find_map(|entry| {
        let (name, url) = entry.trim().split_once('=')?;
        (name == "native").then(|| url.trim().trim_end_matches('/').to_owned())
    });
    if url.is_none() {
        skip_or_fail(&format!(
            "no `native` server in {URLS_ENV} ({all}); scripts/test.sh leaves it out only with \
             SWITCHYARD_E2E_NATIVE=0, outside CI"
        ));
    }
    url
}

/// The repository's root (two levels above this crate).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Python of the SDK venv `scripts/agent-clients.sh` installs, or `None` after
/// [`skip_or_fail`].
fn sdk_python() -> Option<PathBuf> {
    let dir = std::env::var_os("SWITCHYARD_AGENT_CLIENTS_DIR")
        .map_or_else(|| repo_root().join(".agent-clients"), PathBuf::from);
    let python = dir.join("sdk-venv/bin/python");
    if python.is_file() {
        Some(python)
    } else {
        skip_or_fail(&format!(
            "{} is missing: run scripts/agent-clients.sh (installs the pinned SDKs)",
            python.display()
        ));
        None
    }
}

/// `switchyard serve --no-auth` on 127.0.0.1:0 with one route, `local`, to `url`; its address
/// (read from the first line of its stderr) and the process. The rest of its stderr goes to
/// `log`.
fn start_gateway(home: &Path, url: &str, log: &Path) -> (String, Child) {
    let config = home.join("serve.toml");
    let text = format!(
        "[serve.routes.local]\nprovider = \"openai\"\nmodel = \"{MODEL}\"\nbase_url = \"{url}\"\n"
    );
    std::fs::write(&config, text).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .env("OPENAI_API_KEY", UPSTREAM_KEY)
        .arg("--config")
        .arg(&config)
        .args(["serve", "--no-auth", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run the switchyard binary");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let Some(addr) = line
        .trim()
        .strip_prefix("switchyard serve: listening on http://")
    else {
        let _ = child.kill();
        panic!("switchyard serve announced no address: {line:?}");
    };
    let addr = addr.to_owned();
    let mut file = std::fs::File::create(log).unwrap();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut file));
    (addr, child)
}

/// Runs the SDK script for `api` (streamed, no tools) against the gateway at `base_url`; its
/// JSON summary, or the failure with the script's stderr.
fn run_sdk(
    python: &Path,
    api: &str,
    ask: &Ask,
    base_url: &str,
    work: &Path,
) -> Result<Value, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/sdk/sdk_client.py");
    let mut cmd = Command::new(python);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", work)
        .env("OPENAI_API_KEY", "sk-client-unchecked")
        .env("ANTHROPIC_API_KEY", "sk-ant-client-unchecked")
        .arg(script)
        .args(["--api", api, "--stream", "--no-tools", "--model", "local"])
        .args(["--prompt", ask.prompt])
        .args(["--max-tokens", &ask.max_tokens.to_string()])
        .arg("--base-url")
        .arg(base_url)
        .arg("--workdir")
        .arg(work)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Greedy sampling, so the same question gets the same answer on every run and whether the
    // limit cuts it does not depend on the draw. A translated Messages request already gets the
    // `openai` route's default of 0 (the pinned Anthropic SDK takes no `temperature` in `stream`).
    if api == "chat" {
        cmd.args(["--extra", r#"{"temperature": 0}"#]);
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {python:?}: {e}"))?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("{api}: exit {:?}: {stderr}{stdout}", out.status));
    }
    serde_json::from_str(stdout.trim()).map_err(|e| format!("{api}: not JSON ({e}): {stdout}"))
}

/// The checks of one streamed turn answering `ask`: text in pieces, a finish reason among
/// `stops` (a clean end, then the limit's), usage above zero in `input`/`output` (the dialect's
/// names), no more output than asked for, and a limit stop only with exactly the limit's tokens.
/// When the limit always cuts the answer, the stop must be the limit's.
fn check_turn(summary: &Value, ask: &Ask, stops: &[&str], names: [&str; 2]) -> Vec<String> {
    let [input, output] = names;
    let mut failures = Vec::new();
    let turns = summary["turns"].as_array().cloned().unwrap_or_default();
    let [turn] = turns.as_slice() else {
        return vec![format!("not one turn: {summary}")];
    };
    if turn["text"].as_str().is_none_or(|t| t.trim().is_empty()) {
        failures.push(format!("empty answer: {turn}"));
    }
    if turn["deltas"].as_u64().is_none_or(|n| n < 2) {
        failures.push(format!("the answer did not arrive in pieces: {turn}"));
    }
    if !turn["stop"].as_str().is_some_and(|s| stops.contains(&s)) {
        failures.push(format!("finish reason not one of {stops:?}: {turn}"));
    }
    for field in [input, output] {
        if turn["usage"][field].as_u64().is_none_or(|n| n == 0) {
            failures.push(format!("no {field} in the usage: {turn}"));
        }
    }
    let used = turn["usage"][output].as_u64();
    if used.is_some_and(|n| n > ask.max_tokens) {
        failures.push(format!(
            "more than the {} tokens asked for: {turn}",
            ask.max_tokens
        ));
    }
    let cut = turn["stop"] == stops[1];
    if cut && used != Some(ask.max_tokens) {
        failures.push(format!("a limit stop short of the limit: {turn}"));
    }
    if ask.cut && !cut {
        failures.push(format!("cut at the limit but not said so: {turn}"));
    }
    failures
}

/// The two SDKs asked the same thing, so the server counted the same prompt: Chat's
/// `prompt_tokens` (cached ones included) is Anthropic's `input_tokens` plus
/// `cache_read_input_tokens` (llama-server reuses its prompt cache, so the second request's
/// prompt is mostly cached: the split of a real cache count, carried through the translation).
fn same_prompt(chat: &Value, messages: &Value) -> Vec<String> {
    let n = |v: &Value, f: &str| v[f].as_u64().unwrap_or(0);
    let total = n(messages, "input_tokens") + n(messages, "cache_read_input_tokens");
    let mut failures = Vec::new();
    if n(chat, "prompt_tokens") != total {
        failures.push(format!(
            "the same prompt counted differently: chat {chat}, messages {messages}"
        ));
    }
    if n(chat, "cached_tokens") > n(chat, "prompt_tokens") {
        failures.push(format!("more cached than prompt tokens: {chat}"));
    }
    failures
}

#[test]
fn sdks_stream_a_real_local_model_answer_through_the_gateway() {
    let Some(url) = native_url() else { return };
    let Some(python) = sdk_python() else { return };
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("serve.log");
    let (addr, mut gateway) = start_gateway(home.path(), &url, &log);
    let gateway_url = format!("http://{addr}");
    let mut failures = Vec::new();
    let runs = [
        (
            "chat",
            format!("{gateway_url}/v1"),
            &["stop", "length"][..],
            "prompt_tokens",
            "completion_tokens",
        ),
        (
            "messages",
            gateway_url.clone(),
            &["end_turn", "max_tokens"][..],
            "input_tokens",
            "output_tokens",
        ),
    ];
    // The short answers first, back to back, so the second finds the first's prompt cached.
    let mut usages = Vec::new();
    for ask in [&SHORT, &CUT] {
        for (api, base, stops, input, output) in &runs {
            let turn = run_sdk(&python, api, ask, base, home.path()).map(|summary| {
                let found = check_turn(&summary, ask, stops, [input, output]);
                failures.extend(found.into_iter().map(|f| format!("{api}: {f}")));
                // Shown with `--nocapture`: what came through.
                eprintln!(
                    "{api} through the gateway to {url}: {}",
                    summary["turns"][0]
                );
                summary["turns"][0].clone()
            });
            match turn {
                Ok(turn) if !ask.cut => usages.push(turn["usage"].clone()),
                Ok(_) => {}
                Err(e) => failures.push(e),
            }
        }
    }
    if let [chat, messages] = usages.as_slice() {
        failures.extend(same_prompt(chat, messages));
    }
    let _ = gateway.kill();
    let _ = common::wait_or_kill(&mut gateway, Duration::from_secs(10), &"serve");
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        failures.is_empty(),
        "{} check(s) failed:\n- {}\ngateway log:\n{log}",
        failures.len(),
        failures.join("\n- ")
    );
    assert!(!log.contains(UPSTREAM_KEY), "the key is in the log: {log}");
}
