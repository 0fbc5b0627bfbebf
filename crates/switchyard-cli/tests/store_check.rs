//! `switchyard store check` (issue 41), through the real binary on a SQLite store: a running
//! total planted with SQL so it disagrees with the ledger is found, reported as text and as
//! JSON with exit code 1, repaired with `--repair` in one go, and then checks clean.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// `switchyard ARGS` on the store file `db`, with a clean environment.
fn switchyard(home: &Path, db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .env("SWITCHYARD_STORE", format!("sqlite:{}", db.display()))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn store_check_finds_a_planted_difference_and_repairs_it() {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("store.db");
    let migrated = switchyard(home.path(), &db, &["store", "migrate"]);
    assert!(migrated.status.success(), "{}", text(&migrated));
    let clean = switchyard(home.path(), &db, &["store", "check"]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean));
    assert!(
        text(&clean).contains("0 running totals checked: all equal the ledger"),
        "{}",
        text(&clean)
    );

    // A settled hold written behind the store's back, and a key total that sums nothing.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "INSERT INTO budget_holds (id, key_id, team, ts_ms, reserved_usd, expires_ms, settled_usd)
           VALUES ('req_1', 'key_a', NULL, 86400000, 0.5, 86460000, 0.25);
         INSERT INTO budget_totals (scope, id, span, bucket_ms, settled_usd)
           VALUES ('key', 'key_b', 'total', 0, 3.0);",
    )
    .unwrap();
    drop(conn);

    let found = switchyard(home.path(), &db, &["store", "check"]);
    let said = text(&found);
    assert_eq!(found.status.code(), Some(1), "{said}");
    assert!(
        said.contains("4 differ; run `switchyard store check --repair`"),
        "{said}"
    );
    assert!(
        said.contains(
            r#"key "key_a" day from 86400000: stored $0.000000, the ledger sums to $0.250000"#
        ),
        "{said}"
    );
    assert!(
        said.contains(
            r#"key "key_b" total from 0: stored $3.000000, the ledger sums to $0.000000"#
        ),
        "{said}"
    );

    let json = switchyard(home.path(), &db, &["store", "check", "--json"]);
    assert_eq!(json.status.code(), Some(1), "{}", text(&json));
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        (v["checked"].as_u64(), v["repaired"].as_bool()),
        (Some(4), Some(false)),
        "{v}"
    );
    let first = &v["differences"][0];
    assert_eq!(
        (
            first["scope"].as_str(),
            first["id"].as_str(),
            first["window"].as_str()
        ),
        (Some("key"), Some("key_a"), Some("day")),
        "{v}"
    );
    assert_eq!(first["recomputed_usd"].as_f64(), Some(0.25), "{v}");

    let repaired = switchyard(home.path(), &db, &["store", "check", "--repair"]);
    assert_eq!(repaired.status.code(), Some(0), "{}", text(&repaired));
    assert!(
        text(&repaired).contains("4 differed and were repaired"),
        "{}",
        text(&repaired)
    );
    let after = switchyard(home.path(), &db, &["store", "check", "--json"]);
    assert_eq!(after.status.code(), Some(0), "{}", text(&after));
    let v: Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(v["differences"].as_array().map(Vec::len), Some(0), "{v}");
}
