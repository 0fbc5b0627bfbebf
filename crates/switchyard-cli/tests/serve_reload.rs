//! `switchyard serve` reloading its configuration without a restart (SPEC R14.3a, issue 45):
//! the real binary in front of the testkit's upstreams, 200 streams held mid-answer while the
//! file changes three times (a route moved, a bad file, a provider added); SIGHUP with the
//! watch off; and `config check` refusing what a reload refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use switchyard_testkit::{Gate, HttpResponse, MockServer, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;

const ANTHROPIC_KEY: &str = "sk-ant-reload-test-0123456789";
const OPENAI_KEY: &str = "sk-openai-reload-test-0123456789";
const STREAMS: usize = 200;
/// How long a condition may take before the test fails: generous, since the check is the
/// condition, never the wait.
const PATIENCE: Duration = Duration::from_secs(20);

/// The routes `held` → `held`'s upstream and `moved` → `moved`'s, and what else is given.
fn routes(held: &str, moved: &str, more: &str) -> String {
    format!(
        "[serve.routes.held]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{held}\"\n\
         [serve.routes.moved]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{moved}\"\n{more}"
    )
}

/// `switchyard serve` on `config`, else on `home`'s config.toml, with both providers' keys,
/// its stderr read into `log`.
fn serve(
    home: &Path,
    config: Option<&Path>,
    extra: &[&str],
) -> (Child, String, Arc<Mutex<String>>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("OPENAI_API_KEY", OPENAI_KEY);
    if let Some(config) = config {
        cmd.arg("--config").arg(config);
    }
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (addr, first) = common::serve::announced_address(&mut stderr);
    let log = Arc::new(Mutex::new(first));
    let into = Arc::clone(&log);
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let mut log = into.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    (child, addr, log)
}

/// One request on a fresh connection: the status and the body, chunked encoding undone.
async fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let status = raw.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        (status, dechunk(body))
    } else {
        (status, body.to_owned())
    }
}

/// A chunked body's bytes; a body cut before its last chunk comes back cut.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            out.push_str(if n == 0 { "" } else { after });
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
    }
    out
}

fn chat(model: &str, stream: bool) -> String {
    format!(
        r#"{{"model": "{model}", "stream": {stream}, "messages": [{{"role": "user", "content": "Capital of France?"}}]}}"#
    )
}

