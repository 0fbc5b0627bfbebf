//! Users through the binary (SPEC R14.6b, R14.7a, issue 44): a user's budget counts every key
//! they own, raced by three `serve` processes with two of the user's keys, never passed in
//! either admission mode; a disabled owner's key is refused by another process within a second.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchyard_core::store::{
    Actor, Budget, PgStore, Role, SignIn, SqliteStore, TaskStore, is_postgres_url,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply};

mod common;

use common::serve::{Serve, sonnet};

const PROVIDER_KEY: &str = "sk-ant-serve-users-test-0123456789";

fn switchyard(home: &Path, store: &str) -> Command {
    common::switchyard_on(home, store, PROVIDER_KEY)
}

/// Runs `args` to its end: (exit code, stdout, stderr).
fn run(home: &Path, store: &str, args: &[&str]) -> (i32, String, String) {
    common::output(switchyard(home, store).args(args))
}

/// The store `serve` will open, opened here to sign a user in as the dashboard would.
async fn open(store: &str) -> Arc<dyn TaskStore> {
    if is_postgres_url(store) {
        return Arc::new(PgStore::connect(store).await.unwrap());
    }
    let path = store.strip_prefix("sqlite:").unwrap();
    Arc::new(SqliteStore::open_file(Path::new(path)).unwrap())
}

/// Jane's sign-in as a member with `budget`: her user id.
async fn sign_in_jane(store: &str, budget: &str) -> String {
    sign_in_jane_ago(store, budget, Duration::ZERO).await
}

/// Jane's sign-in `ago`.
async fn sign_in_jane_ago(store: &str, budget: &str, ago: Duration) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - ago.as_millis() as i64;
    let sign_in = SignIn {
        issuer: "https://idp.example".into(),
        subject: "jane-0001".into(),
        email: Some("jane@example.com".into()),
        name: Some("Jane".into()),
        role: Role::Member,
        team: None,
        models: vec![],
        budget: Budget::parse(budget),
        at_ms: now,
    };
    let by = Actor {
        who: "jane@example.com".into(),
        origin: "127.0.0.1".into(),
    };
    let store = open(store).await;
    store.sign_in_user(&sign_in, &by).await.unwrap().id
}

/// `keys create --owner USER … --json`: the new key.
fn owned_key(home: &Path, store: &str, name: &str, owner: &str) -> String {
    let v = common::create_key(switchyard(home, store), &["--name", name, "--owner", owner]);
    v["key"].as_str().unwrap().to_owned()
}

/// `serve` on `store` with `config`.
fn start_serve(home: &Path, store: &str, config: &Path) -> Serve {
    Serve::start(switchyard(home, store), config, &[])
}

/// One Messages request with `key`: (status, response headers, body).
fn call(addr: &str, key: &str) -> (u16, String, String) {
    let body = r#"{"model": "sonnet", "max_tokens": 1000, "messages": [{"role": "user", "content": "Capital of France?"}]}"#;
    let wait = Duration::from_secs(30);
    common::serve::call(addr, "/v1/messages", &[("x-api-key", key)], body, wait)
}

fn write_config(home: &Path, upstream: &str, mode: &str) -> std::path::PathBuf {
    let text = format!("[serve]\nadmission = \"{mode}\"\n{}", sonnet(upstream));
    common::serve::write_config(home, &text)
}

