//! End-to-end: the built `switchyard` binary against two real local model servers serving
//! SmolLM2-135M, started by `scripts/local-model.sh`: llama-cpp-python's server (`python`) and
//! llama.cpp's native `llama-server` (`native`).
//!
//! `scripts/test.sh` starts both and passes their base URLs in `SWITCHYARD_E2E_BASE_URLS` as
//! `python=URL,native=URL`. A server not given there (a plain `cargo test`, or
//! `SWITCHYARD_E2E_NATIVE=0`) is skipped where a person sees it, and fails the test in CI
//! (`switchyard_testkit::skip_or_fail`).
//!
//! Each server is first checked to be the kind it is given as: llama.cpp's `llama-server`
//! answers `GET /props` with its own `build_info` and lists its models as `owned_by: "llamacpp"`;
//! llama-cpp-python's FastAPI server describes itself in `GET /openapi.json` ("llama.cpp Python
//! API") and has no `/props`. Then a `--json` task must stream a real answer in several pieces,
//! in one request, with no error or retry event, and with usage: the native server reports it
//! (`estimated: false`); llama-cpp-python's reports none, so the usage is the labelled estimate
//! (`estimated: true`). Then the terminal renderer: the answer on stdout, and on stderr no error
//! or retry line, the usage line last. Every check of a server runs and all its failures are
//! reported together; the two servers are two tests, so one failing never hides the other.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use switchyard_testkit::skip_or_fail;

const MODEL: &str = "smollm2-135m-instruct";
const URLS_ENV: &str = "SWITCHYARD_E2E_BASE_URLS";

/// The two servers `scripts/local-model.sh` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`).
    Python,
    /// llama.cpp's own `llama-server`.
    Native,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Python => "python",
            Kind::Native => "native",
        }
    }
}

/// The base URL given for `kind`, or `None` after [`skip_or_fail`] (the test returns).
///
/// # Panics
///
/// On a malformed `SWITCHYARD_E2E_BASE_URLS`: an entry without `NAME=`, an unknown name, or one
/// URL given for both kinds (one server cannot be both).
fn given_url(kind: Kind) -> Option<String> {
    let Ok(all) = std::env::var(URLS_ENV) else {
        skip_or_fail(&format!(
            "{URLS_ENV} is not set: run scripts/test.sh, which starts the local model servers and sets it"
        ));
        return None;
    };
    let entries: Vec<(&str, &str)> = all
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|entry| {
            let (name, url) = entry
                .split_once('=')
                .unwrap_or_else(|| panic!("{URLS_ENV}: `{entry}` is not NAME=URL"));
            assert!(
                name == "python" || name == "native",
                "{URLS_ENV}: unknown server `{name}` (python or native)"
            );
            (name, url.trim_end_matches('/'))
        })
        .collect();
    for (i, (a, url_a)) in entries.iter().enumerate() {
        for (b, url_b) in &entries[i + 1..] {
            assert!(
                url_a != url_b,
                "{URLS_ENV}: `{a}` and `{b}` are both {url_a}; one server cannot be both \
                 (is SWITCHYARD_LOCAL_MODEL_PORT set for both?)"
            );
        }
    }
    match entries.iter().find(|(name, _)| *name == kind.name()) {
        Some((_, url)) => Some((*url).to_owned()),
        None => {
            skip_or_fail(&format!(
                "no `{}` server in {URLS_ENV} ({all}); scripts/test.sh leaves it out only with \
                 SWITCHYARD_E2E_NATIVE=0, outside CI",
                kind.name()
            ));
            None
        }
    }
}

