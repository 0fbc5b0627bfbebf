//! Client keys, budgets and per-key limits through the real binary (SPEC R14.6, R14.7; issue
//! 24): `switchyard keys` and `teams` make them in the store, `switchyard serve` on that
//! store then requires one, and every refusal (missing, unknown, revoked, expired, admin key
//! for completions, a model outside the key's globs, `/metrics` without an admin key) is the
//! dialect's 401 or 403; a budget is never overspent by several `serve` processes on one
//! SQLite file or one PostgreSQL database sharing a key; an RPM limit is shared by three
//! processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchyard_testkit::{HttpResponse, MockServer, Reply};

mod common;

use common::serve::{Serve, route, sonnet};

const PROVIDER_KEY: &str = "sk-ant-serve-keys-test-0123456789";

/// The binary with a clean environment whose home is `home`, on `store`.
fn switchyard(home: &Path, store: &str) -> Command {
    common::switchyard_on(home, store, PROVIDER_KEY)
}

/// Runs `args` to its end: (exit code, stdout, stderr).
fn run(home: &Path, store: &str, args: &[&str]) -> (i32, String, String) {
    common::output(switchyard(home, store).args(args))
}

/// `keys create … --json`: the new key.
fn create_key(home: &Path, store: &str, args: &[&str]) -> String {
    let v = common::create_key(switchyard(home, store), args);
    assert!(v["id"].as_str().unwrap().starts_with("key_"), "{v}");
    let key = v["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with(v["prefix"].as_str().unwrap()), "{v}");
    key
}

/// `serve` on `store` with `config` and `extra` arguments; its stderr must never show the
/// provider key.
fn start_serve(home: &Path, store: &str, config: &Path, extra: &[&str]) -> Serve {
    Serve::start_hiding(switchyard(home, store), config, extra, PROVIDER_KEY)
}

/// One HTTP/1.1 request with `headers`: (status, response headers, body).
fn call(addr: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    common::serve::call(addr, path, headers, body, Duration::from_secs(30))
}

/// The three dialects: path, body for `model`, and how the key is sent.
fn dialects(model: &str) -> [(&'static str, String, &'static str); 3] {
    [
        (
            "/v1/chat/completions",
            format!(
                r#"{{"model": "{model}", "max_tokens": 1000, "messages": [{{"role": "user", "content": "Capital of France?"}}]}}"#
            ),
            "authorization",
        ),
        (
            "/v1/responses",
            format!(
                r#"{{"model": "{model}", "max_output_tokens": 1000, "input": "Capital of France?"}}"#
            ),
            "authorization",
        ),
        (
            "/v1/messages",
            format!(
                r#"{{"model": "{model}", "max_tokens": 1000, "messages": [{{"role": "user", "content": "Capital of France?"}}]}}"#
            ),
            "x-api-key",
        ),
    ]
}

fn key_header(how: &str, key: &str) -> (String, String) {
    if how == "authorization" {
        ("authorization".into(), format!("Bearer {key}"))
    } else {
        ("x-api-key".into(), key.into())
    }
}

/// The error's type and message in the body of `path`'s dialect.
fn error_of(path: &str, body: &str) -> (String, String) {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{body}"));
    if path.starts_with("/v1/messages") {
        assert_eq!(v["type"], "error", "{v}");
        (
            v["error"]["type"].as_str().unwrap().to_owned(),
            v["error"]["message"].as_str().unwrap().to_owned(),
        )
    } else {
        (
            v["error"]["type"].as_str().unwrap().to_owned(),
            v["error"]["message"].as_str().unwrap().to_owned(),
        )
    }
}

fn write_config(home: &Path, upstream: &str) -> std::path::PathBuf {
    let haiku = route("haiku", "anthropic", "claude-haiku-4-5", upstream);
    let gpt = route("gpt", "openai", "gpt-5", upstream);
    common::serve::write_config(home, &(sonnet(upstream) + &haiku + &gpt))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_required_and_every_refusal_is_the_dialects_401_or_403() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let store = format!("sqlite:{}", h.join("keys.db").display());
    let config = write_config(h, &upstream.url());

    // Without keys: loopback only, as before.
    let (code, _, err) = run(
        h,
        &store,
        &[
            "--config",
            config.to_str().unwrap(),
            "serve",
            "--listen",
            "0.0.0.0:0",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("switchyard keys create"), "{err}");

    let (code, out, err) = run(
        h,
        &store,
        &["teams", "create", "core", "--budget", "10/month"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let good = create_key(
        h,
        &store,
        &[
            "--name",
            "bot",
            "--team",
            "core",
            "--models",
            "sonnet,claude-*",
        ],
    );
    let admin = create_key(h, &store, &["--name", "ops", "--admin"]);
    let (code, _, err) = run(
        h,
        &store,
        &["keys", "create", "--name", "old", "--expires", "2020-01-01"],
    );
    assert_eq!(code, 2, "a past expiry is refused: {err}");
    assert!(err.contains("already past"), "{err}");
    let expired = create_key(h, &store, &["--name", "old", "--expires", "2099-01-01"]);
    expire_on_2020_01_01(&h.join("keys.db"), &expired[..12]);
    let revoked = create_key(h, &store, &["--name", "gone"]);
    let rotated = create_key(h, &store, &["--name", "turn"]);
    let (code, _, err) = run(h, &store, &["keys", "revoke", &revoked[..12]]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(h, &store, &["keys", "rotate", &rotated[..12], "--json"]);
    assert_eq!(code, 0, "{err}");
    let fresh: Value = serde_json::from_str(out.trim()).unwrap();
    let fresh = fresh["key"].as_str().unwrap().to_owned();
    let (code, _, err) = run(
        h,
        &store,
        &["keys", "create", "--name", "x", "--team", "nope"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("teams create nope"), "{err}");

    // The store keeps no key: only hashes and prefixes.
    let bytes = std::fs::read(h.join("keys.db")).unwrap();
    for k in [&good, &admin, &expired, &revoked, &rotated, &fresh] {
        assert!(
            !bytes.windows(k.len()).any(|w| w == k.as_bytes()),
            "a key is in the store"
        );
    }
    let (_, list, _) = run(h, &store, &["keys", "list", "--json"]);
    assert_eq!(list.lines().count(), 5, "{list}");
    assert!(
        !list.contains(&good) && list.contains(&good[..12]),
        "{list}"
    );
    let (_, table, _) = run(h, &store, &["keys", "list"]);
    assert!(
        table.contains("revoked") && table.contains("expired"),
        "{table}"
    );
    let (_, teams, _) = run(h, &store, &["teams", "show", "core", "--json"]);
    assert!(teams.contains("\"keys\":1"), "{teams}");

    // With keys, any address may be listened on; --no-auth stays loopback-only.
    let (code, _, err) = run(
        h,
        &store,
        &[
            "--config",
            config.to_str().unwrap(),
            "serve",
            "--no-auth",
            "--listen",
            "0.0.0.0:0",
        ],
    );
    assert_eq!(code, 2, "{err}");
    let wide = {
        let (h2, store2, config2) = (h.to_owned(), store.clone(), config.clone());
        tokio::task::spawn_blocking(move || {
            let mut cmd = switchyard(&h2, &store2);
            cmd.arg("--config")
                .arg(&config2)
                .args(["serve", "--listen", "0.0.0.0:0"]);
            cmd.stderr(Stdio::piped()).stdout(Stdio::null());
            let mut child = cmd.spawn().unwrap();
            let mut line = String::new();
            BufReader::new(child.stderr.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            let _ = child.kill();
            let _ = child.wait();
            line
        })
        .await
        .unwrap()
    };
    assert!(wide.contains("listening on http://0.0.0.0:"), "{wide}");

    let (h2, store2) = (h.to_owned(), store.clone());
    tokio::task::spawn_blocking(move || {
        let serve = start_serve(&h2, &store2, &config, &[]);
        let a = &serve.addr;
        assert_eq!(call(a, "/health", &[], "").0, 200);
        for (path, body, how) in dialects("sonnet") {
            let anthropic = path == "/v1/messages";
            let expect = |headers: &[(String, String)], status: u16, kind: &str, words: &str| {
                let hs: Vec<(&str, &str)> = headers
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str()))
                    .collect();
                let (got, _, text) = call(a, path, &hs, &body);
                assert_eq!(got, status, "{path} {words}: {text}");
                let (t, message) = error_of(path, &text);
                assert_eq!(t, kind, "{path}: {text}");
                assert!(message.contains(words), "{path}: {message}");
                if !anthropic {
                    let v: Value = serde_json::from_str(&text).unwrap();
                    let code = if status == 401 {
                        "invalid_api_key"
                    } else {
                        "permission_denied"
                    };
                    assert_eq!(v["error"]["code"], code, "{text}");
                }
                for k in [&good, &admin, &expired, &revoked, &fresh] {
                    assert!(!text.contains(k.as_str()), "a key in a response: {text}");
                }
            };
            let auth = "authentication_error";
            let perm = "permission_error";
            expect(&[], 401, auth, "needs a client key");
            expect(
                &[key_header(
                    how,
                    "sk-sy-000000000000000000000000000000000000000000000000",
                )],
                401,
                auth,
                "not one this gateway knows",
            );
            expect(&[key_header(how, &revoked)], 401, auth, "was revoked");
            expect(
                &[key_header(how, &expired)],
                401,
                auth,
                "expired on 2020-01-01",
            );
            expect(
                &[key_header(how, &rotated)],
                401,
                auth,
                "not one this gateway knows",
            );
            expect(&[key_header(how, &admin)], 403, perm, "admin key");
            // A model outside the key's globs is its 403, also on a route this gateway has
            // no provider key for (not the route's 500).
            for model in ["haiku", "gpt"] {
                let other = body.replace("\"sonnet\"", &format!("\"{model}\""));
                let (n, v) = key_header(how, &good);
                let (got, _, text) = call(a, path, &[(n.as_str(), v.as_str())], &other);
                assert_eq!(got, 403, "{model}: {text}");
                let wanted = format!("may not use the model `{model}`");
                assert!(error_of(path, &text).1.contains(&wanted), "{text}");
            }
            for key in [&good, &fresh] {
                let (n, v) = key_header(how, key);
                let (got, _, text) = call(a, path, &[(n.as_str(), v.as_str())], &body);
                assert_eq!(got, 200, "{path}: {text}");
            }
        }
        // /metrics: an admin key, nothing less.
        assert_eq!(call(a, "/metrics", &[], "").0, 401);
        let bearer = |k: &str| format!("Bearer {k}");
        // The models list shows a key only the models it may use, and one it may not is a 403.
        let (got, _, text) = call(a, "/v1/models", &[("authorization", &bearer(&good))], "");
        assert_eq!(got, 200, "{text}");
        let listed: Value = serde_json::from_str(&text).unwrap();
        let ids: Vec<&str> = (listed["data"].as_array().unwrap().iter())
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert!(ids.contains(&"sonnet"), "{ids:?}");
        assert!(
            !ids.iter().any(|id| *id == "haiku" || *id == "gpt"),
            "{ids:?}"
        );
        let (got, _, text) = call(
            a,
            "/v1/models/gpt",
            &[("authorization", &bearer(&good))],
            "",
        );
        assert_eq!(got, 403, "{text}");
        assert_eq!(
            call(a, "/metrics", &[("authorization", &bearer(&good))], "").0,
            403
        );
        let (status, _, text) = call(a, "/metrics", &[("authorization", &bearer(&admin))], "");
        assert_eq!(status, 200, "{text}");
        assert!(!text.contains(&admin) && !text.contains(&good), "{text}");
        // A key revoked while serving stops working within the cache's second.
        let (code, _, err) = run(&h2, &store2, &["keys", "revoke", &fresh[..12]]);
        assert_eq!(code, 0, "{err}");
        std::thread::sleep(Duration::from_millis(1_100));
        let (path, body, _) = &dialects("sonnet")[0];
        let (status, _, text) = call(a, path, &[("authorization", &bearer(&fresh))], body);
        assert_eq!(status, 401, "{text}");
    })
    .await
    .unwrap();

    // The request log names the key and team of each request.
    let (_, rows, _) = run(h, &store, &["requests", "--json"]);
    assert_eq!(rows.lines().count(), 6, "{rows}");
}

/// `n` requests at once for `key` spread over `serves` in `dialect` 0..3: the statuses.
fn burst(serves: &[Serve], key: &str, n: usize) -> Vec<(u16, String, String)> {
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let addr = serves[i % serves.len()].addr.clone();
            let key = key.to_owned();
            std::thread::spawn(move || {
                let (path, body, how) = dialects("sonnet")[i % 3].clone();
                let (name, value) = key_header(how, &key);
                let (status, head, text) = call(&addr, path, &[(&name, &value)], &body);
                (status, head, format!("{path} {text}"))
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// The check-then-increment race of LiteLLM's budgets (<https://github.com/BerriAI/litellm/issues/34732>:
/// concurrent requests all read the same below-budget spend and all pass; also
/// <https://github.com/BerriAI/litellm/issues/40095>, the same for a first request burst), and
/// budgets kept per replica (<https://github.com/maximhq/bifrost/issues/3547>): here the spend a
/// hold is decided on is read inside the hold's own atomic step, never from a cache
/// (<https://github.com/BerriAI/litellm/issues/27735>: a refusal on stale spend).
///
/// Three processes on `store`, 60 requests at once for a key whose budget fits 3 of the
/// reservations (an upstream slow enough that none settles before all are decided): at most 3
/// are admitted, the rest get the dialect's 402 naming what is left, and the settled spend is
/// the admitted requests' exact cost, under the budget. With `admission = "per_request"` exactly
/// 3 are admitted. Leased, a process's headroom may refuse the third for one renewal tick (SPEC
/// R14.17, guarantee 2), so 2 or 3 are. Returns (budget, admitted, settled).
async fn budget_race(store: &str, label: &str, mode: &str) -> (f64, usize, f64) {
    let upstream = MockServer::start(vec![
        // Long enough that none settles before all 60 are decided on a loaded machine: each
        // refusal of a tight leased slice asks the store.
        Reply::new(HttpResponse::fixture("anthropic_text"))
            .delay_before(Duration::from_millis(4_000)),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let config = write_config(&h, &upstream.url());
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("[serve]\nadmission = \"{mode}\"\n{text}")).unwrap();
    // Each reservation: ~10 input tokens at $3/M plus 1,000 output at $15/M, just over $0.015.
    let budget = 0.05;
    let key = create_key(&h, store, &["--name", label, "--budget", "0.05/day"]);
    let store = store.to_owned();
    let (h2, s2) = (h.clone(), store.clone());
    let results = tokio::task::spawn_blocking(move || {
        let serves: Vec<Serve> = (0..3)
            .map(|_| start_serve(&h2, &s2, &config, &[]))
            .collect();
        let results = burst(&serves, &key, 60);
        // Each process writes its records in batches once an answer ends: wait for them, on a
        // loaded machine too, before the processes are killed.
        let admitted = results.iter().filter(|r| r.0 == 200).count();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            let (_, rows, _) = run(&h2, &s2, &["requests", "--json"]);
            if rows.lines().count() >= admitted {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(serves);
        results
    })
    .await
    .unwrap();
    let admitted = results.iter().filter(|r| r.0 == 200).count();
    for (status, head, text) in &results {
        assert!(*status == 200 || *status == 402, "{status} {text}");
        if *status == 402 {
            assert!(
                text.contains("budget of $0.0500 has $0.0") && text.contains("resets at"),
                "{text}"
            );
            assert!(head.contains("retry-after:"), "{head}");
            assert!(
                text.contains("billing_error") || text.contains("insufficient_quota"),
                "{text}"
            );
        }
    }
    let fits = if mode == "per_request" { 3..=3 } else { 2..=3 };
    assert!(
        fits.contains(&admitted),
        "{admitted} admitted ({mode}): the reservations fit 3 times into the budget"
    );
    let rows = common::requests(switchyard(&h, &store));
    assert_eq!(rows.len(), admitted, "{rows:?}");
    let settled: f64 = rows.iter().map(|r| r["cost_usd"].as_f64().unwrap()).sum();
    assert!(
        rows.iter()
            .all(|r| r["key_id"].as_str().is_some_and(|k| k.starts_with("key_"))),
        "{rows:?}"
    );
    let used = common::used(switchyard(&h, &store));
    assert!(
        (used - settled).abs() < 1e-9,
        "the key's use {used} is its settled spend {settled}"
    );
    assert!(settled <= budget, "{settled} > {budget}");
    // `switchyard usage` totals equal the rows.
    let (code, usage, err) = run(&h, &store, &["usage", "--by", "key", "--json"]);
    assert_eq!(code, 0, "{err}");
    let usage: Value = serde_json::from_str(usage.trim()).unwrap();
    assert_eq!(usage["requests"].as_u64(), Some(admitted as u64), "{usage}");
    assert!(
        (usage["cost_usd"].as_f64().unwrap() - settled).abs() < 1e-9,
        "{usage}"
    );
    assert!(usage["label"].as_str().unwrap().contains(label), "{usage}");
    (budget, admitted, settled)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_on_one_sqlite_file_never_overspend_a_key() {
    for mode in ["leased", "per_request"] {
        let dir = tempfile::tempdir().unwrap();
        let store = format!("sqlite:{}", dir.path().join("race.db").display());
        let (budget, admitted, settled) = budget_race(&store, "race-sqlite", mode).await;
        eprintln!(
            "sqlite budget race ({mode}): budget ${budget}, admitted {admitted}, settled ${settled:.6}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_on_one_postgres_database_never_overspend_a_key() {
    for mode in ["leased", "per_request"] {
        let name = format!("serve_keys_race_{mode}");
        let Some(url) = switchyard_testkit::fresh_postgres_database(&name) else {
            return;
        };
        let (budget, admitted, settled) = budget_race(&url, "race-pg", mode).await;
        eprintln!(
            "postgres budget race ({mode}): budget ${budget}, admitted {admitted}, settled ${settled:.6}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rpm_limit_is_shared_by_three_processes() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let store = format!("sqlite:{}", h.join("rpm.db").display());
    let config = write_config(&h, &upstream.url());
    let key = create_key(&h, &store, &["--name", "rpm", "--rpm", "5"]);
    let results = tokio::task::spawn_blocking(move || {
        let serves: Vec<Serve> = (0..3)
            .map(|_| start_serve(&h, &store, &config, &[]))
            .collect();
        (0..12)
            .map(|i| {
                let (path, body, how) = dialects("sonnet")[i % 3].clone();
                let (name, value) = key_header(how, &key);
                call(&serves[i % 3].addr, path, &[(&name, &value)], &body)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let ok = results.iter().filter(|r| r.0 == 200).count();
    assert_eq!(ok, 5, "{results:?}");
    for (status, head, text) in results.iter().filter(|r| r.0 != 200) {
        assert_eq!(*status, 429, "{text}");
        // The minute's first slot leaves it a minute after it was taken, not in a second.
        let wait: u64 = (head.lines())
            .find_map(|l| l.strip_prefix("retry-after: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{head}"));
        assert!((30..=60).contains(&wait), "retry-after {wait}: {head}");
        assert!(
            text.contains("requests_per_minute") && text.contains("rate_limit"),
            "{text}"
        );
    }
    assert_eq!(upstream.request_count(), 5);
}

/// `[serve] admission = "per_request"`: one hold in the store per request (SPEC R14.7); a
/// hold its killed process never settled is charged at its reservation once its lease ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_mid_stream_leaves_its_hold_only_until_the_lease_ends() {
    let upstream = MockServer::start(vec![
        Reply::new(HttpResponse::fixture("anthropic_text")),
        Reply::new(HttpResponse::fixture("anthropic_text")).stall_at(900, Duration::from_secs(30)),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let store = format!("sqlite:{}", h.join("kill.db").display());
    let config = write_config(&h, &upstream.url());
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("[serve]\nadmission = \"per_request\"\n{text}"),
    )
    .unwrap();
    let key = create_key(&h, &store, &["--name", "killed", "--budget", "1/day"]);
    let (h2, s2, k2) = (h.clone(), store.clone(), key.clone());
    let (serve, settled) = tokio::task::spawn_blocking(move || {
        let serve = start_serve(&h2, &s2, &config, &["--hold-lease", "2"]);
        let (path, body, _) = &dialects("sonnet")[0];
        let auth = format!("Bearer {k2}");
        let (status, _, text) = call(&serve.addr, path, &[("authorization", &auth)], body);
        assert_eq!(status, 200, "{text}");
        // Its record is written once the answer ended.
        std::thread::sleep(Duration::from_millis(300));
        let settled = common::used(switchyard(&h2, &s2));
        let addr = serve.addr.clone();
        let streamed = body.replace("\"max_tokens\"", "\"stream\": true, \"max_tokens\"");
        std::thread::spawn(move || {
            let _ = std::panic::catch_unwind(|| {
                call(
                    &addr,
                    "/v1/chat/completions",
                    &[("authorization", &auth)],
                    &streamed,
                )
            });
        });
        (serve, settled)
    })
    .await
    .unwrap();
    tokio::time::timeout(Duration::from_secs(10), upstream.wait_for_requests(2))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut serve = serve;
    // SIGKILL: nothing settles the stream's hold.
    serve.child.kill().unwrap();
    serve.child.wait().unwrap();
    let (h3, s3) = (h.clone(), store.clone());
    let held = tokio::task::spawn_blocking(move || common::used(switchyard(&h3, &s3)))
        .await
        .unwrap();
    assert!(
        settled > 0.001 && settled < 0.003,
        "the first request settled at its cost: {settled}"
    );
    assert!(
        held > 0.015,
        "the killed stream's reservation still counts: {held}"
    );
    // Past its lease the hold stops counting as a hold; the next `serve` charges it at its
    // reservation as a lost request (R14.18).
    let (h4, s4, c4) = (h.clone(), store.clone(), h.join("serve.toml"));
    let after = tokio::task::spawn_blocking(move || {
        let _again = start_serve(&h4, &s4, &c4, &["--hold-lease", "2"]);
        let start = Instant::now();
        loop {
            let (_, rows, _) = run(&h4, &s4, &["requests", "--json"]);
            if rows.contains("\"lost\"") || start.elapsed() > Duration::from_secs(10) {
                return common::used(switchyard(&h4, &s4));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    })
    .await
    .unwrap();
    assert!(
        (after - held).abs() < 1e-9,
        "past its lease the killed stream is charged its reservation: {after} vs {held}"
    );
}

/// Leased admission (SPEC R14.17, the default): a process killed while it holds a slice of a
/// key's budget, with a stream in flight, strands that slice only until its lease lapses
/// unrenewed. A second process is refused what the slice holds at once, and admitted after the
/// lease (2 s here); nothing is overspent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_holding_a_slice_strands_it_only_until_its_lease_ends() {
    let upstream = MockServer::start(vec![
        Reply::new(HttpResponse::fixture("anthropic_text")).stall_at(900, Duration::from_secs(30)),
        Reply::new(HttpResponse::fixture("anthropic_text")),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let store = format!("sqlite:{}", h.join("slice.db").display());
    let config = write_config(&h, &upstream.url());
    // Each reservation is just over $0.015: the budget fits one in flight and not a second
    // beside the first one's slice (its 10% headroom). Once the slice lapses the stream is
    // charged as lost (R14.18), and a second reservation still fits beside it.
    let key = create_key(&h, &store, &["--name", "sliced", "--budget", "0.032/day"]);
    let (path, body, _) = dialects("sonnet")[0].clone();
    let auth = format!("Bearer {key}");
    let streamed = body.replace("\"max_tokens\"", "\"stream\": true, \"max_tokens\"");
    let (h2, s2, c2, a2) = (h.clone(), store.clone(), config.clone(), auth.clone());
    let killed = tokio::task::spawn_blocking(move || {
        let serve = start_serve(&h2, &s2, &c2, &["--hold-lease", "2"]);
        let addr = serve.addr.clone();
        std::thread::spawn(move || {
            let _ = std::panic::catch_unwind(|| {
                call(
                    &addr,
                    "/v1/chat/completions",
                    &[("authorization", &a2)],
                    &streamed,
                )
            });
        });
        serve
    })
    .await
    .unwrap();
    tokio::time::timeout(Duration::from_secs(10), upstream.wait_for_requests(1))
        .await
        .unwrap();
    let mut killed = killed;
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    let (h3, s3, c3, a3) = (h.clone(), store.clone(), config.clone(), auth.clone());
    let (refused, admitted, waited) = tokio::task::spawn_blocking(move || {
        let other = start_serve(&h3, &s3, &c3, &["--hold-lease", "2"]);
        let headers = [("authorization", a3.as_str())];
        let refused = call(&other.addr, path, &headers, &body);
        let start = Instant::now();
        loop {
            let answer = call(&other.addr, path, &headers, &body);
            if answer.0 == 200 || start.elapsed() > Duration::from_secs(10) {
                return (refused, answer, start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
    assert_eq!(
        refused.0, 402,
        "the killed process's slice still counts: {refused:?}"
    );
    assert!(refused.2.contains("budget of $0.0320"), "{refused:?}");
    assert_eq!(
        admitted.0, 200,
        "admitted once the slice lapsed: {admitted:?}"
    );
    assert!(
        waited < Duration::from_secs(4),
        "the slice lapsed within its 2 s lease and a renewal tick: {waited:?}"
    );
    assert_eq!(upstream.request_count(), 2);
}

/// A reservation that does not starve an agent (SPEC R14.7; the $25 budget at 429 of
/// <https://github.com/BerriAI/litellm/issues/38647>): a request whose output limit the budget
/// cannot pay, but whose input and a shorter answer it can, is sent with the output limit that
/// fits, named in `x-switchyard-max-tokens`; one whose budget pays less than 1,024 tokens of
/// answer is refused as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_limit_the_budget_cannot_pay_is_lowered_to_what_it_can() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let store = format!("sqlite:{}", h.join("fit.db").display());
    let config = write_config(&h, &upstream.url());
    let roomy = create_key(&h, &store, &["--name", "roomy", "--budget", "0.05/day"]);
    let tight = create_key(&h, &store, &["--name", "tight", "--budget", "0.01/day"]);
    let body = r#"{"model": "sonnet", "max_tokens": 32000, "messages": [{"role": "user", "content": "Capital of France?"}]}"#;
    let (lowered, refused) = tokio::task::spawn_blocking(move || {
        let serve = start_serve(&h, &store, &config, &[]);
        let ask = |key: &str| {
            let auth = format!("Bearer {key}");
            call(
                &serve.addr,
                "/v1/chat/completions",
                &[("authorization", &auth)],
                body,
            )
        };
        (ask(&roomy), ask(&tight))
    })
    .await
    .unwrap();
    assert_eq!(lowered.0, 200, "{lowered:?}");
    let named = (lowered.1.lines())
        .find_map(|l| l.strip_prefix("x-switchyard-max-tokens: "))
        .unwrap_or_else(|| panic!("{}", lowered.1));
    assert!(
        named.ends_with("lowered from 32000 to fit the budget left"),
        "{named}"
    );
    let sent: u64 = named.split(';').next().unwrap().parse().unwrap();
    // $0.05 pays about 10 input tokens at $3/M and 3,331 output tokens at $15/M.
    assert!((3_000..3_334).contains(&sent), "{named}");
    let request = upstream.requests()[0].json();
    assert_eq!(request["max_tokens"].as_u64(), Some(sent), "{request}");
    assert_eq!(refused.0, 402, "{refused:?}");
    assert!(refused.2.contains("budget of $0.0100"), "{refused:?}");
    assert_eq!(upstream.request_count(), 1);
}

/// A `serve` started on a store without keys requires one from the first key made on (read
/// again within a second, no restart); a route's own `reserve_usd` is what a request to a
/// model without prices reserves; `/metrics` labels each series by the key's prefix and team,
/// never the key (SPEC R14.6, R14.7, R14.9).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_made_while_serving_are_required_a_routes_reserve_is_held_and_metrics_name_the_prefix()
{
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let store = format!("sqlite:{}", h.join("late.db").display());
    let config = h.join("serve.toml");
    let url = upstream.url();
    std::fs::write(
        &config,
        format!(
            "[serve.routes.sonnet]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{url}\"\n\
             [serve.routes.mystery]\nprovider = \"anthropic\"\nmodel = \"claude-made-up-9\"\nbase_url = \"{url}\"\nreserve_usd = 0.25\n"
        ),
    )
    .unwrap();
    let result = tokio::task::spawn_blocking(move || {
        let serve = start_serve(&h, &store, &config, &[]);
        let (path, body, _) = dialects("sonnet")[0].clone();
        let (status, _, text) = call(&serve.addr, path, &[], &body);
        assert_eq!(status, 200, "no key exists yet: {text}");
        let (code, _, err) = run(&h, &store, &["teams", "create", "core"]);
        assert_eq!(code, 0, "{err}");
        let key = create_key(
            &h,
            &store,
            &["--name", "late", "--team", "core", "--budget", "0.1/day"],
        );
        let admin = create_key(&h, &store, &["--name", "ops", "--admin"]);
        // Within a second or so of the first key, a request without one is refused.
        let mut refused = None;
        for _ in 0..50 {
            let (status, _, text) = call(&serve.addr, path, &[], &body);
            if status == 401 {
                refused = Some(text);
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let refused = refused.expect("keys are required once one exists");
        assert!(refused.contains("needs a client key"), "{refused}");
        let auth = format!("Bearer {key}");
        let (status, _, text) = call(&serve.addr, path, &[("authorization", &auth)], &body);
        assert_eq!(status, 200, "{text}");
        // No prices: the route's reservation ($0.25) is past the key's $0.10.
        let (path, mystery, _) = dialects("mystery")[0].clone();
        let (status, _, text) = call(&serve.addr, path, &[("authorization", &auth)], &mystery);
        assert_eq!(status, 402, "{text}");
        assert!(text.contains("reservation of $0.2500"), "{text}");
        std::thread::sleep(Duration::from_millis(300));
        let bearer = format!("Bearer {admin}");
        let (status, _, metrics) = call(&serve.addr, "/metrics", &[("authorization", &bearer)], "");
        assert_eq!(status, 200, "{metrics}");
        (metrics, key)
    })
    .await
    .unwrap();
    let (metrics, key) = result;
    assert!(!metrics.contains(&key), "{metrics}");
    let prefix = &key[..12];
    let labelled = format!(
        "switchyard_gateway_cost_usd_total{{gen_ai_provider_name=\"anthropic\",gen_ai_response_model=\"claude-sonnet-4-5\",switchyard_key_prefix=\"{prefix}\",switchyard_team=\"core\"}}"
    );
    assert!(metrics.contains(&labelled), "{labelled} in {metrics}");
    let counted = metrics.lines().any(|l| {
        l.starts_with("gen_ai_server_request_duration_seconds_count{")
            && l.contains(&format!("switchyard_key_prefix=\"{prefix}\""))
            && l.contains("switchyard_team=\"core\"")
            && l.ends_with(" 1")
    });
    assert!(counted, "{metrics}");
}

/// A whole secret given where `keys show|revoke|rotate` want an id or a prefix is refused
/// without being echoed (SPEC R10.5; the newcomer check found `There is no key \`sk-sy-…\``
/// printing it whole), and a prefix pasted from `keys list` with its `…` finds the key.
#[test]
fn a_secret_given_to_keys_show_is_never_echoed() {
    let home = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", home.path().join("keys.db").display());
    let key = create_key(home.path(), &store, &["--name", "alice"]);
    for cmd in ["show", "revoke", "rotate"] {
        let (code, out, err) = run(home.path(), &store, &["keys", cmd, &key]);
        assert_ne!(code, 0, "{cmd}: {out}{err}");
        assert!(
            !out.contains(&key) && !err.contains(&key),
            "{cmd}: {out}{err}"
        );
        assert!(err.contains(&format!("{}…", &key[..12])), "{cmd}: {err}");
    }
    let prefix = format!("{}…", &key[..12]);
    let (code, out, err) = run(home.path(), &store, &["keys", "show", &prefix]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("alice") && !out.contains(&key), "{out}");
}

/// `keys show` prints the key's whole record, every field on a line of its own, and never the
/// secret; `--json` prints the same record as one object (issue 46: it printed the list's row).
#[test]
fn keys_show_prints_every_field_of_the_record_one_a_line() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let store = format!("sqlite:{}", h.join("keys.db").display());
    let (code, out, err) = run(h, &store, &["teams", "create", "core"]);
    assert_eq!(code, 0, "{out}{err}");
    let key = create_key(
        h,
        &store,
        &[
            "--name",
            "ci-bot",
            "--team",
            "core",
            "--models",
            "claude-*",
            "--models",
            "gpt-4o",
            "--budget",
            "5/day",
            "--rpm",
            "60",
            "--tpm",
            "90000",
            "--max-parallel",
            "2",
            "--expires",
            "2099-01-31",
        ],
    );
    let (code, out, err) = run(h, &store, &["keys", "show", &key[..12]]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains(&key) && !err.contains(&key), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    let value = |label: &str| -> String {
        let found: Vec<&str> = (lines.iter())
            .filter_map(|l| l.strip_prefix(&format!("{label}:")))
            .map(str::trim)
            .collect();
        assert_eq!(found.len(), 1, "`{label}` once: {out}");
        found[0].to_owned()
    };
    assert!(value("id").starts_with("key_"), "{out}");
    assert_eq!(value("prefix"), format!("{}…", &key[..12]));
    assert_eq!(value("name"), "ci-bot");
    assert_eq!(value("team"), "core");
    assert_eq!(value("owner"), "-");
    assert_eq!(value("models"), "claude-*, gpt-4o");
    assert_eq!(value("budget"), "$5/day");
    assert_eq!(value("used"), "$0.0000 this day");
    assert_eq!(value("rpm"), "60");
    assert_eq!(value("tpm"), "90000");
    assert_eq!(value("max parallel"), "2");
    assert_eq!(value("expires"), "2099-01-31T00:00:00Z");
    assert_eq!(value("admin"), "no");
    assert!(value("created").ends_with('Z'), "{out}");
    assert_eq!(value("revoked"), "-");
    assert_eq!(value("state"), "active");
    assert_eq!(
        lines.len(),
        16,
        "one line per field and nothing else: {out}"
    );

    let (code, out, err) = run(h, &store, &["keys", "show", &key[..12], "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert!(!out.contains(&key), "{out}");
    assert_eq!(v["name"], "ci-bot");
    assert_eq!(v["budget_usd"], 5.0);
    assert_eq!(v["budget_window"], "day");
    assert_eq!(v["models"], serde_json::json!(["claude-*", "gpt-4o"]));
    assert_eq!(v["max_parallel"], 2);
    for field in [
        "id",
        "prefix",
        "team",
        "owner",
        "used_usd",
        "rpm",
        "tpm",
        "expires_ms",
        "admin",
        "created_ms",
        "revoked_ms",
    ] {
        assert!(v.get(field).is_some(), "`{field}` in {v}");
    }
}

/// Backdates the key of `prefix` to have expired on 2020-01-01, which `keys create` refuses.
fn expire_on_2020_01_01(db: &Path, prefix: &str) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let changed = conn
        .execute(
            "UPDATE client_keys SET expires_ms = 1577836800000 WHERE prefix = ?1",
            [prefix],
        )
        .unwrap();
    assert_eq!(changed, 1, "no key with the prefix {prefix}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_different_credentials_are_a_401_and_one_key_sent_twice_is_served() {
    // Issue 46: two Authorization headers were accepted silently, the first winning.
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let store = format!("sqlite:{}", h.join("keys.db").display());
    let config = write_config(&h, &upstream.url());
    let key = create_key(&h, &store, &["--name", "bot"]);
    let other = create_key(&h, &store, &["--name", "other"]);
    let serve = start_serve(&h, &store, &config, &[]);
    let addr = serve.addr.clone();
    tokio::task::spawn_blocking(move || {
        let (path, body, _) = &dialects("sonnet")[2];
        let (a, b) = (format!("Bearer {key}"), format!("Bearer {other}"));
        for headers in [
            vec![("authorization", a.as_str()), ("authorization", b.as_str())],
            vec![("authorization", a.as_str()), ("x-api-key", other.as_str())],
        ] {
            let (status, _, text) = call(&addr, path, &headers, body);
            assert_eq!(status, 401, "{text}");
            let (kind, message) = error_of(path, &text);
            assert_eq!(kind, "authentication_error", "{text}");
            assert!(message.contains("two different credentials"), "{text}");
            assert!(!text.contains(&key) && !text.contains(&other), "{text}");
        }
        let same = [("authorization", a.as_str()), ("x-api-key", key.as_str())];
        let (status, _, text) = call(&addr, path, &same, body);
        assert_eq!(status, 200, "{text}");
    })
    .await
    .unwrap();
}
