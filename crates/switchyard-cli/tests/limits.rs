//! Failover, spend caps and shared rate limits (SPEC R12) through the `switchyard` binary:
//! real processes on one task store, against the testkit's mock servers on 127.0.0.1. One
//! test runs in real time on purpose: three processes with `requests_per_minute = 2`, the
//! third of which waits about 60 s.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchyard_testkit::{HttpResponse, MockServer, Reply};
use tempfile::TempDir;

mod common;

const KEY: &str = "sk-test-limits-key-must-never-be-printed-4b1d";

#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// When the process ended, from the test's start.
    ended: Duration,
}

impl Run {
    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
            .collect()
    }

    fn events(&self, kind: &str) -> Vec<Value> {
        self.json_lines()
            .into_iter()
            .filter(|v| v["type"] == kind)
            .collect()
    }

    fn assert_no_key(&self) {
        assert!(
            !self.stdout.contains(KEY) && !self.stderr.contains(KEY),
            "{self:#?}"
        );
    }
}

/// Runs `switchyard ARGS` in a clean environment (`PATH`, `SWITCHYARD_HOME=home`, the key).
async fn switchyard(home: &Path, args: &[&str], started: Instant) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .env("ANTHROPIC_API_KEY", KEY)
        .env("OPENAI_API_KEY", KEY)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().expect("cannot start the switchyard binary");
        let mut out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let out_reader = std::thread::spawn(move || {
            let mut s = String::new();
            out.read_to_string(&mut s).map(|_| s)
        });
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            err.read_to_string(&mut s).map(|_| s)
        });
        let status = common::wait_or_kill(&mut child, Duration::from_secs(120), &cmd);
        Run {
            code: status.code(),
            stdout: out_reader.join().unwrap().unwrap(),
            stderr: err_reader.join().unwrap().unwrap(),
            ended: started.elapsed(),
        }
    })
    .await
    .unwrap()
}

fn home_with(config: &str) -> TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    home
}

