//! Runtime edits of keys and teams and the audit log through the real binary (SPEC R14.6a;
//! issue 44, tests/cases/CASES.md U01–): `switchyard keys update` and `teams update` on the
//! store of a running `serve` are in effect within a second (a lowered budget is a 402, an RPM
//! set a 429, models narrowed a 403), and `switchyard audit` lists every change once with its
//! actor and never a key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchyard_testkit::{HttpResponse, MockServer, Reply};

mod common;

use common::serve::{Serve, route, sonnet};

const PROVIDER_KEY: &str = "sk-ant-serve-audit-test-0123456789";

/// The binary as the OS user `tester`, whose home is `home`, on `store`.
fn switchyard(home: &Path, store: &str) -> Command {
    let mut cmd = common::switchyard_on(home, store, PROVIDER_KEY);
    cmd.env("USER", "tester");
    cmd
}

/// Runs `args` to its end: (exit code, stdout, stderr).
fn run(home: &Path, store: &str, args: &[&str]) -> (i32, String, String) {
    common::output(switchyard(home, store).args(args))
}

/// One chat completion for `model` with `key` to `serve`: (status, body).
fn ask(serve: &Serve, key: &str, model: &str) -> (u16, String) {
    let body = format!(
        r#"{{"model": "{model}", "max_tokens": 100, "messages": [{{"role": "user", "content": "Hi"}}]}}"#
    );
    let auth = format!("Bearer {key}");
    let headers = [("authorization", auth.as_str())];
    let wait = Duration::from_secs(30);
    let (status, _, body) =
        common::serve::call(&serve.addr, "/v1/chat/completions", &headers, &body, wait);
    (status, body)
}

