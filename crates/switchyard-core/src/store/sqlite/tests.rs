//! The SQLite store: the shared suite (`store/suite/`) on a fresh file, and what only a file
//! can do wrong (damaged, read-only, a newer or older schema).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use super::*;
use crate::store::TaskStore;
use crate::store::suite::{StoreFixture, task_store_suite};

/// A fresh data directory; every `open` is a new connection to its database.
struct SqliteFixture(tempfile::TempDir);

impl SqliteFixture {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }
}

impl StoreFixture for SqliteFixture {
    fn open(&self) -> Arc<dyn TaskStore> {
        Arc::new(SqliteStore::open(self.0.path()).unwrap())
    }

    fn execute(&self, sql: &str) {
        let conn = rusqlite::Connection::open(self.0.path().join(DB_FILE)).unwrap();
        conn.execute_batch(sql).unwrap();
    }
}

task_store_suite!(Some(SqliteFixture::new()));

#[test]
fn connections_opening_one_new_file_at_the_same_moment_all_succeed() {
    // Every task started together on a fresh data directory opens (creates, switches to WAL,
    // migrates) the same file at once; none may be told "database is locked".
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DB_FILE);
        let start = Arc::new(std::sync::Barrier::new(6));
        let opens: Vec<_> = (0..6)
            .map(|_| {
                let (path, start) = (path.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    SqliteStore::open_file(&path).map(|_| ())
                })
            })
            .collect();
        for open in opens {
            open.join().unwrap().unwrap();
        }
    }
}

#[test]
fn a_file_that_is_not_a_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, &garbage).unwrap();
    let err = SqliteStore::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("left untouched"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), garbage);
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = SqliteStore::open(dir.path()).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NewerSchema {
                found: 99,
                supported: SCHEMA_VERSION,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade Switchyard"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_read_only_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    drop(SqliteStore::open(dir.path()).unwrap());
    let path = dir.path().join(DB_FILE);
    let before = std::fs::read(&path).unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&path, perms).unwrap();
    let err = SqliteStore::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
    assert!(err.to_string().contains("--data-dir"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn an_older_schema_is_migrated_forward() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DB_FILE);
    // An empty database at version 0 (e.g. created by an interrupted first run).
    drop(rusqlite::Connection::open(&path).unwrap());
    let store = SqliteStore::open(dir.path()).unwrap();
    let conn = store.db.conn();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let fk: i64 = conn
        .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
        .unwrap();
    assert_eq!(fk, 1);
    // Opening again is a no-op.
    drop(conn);
    drop(store);
    SqliteStore::open(dir.path()).unwrap();
}