/// `GET path` on the host of `base_url` (`http://HOST:PORT/...`), as HTTP/1.0 so the answer is
/// neither chunked nor kept alive: the status and the body.
fn http_get(base_url: &str, path: &str) -> Result<(u16, String), String> {
    let authority = base_url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .ok_or_else(|| format!("{base_url} is not an http:// URL"))?;
    let addr = authority
        .to_socket_addrs()
        .map_err(|e| format!("{authority}: {e}"))?
        .next()
        .ok_or_else(|| format!("{authority}: no address"))?;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map_err(|e| format!("GET {authority}{path}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {authority}\r\n\r\n")
        .map_err(|e| format!("GET {authority}{path}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("GET {authority}{path}: {e}"))?;
    let raw = String::from_utf8_lossy(&raw);
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("GET {authority}{path}: no HTTP head in {raw:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("GET {authority}{path}: bad status line in {head:?}"))?;
    Ok((status, body.to_owned()))
}

/// `GET path` that must answer 200 with JSON.
fn get_json(base_url: &str, path: &str) -> Result<Value, String> {
    match http_get(base_url, path)? {
        (200, body) => {
            serde_json::from_str(&body).map_err(|e| format!("GET {path}: not JSON ({e}): {body}"))
        }
        (status, body) => Err(format!("GET {path}: status {status}: {body}")),
    }
}

/// The server's origin (`http://HOST:PORT`) from its base URL (`http://HOST:PORT/v1`).
fn origin(base_url: &str) -> &str {
    base_url.strip_suffix("/v1").unwrap_or(base_url)
}

/// Checks that the server at `url` is of `kind` and serves [`MODEL`]; returns what it says of
/// its own version.
fn check_identity(kind: Kind, url: &str, failures: &mut Vec<String>) -> String {
    let mut version = String::new();
    match get_json(url, &format!("{}/models", url_path(url))) {
        Ok(models) => {
            let listed = models["data"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|m| m["id"] == MODEL);
            match listed {
                None => failures.push(format!("{MODEL} is not among its models: {models}")),
                Some(m) if kind == Kind::Native && m["owned_by"] != "llamacpp" => failures.push(
                    format!("its model is not owned_by \"llamacpp\" as llama-server's are: {m}"),
                ),
                Some(_) => {}
            }
        }
        Err(e) => failures.push(e),
    }
    let props = http_get(origin(url), "/props");
    match kind {
        Kind::Native => match props.and_then(|(status, body)| match status {
            200 => serde_json::from_str::<Value>(&body).map_err(|e| format!("GET /props: {e}")),
            _ => Err(format!("GET /props: status {status}: {body}")),
        }) {
            Ok(props) => match props["build_info"].as_str() {
                Some(info) if !info.is_empty() => version = format!("llama.cpp {info}"),
                _ => failures.push(format!(
                    "GET /props has no build_info, so this is not llama.cpp's llama-server: {props}"
                )),
            },
            Err(e) => failures.push(format!("not llama.cpp's llama-server: {e}")),
        },
        Kind::Python => {
            if let Ok((200, body)) = props {
                failures.push(format!(
                    "GET /props answers, as llama.cpp's llama-server does, not llama-cpp-python's: {body}"
                ));
            }
            match get_json(origin(url), "/openapi.json") {
                Ok(api) => match api["info"]["title"].as_str() {
                    Some(title) if title.contains("llama.cpp Python API") => {
                        version = format!("llama-cpp-python {}", api["info"]["version"]);
                    }
                    _ => failures.push(format!(
                        "GET /openapi.json is not llama-cpp-python's: {}",
                        api["info"]
                    )),
                },
                Err(e) => failures.push(format!("not llama-cpp-python's server: {e}")),
            }
        }
    }
    version
}

/// The path part of a base URL (`/v1` of `http://127.0.0.1:8089/v1`).
fn url_path(base_url: &str) -> &str {
    base_url
        .strip_prefix("http://")
        .and_then(|rest| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("")
}

/// `switchyard` with a clean environment: only `PATH` and a fresh `SWITCHYARD_HOME`.
fn switchyard(home: &std::path::Path, url: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .args(["task", "--provider", "openai", "--model", MODEL])
        .args(["--base-url", url])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("cannot run the switchyard binary")
}

/// The event types a plain, successful one-request task may show.
const CLEAN_EVENTS: [&str; 6] = [
    "task_started",
    "api_req_started",
    "text",
    "reasoning",
    "usage",
    "task_finished",
];

/// A `--json` task: a streamed answer, one request, no error or retry, and usage as `kind`
/// reports it.
fn check_json_task(kind: Kind, url: &str, home: &std::path::Path, failures: &mut Vec<String>) {
    let out = switchyard(home, url, &["--json", "Name three colors of the rainbow."]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        failures.push(format!(
            "--json task: exit {:?}\n{stdout}\n{stderr}",
            out.status
        ));
        return;
    }
    let mut lines = Vec::new();
    for line in stdout.lines() {
        match serde_json::from_str::<Value>(line) {
            Ok(v) => lines.push(v),
            Err(e) => failures.push(format!("--json task: not JSON ({e}): {line}")),
        }
    }
    let kinds: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    if kinds.first() != Some(&"task_started") || kinds.last() != Some(&"task_finished") {
        failures.push(format!(
            "--json task: not task_started … task_finished: {kinds:?}"
        ));
    }
    let unexpected: Vec<&Value> = lines
        .iter()
        .filter(|l| {
            !l["type"]
                .as_str()
                .is_some_and(|t| CLEAN_EVENTS.contains(&t))
        })
        .collect();
    if !unexpected.is_empty() {
        failures.push(format!(
            "--json task: error, retry or other events: {unexpected:?}"
        ));
    }
    let requests = kinds.iter().filter(|k| **k == "api_req_started").count();
    if requests != 1 {
        failures.push(format!(
            "--json task: {requests} requests, not 1: {kinds:?}"
        ));
    }
    let text: String = lines
        .iter()
        .filter(|l| l["type"] == "text")
        .filter_map(|l| l["text"].as_str())
        .collect();
    let pieces = kinds.iter().filter(|k| **k == "text").count();
    if text.trim().is_empty() {
        failures.push("--json task: empty answer".to_owned());
    } else if pieces < 2 {
        failures.push(format!(
            "--json task: the answer arrived in {pieces} piece(s), not streamed"
        ));
    }
    let usages: Vec<&Value> = lines.iter().filter(|l| l["type"] == "usage").collect();
    match usages.as_slice() {
        [usage] => {
            let estimated = kind == Kind::Python;
            if usage["estimated"] != estimated {
                failures.push(format!(
                    "--json task: usage must have estimated: {estimated} ({}): {usage}",
                    match kind {
                        Kind::Native => "llama-server reports usage in the stream",
                        Kind::Python => "llama-cpp-python's server reports none",
                    }
                ));
            }
            for field in ["input_tokens", "output_tokens"] {
                if usage[field].as_u64().is_none_or(|n| n == 0) {
                    failures.push(format!("--json task: no {field}: {usage}"));
                }
            }
        }
        _ => failures.push(format!(
            "--json task: {} usage lines, not 1: {usages:?}",
            usages.len()
        )),
    }
    let finished = lines.last().cloned().unwrap_or_default();
    if finished["status"] != "completed" || finished["first_token_ms"].as_u64().is_none() {
        failures.push(format!("--json task: did not complete: {finished}"));
    }
    // Shown with `--nocapture`: what the server did.
    eprintln!(
        "{} {url}: {pieces} text chunks, usage {} in / {} out (estimated: {}), first token {} ms, total {} ms",
        kind.name(),
        usages
            .first()
            .map_or(Value::Null, |u| u["input_tokens"].clone()),
        usages
            .first()
            .map_or(Value::Null, |u| u["output_tokens"].clone()),
        usages
            .first()
            .map_or(Value::Null, |u| u["estimated"].clone()),
        finished["first_token_ms"],
        finished["duration_ms"],
    );
}

/// The same through the terminal renderer: text on stdout; on stderr no error or retry line,
/// and the usage line last, marked as an estimate exactly when `kind` reports no usage.
fn check_terminal_task(kind: Kind, url: &str, home: &std::path::Path, failures: &mut Vec<String>) {
    let out = switchyard(home, url, &["Say hello."]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        failures.push(format!("terminal task: exit {:?}\n{stderr}", out.status));
        return;
    }
    if String::from_utf8_lossy(&out.stdout).trim().is_empty() {
        failures.push("terminal task: nothing on stdout".to_owned());
    }
    let bad: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("error") || l.contains("retry") || l.contains("warn")
        })
        .collect();
    if !bad.is_empty() {
        failures.push(format!("terminal task: error or retry lines: {bad:?}"));
    }
    let last = stderr.lines().last().unwrap_or_default();
    if !(last.contains("out tokens") && last.contains("first token")) {
        failures.push(format!(
            "terminal task: the last line is not the usage: {last}"
        ));
    }
    if last.contains("estimated") != (kind == Kind::Python) {
        failures.push(format!(
            "terminal task: the usage line's estimate mark is wrong for {}: {last}",
            kind.name()
        ));
    }
}

/// Every check of the server given for `kind`; panics with all failures at the end.
fn check_server(kind: Kind) {
    let Some(url) = given_url(kind) else { return };
    if let Err(e) = http_get(&url, &format!("{}/models", url_path(&url))) {
        panic!(
            "nothing answers as the {} server at {url} ({e}): start it with scripts/local-model.sh start --{}",
            kind.name(),
            kind.name()
        );
    }
    let home = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let version = check_identity(kind, &url, &mut failures);
    check_json_task(kind, &url, home.path(), &mut failures);
    check_terminal_task(kind, &url, home.path(), &mut failures);
    assert!(
        failures.is_empty(),
        "the {} server at {url} ({version}) failed {} check(s):\n- {}",
        kind.name(),
        failures.len(),
        failures.join("\n- ")
    );
}

#[test]
fn llama_cpp_python_streams_a_real_answer_with_estimated_usage() {
    check_server(Kind::Python);
}

#[test]
fn native_llama_server_streams_a_real_answer_with_its_own_usage() {
    check_server(Kind::Native);
}