/// Waits for `done` to hold, checking every 20 ms; past [`PATIENCE`] the test fails with `what`.
async fn until<F, Fut>(what: &str, mut done: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !done().await {
        assert!(
            start.elapsed() < PATIENCE,
            "not within {PATIENCE:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    start.elapsed()
}

/// How many reloads `/metrics` counts with `result`.
async fn reloads(addr: &str, result: &str) -> u64 {
    let (_, text) = http(addr, "GET", "/metrics", "").await;
    let series = format!("switchyard_config_reloads_total{{result=\"{result}\"}} ");
    let line = text.lines().find_map(|l| l.strip_prefix(series.as_str()));
    line.expect("the reload counter in /metrics")
        .parse()
        .unwrap()
}

/// Sends requests for `model` until one reaches `upstream`; returns how long that took.
async fn follows(addr: &str, model: &str, upstream: &MockServer) -> Duration {
    let before = upstream.request_count();
    until(&format!("{model} goes to {}", upstream.url()), || async {
        let (status, _) = http(addr, "POST", "/v1/chat/completions", &chat(model, false)).await;
        status == 200 && upstream.request_count() > before
    })
    .await
}

fn log_has(log: &Mutex<String>, text: &str) -> bool {
    log.lock().unwrap().contains(text)
}

fn stop(mut child: Child) {
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let status = common::wait_or_kill(&mut child, Duration::from_secs(30), &"serve");
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_under_200_streams_cuts_none_and_new_requests_follow_it() {
    let gate = Gate::new();
    let anthropic = || Reply::new(HttpResponse::fixture("anthropic_text"));
    let held = MockServer::start(vec![anthropic().gate_at(600, &gate)]).await;
    let before = MockServer::start(vec![anthropic()]).await;
    let after = MockServer::start(vec![anthropic()]).await;
    let added =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("serve.toml");
    std::fs::write(&file, routes(&held.url(), &before.url(), "")).unwrap();
    let (child, addr, log) = serve(home.path(), Some(&file), &[]);

    let streams: Vec<_> = (0..STREAMS)
        .map(|_| {
            let addr = addr.clone();
            tokio::spawn(async move {
                http(&addr, "POST", "/v1/chat/completions", &chat("held", true)).await
            })
        })
        .collect();
    let reached = tokio::time::timeout(PATIENCE, gate.wait_until_reached(STREAMS));
    reached.await.expect("200 streams mid-answer");
    follows(&addr, "moved", &before).await;

    // 1: both routes moved to another upstream: the streams in flight stay where they are.
    std::fs::write(&file, routes(&after.url(), &after.url(), "")).unwrap();
    let moved = follows(&addr, "moved", &after).await;
    // 2: a bad file, which would have moved it back, is refused with its reason.
    let broken =
        "[serve.routes.broken]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"not a url\"\n";
    std::fs::write(&file, routes(&held.url(), &before.url(), broken)).unwrap();
    until("the bad file counted as rejected", || async {
        reloads(&addr, "rejected").await == 1
    })
    .await;
    // The counter moves before the log line reaches the pipe the test reads.
    until("the log names the refused file and its reason", || async {
        log_has(&log, "configuration not reloaded (the file changed)")
            && log_has(&log, "[serve.routes.\"broken\"]")
    })
    .await;
    let count = before.request_count();
    follows(&addr, "moved", &after).await;
    assert_eq!(
        before.request_count(),
        count,
        "the refused file was put in effect"
    );
    // 3: a provider added, with a route to it.
    let (status, _) = http(&addr, "POST", "/v1/chat/completions", &chat("gpt", false)).await;
    assert_eq!(status, 404);
    let openai = format!(
        "[providers.openai]\nbase_url = \"{}/v1\"\n[serve.routes.gpt]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\n",
        added.url()
    );
    std::fs::write(&file, routes(&after.url(), &after.url(), &openai)).unwrap();
    let provider = follows(&addr, "gpt", &added).await;

    gate.open();
    for stream in streams {
        let (status, body) = stream.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("City of Light"), "{body}");
        assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");
    }
    assert_eq!(held.request_count(), STREAMS, "a stream was retried");
    assert_eq!(reloads(&addr, "rejected").await, 1);
    assert!(reloads(&addr, "ok").await >= 2);
    eprintln!("route moved followed in {moved:?}; provider added followed in {provider:?}");
    assert!(moved < Duration::from_secs(1), "{moved:?}");
    assert!(provider < Duration::from_secs(1), "{provider:?}");
    stop(child);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_names_what_needs_a_restart_and_refuses_a_file_gone() {
    let anthropic = || Reply::new(HttpResponse::fixture("anthropic_text"));
    let first = MockServer::start(vec![anthropic()]).await;
    let second = MockServer::start(vec![anthropic()]).await;
    let home = tempfile::tempdir().unwrap();
    // The default file, with no --config: were it gone, the built-in default would load.
    let file = home.path().join("config.toml");
    std::fs::write(&file, routes(&first.url(), &first.url(), "")).unwrap();
    let (child, addr, log) = serve(home.path(), None, &["--no-watch"]);
    follows(&addr, "moved", &first).await;
    let limits = "[serve]\nmax_connections = 100\nrequest_deadline = 60\n";
    std::fs::write(
        &file,
        limits.to_owned() + &routes(&first.url(), &second.url(), ""),
    )
    .unwrap();
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    follows(&addr, "moved", &second).await;
    let named = "changed but not applied until a restart: [serve] max_connections\n";
    until(
        "the log names the reload and the restart-only setting",
        || async { log_has(&log, "configuration reloaded (SIGHUP)") && log_has(&log, named) },
    )
    .await;
    assert!(!log_has(&log, "the file changed"));
    assert_eq!(reloads(&addr, "ok").await, 1);
    // A file gone is refused: the built-in default never takes its place.
    std::fs::remove_file(&file).unwrap();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    until("the missing file refused", || async {
        reloads(&addr, "rejected").await == 1
    })
    .await;
    until("the log names the refusal", || async {
        log_has(&log, "configuration not reloaded (SIGHUP)")
    })
    .await;
    follows(&addr, "moved", &second).await;
    stop(child);
}

#[test]
fn config_check_refuses_what_a_reload_refuses() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("serve.toml");
    let check = |text: &str| {
        std::fs::write(&file, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .env_clear()
            .env("SWITCHYARD_HOME", home.path())
            .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
            .arg("--config")
            .arg(&file)
            .args(["config", "check"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.code(), said)
    };
    let good = routes("http://127.0.0.1:9", "http://127.0.0.1:9", "");
    let (code, said) = check(&("[act]\nprovider = \"anthropic\"\n".to_owned() + &good));
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("serve: 2 routes"), "{said}");
    let broken =
        "[serve.routes.broken]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"not a url\"\n";
    let (code, said) = check(&("[act]\nprovider = \"anthropic\"\n".to_owned() + broken));
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("error: serve: [serve.routes.\"broken\"]"),
        "{said}"
    );
    // Without any provider key: a file of routes alone is whole for serve, and that no task
    // can run on it, or that a route has no key yet, is a warning.
    let bare = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .env_clear()
            .env("SWITCHYARD_HOME", home.path())
            .arg("--config")
            .arg(&file)
            .args(args)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        (out.status.code(), said.into_owned())
    };
    std::fs::write(&file, &good).unwrap();
    let (code, said) = bare(&["config", "check"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("warning: act mode"), "{said}");
    assert!(
        said.contains("no API key for provider `anthropic`"),
        "{said}"
    );
    // And serve refuses to start on what a reload refuses, instead of answering 500.
    std::fs::write(&file, broken).unwrap();
    let (code, said) = bare(&["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("[serve.routes.\"broken\"]"), "{said}");
}

/// The OTLP receiver of scripts/otlp-receiver.sh, writing what it gets to a file, one JSON
/// line per span or point.
struct Receiver {
    child: Child,
    out: std::path::PathBuf,
    http: u16,
}

impl Receiver {
    fn start(dir: &Path) -> Option<Self> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let found = Command::new(root.join("scripts/otlp-receiver.sh"))
            .arg("python")
            .output()
            .ok()?;
        let python = std::path::PathBuf::from(String::from_utf8(found.stdout).ok()?.trim());
        if !python.exists() {
            return None;
        }
        let out = dir.join("otlp.jsonl");
        let mut child = Command::new(python)
            .arg(root.join("scripts/otlp-receiver.py"))
            .arg("--out")
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ports: serde_json::Value = serde_json::from_str(&line).unwrap();
        let http = u16::try_from(ports["http"].as_u64().unwrap()).unwrap();
        Some(Self { child, out, http })
    }

    /// Whether a span of route `route` came from the service named `service`.
    fn has_span(&self, route: &str, service: &str) -> bool {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .any(|l| {
                l["attributes"]["switchyard.route"] == route
                    && l["resource"]["service.name"] == service
            })
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_telemetry_change_takes_new_requests_and_leaves_those_in_flight_on_the_old() {
    let home = tempfile::tempdir().unwrap();
    let Some(receiver) = Receiver::start(home.path()) else {
        switchyard_testkit::skip_or_fail(
            "the OTLP receiver is not installed: run scripts/otlp-receiver.sh install",
        );
        return;
    };
    let gate = Gate::new();
    let anthropic = || Reply::new(HttpResponse::fixture("anthropic_text"));
    let held = MockServer::start(vec![anthropic().gate_at(600, &gate)]).await;
    let plain = MockServer::start(vec![anthropic()]).await;
    let telemetry = |service: &str| {
        format!(
            "[telemetry]\nendpoint = \"http://127.0.0.1:{}\"\nservice_name = \"{service}\"\n",
            receiver.http
        )
    };
    let file = home.path().join("serve.toml");
    let text = |service: &str| telemetry(service) + &routes(&held.url(), &plain.url(), "");
    std::fs::write(&file, text("before")).unwrap();
    let (child, addr, log) = serve(home.path(), Some(&file), &[]);
    let stream = {
        let addr = addr.clone();
        tokio::spawn(async move {
            http(&addr, "POST", "/v1/chat/completions", &chat("held", true)).await
        })
    };
    let reached = tokio::time::timeout(PATIENCE, gate.wait_until_reached(1));
    reached.await.expect("a stream mid-answer");
    std::fs::write(&file, text("after")).unwrap();
    until("the telemetry change reloaded", || async {
        log_has(&log, "configuration reloaded (the file changed)")
    })
    .await;
    let (status, body) = http(&addr, "POST", "/v1/chat/completions", &chat("moved", false)).await;
    assert_eq!(status, 200, "{body}");
    until("the new request's span from the new exporter", || async {
        receiver.has_span("moved", "after")
    })
    .await;
    gate.open();
    let (status, body) = stream.await.unwrap();
    assert!(
        status == 200 && body.trim_end().ends_with("data: [DONE]"),
        "{body}"
    );
    until(
        "the stream's span from the exporter it started under",
        || async { receiver.has_span("held", "before") },
    )
    .await;
    assert!(!receiver.has_span("held", "after") && !receiver.has_span("moved", "before"));
    stop(child);
}