fn ok() -> Reply {
    Reply::new(HttpResponse::fixture("openai_chat_text"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_primary_hands_over_to_the_fallback_with_one_line_and_limits_shows_it() {
    let primary = MockServer::start(vec![Reply::new(HttpResponse::new(
        429,
        &[("content-type", "application/json"), ("retry-after", "30")],
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your per-minute rate limit"}}"#,
    ))])
    .await;
    let backup = MockServer::start(vec![ok()]).await;
    let home = home_with(&format!(
        "[act]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n\
         [providers.anthropic]\nbase_url = \"{}\"\n\
         [providers.openai]\nbase_url = \"{}/v1\"\n",
        primary.url(),
        backup.url()
    ));
    let started = Instant::now();
    let args = ["task", "hello", "--fallback", "openai:backup-model"];
    let run = switchyard(home.path(), &args, started).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(!run.stdout.is_empty(), "{run:#?}");
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("switched"))
        .collect();
    assert_eq!(lines.len(), 1, "{run:#?}");
    assert!(
        lines[0].contains("anthropic is rate limiting requests (HTTP 429)")
            && lines[0].contains("switched to openai:backup-model")
            && lines[0].contains("anthropic:claude-sonnet-4-5 rests until"),
        "{}",
        lines[0]
    );
    assert!(!run.stderr.contains("error:"), "{run:#?}");
    assert!(!run.stderr.contains("retrying"), "{run:#?}");
    run.assert_no_key();
    assert_eq!((primary.request_count(), backup.request_count()), (1, 1));
    assert!(run.ended < Duration::from_secs(20), "{run:#?}");

    // --json: the fallback event, then the next task goes straight to the fallback.
    let run = switchyard(
        home.path(),
        &[
            "task",
            "again",
            "--json",
            "--fallback",
            "openai:backup-model",
        ],
        started,
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.events("fallback").is_empty(), "{run:#?}");
    assert_eq!((primary.request_count(), backup.request_count()), (1, 2));

    // `switchyard limits` shows the primary cooling down, for about 30 s, and why.
    let run = switchyard(home.path(), &["limits", "--json"], started).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let rows: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[0]["entry"], "anthropic:claude-sonnet-4-5", "{rows:?}");
    assert_eq!(rows[0]["state"], "cooling_down");
    assert_eq!(rows[0]["reason"], "rate_limited");
    let left = rows[0]["seconds_left"].as_f64().unwrap();
    assert!(left > 5.0 && left <= 30.0, "{left}");
    assert!(rows.last().unwrap()["spend"].is_object());
    let text = switchyard(home.path(), &["limits"], started).await;
    assert!(text.stdout.contains("cooling down until"), "{text:#?}");
    assert!(text.stdout.contains("rate_limited"), "{text:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fallback_event_carries_from_to_reason_and_until() {
    let primary = MockServer::start(vec![Reply::new(HttpResponse::json(
        503,
        r#"{"error":{"message":"The server is overloaded","type":"server_error"}}"#,
    ))])
    .await;
    let backup = MockServer::start(vec![ok()]).await;
    let home = home_with(&format!(
        "[act]\nprovider = \"openai\"\nmodel = \"primary-model\"\n\
         fallbacks = [ {{ provider = \"openai\", model = \"backup-model\", base_url = \"{}/v1\" }} ]\n\
         [providers.openai]\nbase_url = \"{}/v1\"\n",
        backup.url(),
        primary.url()
    ));
    let run = switchyard(home.path(), &["task", "hello", "--json"], Instant::now()).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let fallback = run.events("fallback");
    assert_eq!(fallback.len(), 1, "{run:#?}");
    assert_eq!(fallback[0]["from"], "openai:primary-model");
    assert_eq!(fallback[0]["to"], "openai:backup-model");
    assert_eq!(fallback[0]["reason"], "server");
    assert!(fallback[0]["until"].as_str().unwrap().ends_with('Z'));
    assert_eq!((primary.request_count(), backup.request_count()), (1, 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spend_cap_stops_before_the_first_request_with_exit_code_3() {
    let server = MockServer::start(vec![ok()]).await;
    let home = home_with(&format!(
        "[act]\nprovider = \"openai\"\nmodel = \"priced-model\"\n\
         [act.model_info]\ninput_price = 1000.0\noutput_price = 1000.0\n\
         [providers.openai]\nbase_url = \"{}/v1\"\n",
        server.url()
    ));
    let run = switchyard(
        home.path(),
        &["task", "hello", "--max-cost", "0.01"],
        Instant::now(),
    )
    .await;
    assert_eq!(run.code, Some(3), "{run:#?}");
    assert_eq!(server.request_count(), 0);
    let last = run
        .stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap();
    assert!(last.contains("task $0.0000 of $0.01 cap"), "{last}");
    assert!(
        run.stderr
            .contains("the spend cap of $0.01 for this task is reached"),
        "{run:#?}"
    );
    let bad = switchyard(
        home.path(),
        &["task", "hello", "--max-cost=-1"],
        Instant::now(),
    )
    .await;
    assert_eq!(bad.code, Some(2), "{bad:#?}");
    assert!(bad.stderr.contains("positive amount"), "{bad:#?}");
    // `switchyard tasks` shows the cost against the configured cap.
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[act]\nprovider = \"openai\"\nmodel = \"priced-model\"\n\
             [limits]\nmax_cost_usd = 2.5\n[providers.openai]\nbase_url = \"{}/v1\"\n",
            server.url()
        ),
    )
    .unwrap();
    let tasks = switchyard(home.path(), &["tasks"], Instant::now()).await;
    assert!(tasks.stdout.contains("COST / CAP"), "{tasks:#?}");
    assert!(tasks.stdout.contains("$0.0000 / $2.50"), "{tasks:#?}");
}

/// Real time: the third process waits for the first slot to leave the 60 s window.
#[tokio::test(flavor = "multi_thread")]
async fn three_processes_on_one_store_share_requests_per_minute_two() {
    three_processes_share_requests_per_minute_two(None).await;
}

/// The same with three machines (three homes) whose configuration files say
/// `store = "postgres://…"` (SPEC R13.2): the limit is shared through the PostgreSQL store.
#[tokio::test(flavor = "multi_thread")]
async fn three_machines_on_one_postgres_store_share_requests_per_minute_two() {
    let Some(url) = switchyard_testkit::fresh_postgres_database("rpm") else {
        return;
    };
    three_processes_share_requests_per_minute_two(Some(url)).await;
}

/// Three `switchyard task` runs at once with `requests_per_minute = 2`: on one home (SQLite in
/// its data directory), or on three homes whose configuration names the PostgreSQL `store`.
async fn three_processes_share_requests_per_minute_two(store: Option<String>) {
    let server = MockServer::start(vec![ok()]).await;
    let store_line = store
        .as_ref()
        .map(|url| format!("store = \"{url}\"\n"))
        .unwrap_or_default();
    let config = format!(
        "{store_line}[act]\nprovider = \"openai\"\nmodel = \"shared-model\"\n\
         [providers.openai]\nbase_url = \"{}/v1\"\nrequests_per_minute = 2\n",
        server.url()
    );
    let homes: Vec<TempDir> = (0..if store.is_some() { 3 } else { 1 })
        .map(|_| home_with(&config))
        .collect();
    let started = Instant::now();
    let runs = futures_util::future::join_all((0..3).map(|i| {
        let path = homes[i % homes.len()].path().to_owned();
        async move {
            let prompt = format!("task {i}");
            switchyard(&path, &["task", &prompt, "--json"], started).await
        }
    }))
    .await;
    let mut ended: Vec<(Duration, bool)> = runs
        .iter()
        .map(|r| {
            assert_eq!(r.code, Some(0), "{r:#?}");
            (r.ended, !r.events("rate_limit_wait").is_empty())
        })
        .collect();
    ended.sort();
    assert!(ended[1].0 < Duration::from_secs(30), "{ended:?}");
    assert!(!ended[0].1 && !ended[1].1, "{ended:?}");
    assert!(ended[2].0 >= Duration::from_secs(58), "{ended:?}");
    assert!(ended[2].1, "the third said it waits: {ended:?}");
    let mut at: Vec<_> = server.requests().iter().map(|r| r.at).collect();
    at.sort();
    assert_eq!(at.len(), 3, "no request was refused or repeated");
    let gap = at[2] - at[0];
    assert!(
        gap >= Duration::from_millis(59_900) && gap < Duration::from_secs(70),
        "{gap:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mistyped_fallback_provider_is_an_error_naming_the_nearest_id() {
    let server = MockServer::start(vec![ok()]).await;
    let home = home_with(&format!(
        "[act]\nprovider = \"openai\"\nmodel = \"m\"\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.url()
    ));
    let run = switchyard(
        home.path(),
        &[
            "task",
            "hello",
            "--fallback",
            "openruoter:anthropic/claude-sonnet-4.5",
        ],
        Instant::now(),
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(run.stderr.contains("`openrouter`"), "{run:#?}");
    assert_eq!(server.request_count(), 0);
    let run = switchyard(
        home.path(),
        &["task", "hello", "--fallback", "openai"],
        Instant::now(),
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(run.stderr.contains("PROVIDER:MODEL"), "{run:#?}");
}