/// How long after `since` a request for `model` with `key` is first answered `status`,
/// asking every 50 ms for at most 3 s.
fn until(serve: &Serve, key: &str, model: &str, status: u16, since: Instant) -> Duration {
    loop {
        let (got, body) = ask(serve, key, model);
        if got == status {
            return since.elapsed();
        }
        assert!(
            since.elapsed() < Duration::from_secs(3),
            "still {got} instead of {status}: {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn write_config(home: &Path, upstream: &str) -> std::path::PathBuf {
    let haiku = route("haiku", "anthropic", "claude-haiku-4-5", upstream);
    common::serve::write_config(home, &(sonnet(upstream) + &haiku))
}

/// Runs `args`, which must succeed, and returns what it printed on stdout and stderr.
fn ok(home: &Path, store: &str, args: &[&str]) -> String {
    let (code, out, err) = run(home, store, args);
    assert_eq!(code, 0, "{args:?}: {out}{err}");
    format!("{out}{err}")
}

/// Each edit made while two `serve` processes run on `store` is in effect on both within a
/// second, measured from the end of the command: a team's budget lowered, then the key's, an
/// RPM set, the models narrowed. Then every change is in `switchyard audit` once, by `tester`
/// from `cli@HOST`, and the key is in no output and no row. Returns the times to effect.
async fn edits_bind_running_serves(store: String) -> Vec<Duration> {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let config = write_config(&h, &upstream.url());
    let mut printed = ok(&h, &store, &["teams", "create", "ops", "--budget", "5/day"]);
    let made = common::create_key(
        switchyard(&h, &store),
        &["--name", "bot", "--team", "ops", "--budget", "5/day"],
    );
    let key = made["key"].as_str().unwrap().to_owned();
    let prefix = made["prefix"].as_str().unwrap().to_owned();
    let times = tokio::task::spawn_blocking(move || {
        let serves = [
            Serve::start(switchyard(&h, &store), &config, &[]),
            Serve::start(switchyard(&h, &store), &config, &[]),
        ];
        for serve in serves.iter().chain(&serves) {
            assert_eq!(ask(serve, &key, "sonnet").0, 200);
        }
        let used = |h: &Path| -> f64 {
            let shown = ok(h, &store, &["keys", "show", &prefix, "--json"]);
            let v: Value = serde_json::from_str(shown.lines().next().unwrap()).unwrap();
            v["used_usd"].as_f64().unwrap()
        };
        let start = Instant::now();
        while used(&h) == 0.0 {
            assert!(
                start.elapsed() < Duration::from_secs(3),
                "no spend recorded"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let spent = used(&h);
        let mut times = Vec::new();
        let mut edit = |args: &[&str], status: u16, model: &str| {
            printed.push_str(&ok(&h, &store, args));
            let done = Instant::now();
            for serve in &serves {
                times.push(until(serve, &key, model, status, done));
            }
            printed.push_str(&ok(&h, &store, &["keys", "show", &prefix]));
        };
        edit(
            &["teams", "update", "ops", "--budget", "0.000001/day"],
            402,
            "sonnet",
        );
        edit(
            &["teams", "update", "ops", "--budget", "none"],
            200,
            "sonnet",
        );
        // An edit resets no use: the key's day still counts what it spent before.
        assert!(used(&h) >= spent, "an edit reset the key's use");
        edit(
            &["keys", "update", &prefix, "--budget", "0.000001"],
            402,
            "sonnet",
        );
        edit(
            &["keys", "update", &prefix, "--budget", "none", "--rpm", "1"],
            429,
            "sonnet",
        );
        edit(
            &[
                "keys", "update", &prefix, "--rpm", "none", "--models", "haiku",
            ],
            403,
            "sonnet",
        );
        for serve in &serves {
            assert_eq!(ask(serve, &key, "haiku").0, 200);
        }
        let audit = ok(&h, &store, &["audit"]);
        let json = ok(&h, &store, &["audit", "--json", "--since", "2020-01-01"]);
        printed.push_str(&audit);
        printed.push_str(&json);
        assert!(!printed.contains(&key), "the key in an output: {printed}");
        let rows = common::json_lines(&json);
        let actions: Vec<&str> = rows.iter().map(|r| r["action"].as_str().unwrap()).collect();
        assert_eq!(
            actions,
            [
                "team.create",
                "key.create",
                "team.update",
                "team.update",
                "key.update",
                "key.update",
                "key.update"
            ],
            "{json}"
        );
        for r in &rows {
            assert_eq!(r["actor"], "tester", "{r}");
            assert!(r["origin"].as_str().unwrap().starts_with("cli@"), "{r}");
        }
        assert_eq!(
            rows[4]["detail"], "budget: $5/day → $0.000001/total",
            "{json}"
        );
        assert!(
            rows[1]["target"]
                .as_str()
                .unwrap()
                .contains(&format!("{prefix}…"))
        );
        assert!(
            audit.contains("key.update") && audit.contains("models: * → haiku"),
            "{audit}"
        );
        times
    })
    .await
    .unwrap();
    for t in &times {
        assert!(*t < Duration::from_millis(1_300), "{times:?}");
    }
    times
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_bind_two_serves_on_one_sqlite_file_within_a_second_each_audited_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("audit.db").display());
    let times = edits_bind_running_serves(store).await;
    eprintln!("sqlite: edit to effect {times:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_bind_two_serves_on_one_postgres_database_within_a_second_each_audited_once() {
    let Some(url) = switchyard_testkit::fresh_postgres_database("serve_audit_edits") else {
        return;
    };
    let times = edits_bind_running_serves(url).await;
    eprintln!("postgres: edit to effect {times:?}");
}

/// A key's budget, limits, team and name are changed by id or prefix; a wrong value is refused
/// with the sentence that says how to write it, and changes nothing.
#[test]
fn keys_update_refuses_what_does_not_parse_and_changes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let store = format!("sqlite:{}", h.join("u.db").display());
    let made = common::create_key(switchyard(h, &store), &["--name", "bot", "--rpm", "5"]);
    let id = made["id"].as_str().unwrap();
    for (args, says) in [
        (vec!["--rpm", "0"], "not a whole number above 0"),
        (vec!["--budget", "5/week"], "5/week"),
        (vec!["--team", "nope"], "no team `nope`"),
        (vec!["--expires", "2001-01-01"], "already past"),
        (vec![], "Say what to change"),
    ] {
        let mut all = vec!["keys", "update", id];
        all.extend(args);
        let (code, _, err) = run(h, &store, &all);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says), "{err}");
    }
    let shown = ok(h, &store, &["keys", "show", id, "--json"]);
    let shown: Value = serde_json::from_str(shown.lines().next().unwrap()).unwrap();
    assert_eq!(shown["rpm"], 5);
    let out = ok(
        h,
        &store,
        &[
            "keys",
            "update",
            id,
            "--name",
            "robot",
            "--max-parallel",
            "2",
        ],
    );
    assert!(
        out.contains("name: bot → robot; max_parallel: none → 2"),
        "{out}"
    );
    let (code, _, err) = run(h, &store, &["teams", "update", "nope", "--budget", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no team `nope`"), "{err}");
    let audit = ok(h, &store, &["audit"]);
    assert_eq!(audit.matches("key.update").count(), 1, "{audit}");
}