/// Three processes on `store`, 60 requests at once spread over two keys of one user whose
/// budget fits 3 reservations (neither key has a budget of its own): at most 3 are admitted,
/// the rest get 402 naming the user's budget, and the settled spend, which `users show` reports,
/// stays under it. Returns (admitted, settled).
async fn user_budget_race(store: &str, mode: &str) -> (usize, f64) {
    let upstream = MockServer::start(vec![
        Reply::new(HttpResponse::fixture("anthropic_text"))
            .delay_before(Duration::from_millis(4_000)),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let config = write_config(&h, &upstream.url(), mode);
    // Each reservation: ~10 input tokens at $3/M plus 1,000 output at $15/M, just over $0.015.
    let user = sign_in_jane(store, "0.05/day").await;
    let keys = [
        owned_key(&h, store, "laptop", &user),
        owned_key(&h, store, "ci", &user),
    ];
    let (h2, s2) = (h.clone(), store.to_owned());
    let results = tokio::task::spawn_blocking(move || {
        let serves: Vec<Serve> = (0..3).map(|_| start_serve(&h2, &s2, &config)).collect();
        let handles: Vec<_> = (0..60)
            .map(|i| {
                let addr = serves[i % 3].addr.clone();
                let key = keys[i % 2].clone();
                std::thread::spawn(move || call(&addr, &key))
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        // Let each process write its records (they are written once an answer ends).
        std::thread::sleep(Duration::from_millis(500));
        drop(serves);
        results
    })
    .await
    .unwrap();
    let admitted = results.iter().filter(|r| r.0 == 200).count();
    for (status, head, text) in results.iter().filter(|r| r.0 != 200) {
        assert_eq!(*status, 402, "{text}");
        assert!(
            text.contains("The user jane@example.com's budget of $0.0500 has $0.0"),
            "{text}"
        );
        assert!(head.contains("retry-after:"), "{head}");
    }
    let fits = if mode == "per_request" { 3..=3 } else { 2..=3 };
    assert!(fits.contains(&admitted), "{admitted} admitted ({mode})");
    let rows = common::requests(switchyard(&h, store));
    assert_eq!(rows.len(), admitted, "{rows:?}");
    let settled: f64 = rows.iter().map(|r| r["cost_usd"].as_f64().unwrap()).sum();
    assert!(settled <= 0.05, "{settled} > $0.05");
    let (code, shown, err) = run(&h, store, &["users", "show", &user, "--json"]);
    assert_eq!(code, 0, "{err}");
    let shown: Value = serde_json::from_str(shown.trim()).unwrap();
    let used = shown["used_usd"].as_f64().unwrap();
    assert!(
        (used - settled).abs() < 1e-9,
        "used {used}, settled {settled}"
    );
    assert_eq!(shown["keys"], 2, "{shown}");
    let (code, usage, err) = run(&h, store, &["usage", "--by", "user", "--json"]);
    assert_eq!(code, 0, "{err}");
    let usage: Value = serde_json::from_str(usage.trim()).unwrap();
    assert_eq!(usage["group"], user.as_str(), "{usage}");
    assert_eq!(usage["requests"].as_u64(), Some(admitted as u64), "{usage}");
    let (code, _, err) = run(&h, store, &["store", "check"]);
    assert_eq!(code, 0, "the user's running totals equal the ledger: {err}");
    (admitted, settled)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_budget_raced_by_three_processes_with_two_keys_is_never_passed_on_sqlite() {
    for mode in ["leased", "per_request"] {
        let dir = tempfile::tempdir().unwrap();
        let store = format!("sqlite:{}", dir.path().join("users.db").display());
        let (admitted, settled) = user_budget_race(&store, mode).await;
        eprintln!(
            "sqlite user budget race ({mode}): budget $0.05, admitted {admitted}, settled ${settled:.6}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_budget_raced_by_three_processes_with_two_keys_is_never_passed_on_postgres() {
    for mode in ["leased", "per_request"] {
        let name = format!("serve_users_race_{mode}");
        let Some(url) = switchyard_testkit::fresh_postgres_database(&name) else {
            return;
        };
        let (admitted, settled) = user_budget_race(&url, mode).await;
        eprintln!(
            "postgres user budget race ({mode}): budget $0.05, admitted {admitted}, settled ${settled:.6}"
        );
    }
}

/// `users update --disable` on the CLI: the other process refuses the user's key with a 403
/// within a second of the command's end, and `--enable` lets it through again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_owners_key_is_refused_within_a_second() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let store = format!("sqlite:{}", h.join("disable.db").display());
    let config = write_config(&h, &upstream.url(), "leased");
    let user = sign_in_jane(&store, "5/day").await;
    let key = owned_key(&h, &store, "laptop", &user);
    let waits = tokio::task::spawn_blocking(move || {
        let serves: Vec<Serve> = (0..2).map(|_| start_serve(&h, &store, &config)).collect();
        let mut waits = Vec::new();
        for (flag, want) in [("--disable", 403), ("--enable", 200)] {
            for s in &serves {
                assert_ne!(call(&s.addr, &key).0, want, "before {flag}");
            }
            let (code, out, err) = run(&h, &store, &["users", "update", &user, flag]);
            assert_eq!(code, 0, "{err}");
            assert!(out.contains("until the user's next sign-in"), "{out}");
            let done = Instant::now();
            loop {
                let (status, _, text) = call(&serves[1].addr, &key);
                if status == want {
                    if want == 403 {
                        assert!(
                            text.contains("belongs to a user who was disabled"),
                            "{text}"
                        );
                    }
                    break;
                }
                assert!(
                    done.elapsed() < Duration::from_secs(3),
                    "{flag}: still {status}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            waits.push(done.elapsed());
        }
        waits
    })
    .await
    .unwrap();
    eprintln!(
        "a disable showed on the other process after {:?}, an enable after {:?}",
        waits[0], waits[1]
    );
    for wait in waits {
        assert!(wait < Duration::from_millis(1_300), "{wait:?}");
    }
}

/// SPEC R14.6b's membership bound through the binary: with `[serve.oidc] membership_hours = 1`
/// a key whose owner last signed in two hours ago is refused, with the sentence that says how
/// to renew it; a sign-in renews it; without `[serve.oidc]` there is no bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_whose_owner_has_not_signed_in_within_the_membership_bound_is_refused() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let store = format!("sqlite:{}", h.join("membership.db").display());
    let plain = write_config(&h, &upstream.url(), "leased");
    let text = std::fs::read_to_string(&plain).unwrap();
    let bound = h.join("bound.toml");
    let oidc = "[serve.oidc]\nissuer = \"https://idp.example\"\nclient_id = \"switchyard\"\n\
                redirect_base = \"http://127.0.0.1:4141\"\nmembership_hours = 1\n\
                [serve.oidc.groups.\"llm-users\"]\nrole = \"member\"\n";
    std::fs::write(&bound, format!("{text}{oidc}")).unwrap();
    let user = sign_in_jane_ago(&store, "5/day", Duration::from_secs(2 * 3600)).await;
    let key = owned_key(&h, &store, "laptop", &user);
    let (h2, s2, k2, b2) = (h.clone(), store.clone(), key.clone(), bound.clone());
    let (stale, open) = tokio::task::spawn_blocking(move || {
        let stale = call(&start_serve(&h2, &s2, &b2).addr, &k2);
        let open = call(&start_serve(&h2, &s2, &plain).addr, &k2);
        (stale, open)
    })
    .await
    .unwrap();
    assert_eq!(stale.0, 403, "{stale:?}");
    assert!(
        stale.2.contains("sign in to the dashboard again"),
        "{stale:?}"
    );
    assert_eq!(
        open.0, 200,
        "without [serve.oidc] there is no bound: {open:?}"
    );
    sign_in_jane(&store, "5/day").await;
    let renewed =
        tokio::task::spawn_blocking(move || call(&start_serve(&h, &store, &bound).addr, &key))
            .await
            .unwrap();
    assert_eq!(renewed.0, 200, "a sign-in renews the key: {renewed:?}");
}

/// `email`'s first sign-in, subject `subject`, as a member with `budget`: their user id.
async fn sign_in_person(store: &str, subject: &str, email: &str, budget: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let sign_in = SignIn {
        issuer: "https://idp.example".into(),
        subject: subject.into(),
        email: Some(email.into()),
        name: None,
        role: Role::Member,
        team: None,
        models: vec![],
        budget: Budget::parse(budget),
        at_ms: now,
    };
    let by = Actor {
        who: email.into(),
        origin: "127.0.0.1".into(),
    };
    let store = open(store).await;
    store.sign_in_user(&sign_in, &by).await.unwrap().id
}

/// `usage --by user --json`: one object per user.
fn usage_by_user(home: &Path, store: &str) -> Vec<Value> {
    let (code, out, err) = run(home, store, &["usage", "--by", "user", "--json"]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `keys update --owner` (SPEC R14.6b, BerriAI/litellm#14498): an unknown or disabled user is
/// refused and changes nothing; a move to Joe, whose $0.01 budget fits no reservation, is a
/// 402 naming Joe's budget on the running process within a second; what the key spent before
/// stays Jane's in `users show` and in `usage --by user`, which names each user by email
/// beside the id; `--owner none` frees it of every user budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keys_owner_changed_on_the_cli_moves_its_spend_to_the_new_owners_budget() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_owned();
    let store = format!("sqlite:{}", h.join("owner.db").display());
    let config = write_config(&h, &upstream.url(), "leased");
    let jane = sign_in_jane(&store, "5/day").await;
    let joe = sign_in_person(&store, "joe-0002", "joe@example.com", "0.01/day").await;
    let gone = sign_in_person(&store, "gone-0003", "gone@example.com", "5/day").await;
    let (code, _, err) = run(&h, &store, &["users", "update", &gone, "--disable"]);
    assert_eq!(code, 0, "{err}");
    let key = owned_key(&h, &store, "laptop", &jane);
    let prefix = key[..12].to_owned();
    let (h2, s2, k2, jane2) = (h.clone(), store.clone(), key.clone(), jane.clone());
    let (first, wait, freed) = tokio::task::spawn_blocking(move || {
        let serve = start_serve(&h2, &s2, &config);
        let first = call(&serve.addr, &k2);
        for (owner, says) in [
            (
                "usr_ffffffffffffffff",
                "There is no user `usr_ffffffffffffffff`",
            ),
            (gone.as_str(), "is disabled"),
        ] {
            let (code, out, err) = run(&h2, &s2, &["keys", "update", &prefix, "--owner", owner]);
            assert_eq!(code, 2, "{out}{err}");
            assert!(err.contains(says) && err.lines().count() == 1, "{err}");
        }
        let (code, out, err) = run(&h2, &s2, &["keys", "update", &prefix, "--owner", &joe]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(&format!("owner: {jane2} → {joe}")), "{out}");
        let done = Instant::now();
        loop {
            let (status, _, text) = call(&serve.addr, &k2);
            if status == 402 {
                assert!(text.contains("The user joe@example.com's budget"), "{text}");
                break;
            }
            assert_eq!(status, 200, "{text}");
            assert!(done.elapsed() < Duration::from_secs(3), "still served");
            std::thread::sleep(Duration::from_millis(50));
        }
        let wait = done.elapsed();
        let (code, _, err) = run(&h2, &s2, &["keys", "update", &prefix, "--owner", "none"]);
        assert_eq!(code, 0, "{err}");
        std::thread::sleep(Duration::from_millis(1_100));
        let freed = call(&serve.addr, &k2);
        std::thread::sleep(Duration::from_millis(300));
        (first, wait, freed)
    })
    .await
    .unwrap();
    assert_eq!(first.0, 200, "{first:?}");
    assert_eq!(freed.0, 200, "no owner, no user budget: {freed:?}");
    eprintln!("an owner change showed on the running process after {wait:?}");
    assert!(wait < Duration::from_millis(1_300), "{wait:?}");
    let (code, shown, err) = run(&h, &store, &["users", "show", &jane, "--json"]);
    assert_eq!(code, 0, "{err}");
    let shown: Value = serde_json::from_str(shown.trim()).unwrap();
    let used = shown["used_usd"].as_f64().unwrap();
    let rows = usage_by_user(&h, &store);
    let janes = rows.iter().find(|r| r["group"] == jane.as_str()).unwrap();
    assert_eq!(janes["user"], "jane@example.com", "{janes}");
    assert_eq!(
        janes["requests"], 1,
        "only the request before the change: {rows:?}"
    );
    let cost = janes["cost_usd"].as_f64().unwrap();
    assert!(cost > 0.0 && (cost - used).abs() < 1e-9, "{cost} {used}");
    let (code, table, err) = run(&h, &store, &["usage", "--by", "user"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        table.contains(&format!("{jane} jane@example.com")),
        "{table}"
    );
    let (code, audit, err) = run(&h, &store, &["audit", "--json"]);
    assert_eq!(code, 0, "{err}");
    let moves: Vec<&str> = (audit.lines())
        .filter(|l| l.contains("\"owner: "))
        .collect();
    assert_eq!(
        moves.len(),
        2,
        "one row per change, none for a refusal: {audit}"
    );
    let (code, _, err) = run(&h, &store, &["store", "check"]);
    assert_eq!(code, 0, "the users' running totals equal the ledger: {err}");
}
