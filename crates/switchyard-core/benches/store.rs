//! The task store against the reference's way of persisting a conversation (issue 4).
//!
//! - `append_message/{store,reference_rewrite,reference_rewrite_fsync}/N`: append one ~600-byte
//!   message to a task of N messages. The store inserts one row in one transaction (WAL,
//!   `synchronous = FULL`, so each commit is fsynced). The reference keeps the array in memory
//!   and rewrites the whole `api_conversation_history.json` on every change with
//!   `fs.writeFile(path, JSON.stringify(history))` (apps/vscode/src/core/storage/disk.ts,
//!   `saveApiConversationHistory`): no fsync and no atomic rename. `reference_rewrite` does
//!   exactly that; `reference_rewrite_fsync` adds the fsync our commit does, for a like-for-like
//!   durability comparison. The reference task stays at N messages (each iteration writes
//!   N + 1); the store's task grows by one row per iteration, which does not change its cost.
//! - `load_and_truncate_10k/…`: load a 10,000-message history, compute the next truncation
//!   range (keep half), persist it, and build the messages the model would see. The store
//!   reads the rows and writes one small row; the reference parses the JSON file and rewrites
//!   it whole.
//!
//! - `check_before_first_write/{quick_check,open_file,schema_read}/N`: what a process pays to
//!   check a database of N messages before its first write (issue 14): SQLite's
//!   `PRAGMA quick_check` alone, the whole `SqliteStore::open_file` (which runs it), and the
//!   cheapest read that finds a file that is not a database at all (`sqlite_master`), which
//!   misses a damaged page.
//! - `append_message/postgres/N` (with `--features postgres` and a server in
//!   `SWITCHYARD_TEST_POSTGRES_URL`, e.g. from `scripts/postgres.sh start`): the same append on
//!   [`PgStore`] over TCP to a local server, `synchronous_commit = on` (the WAL flushed before
//!   the commit returns), each N in a fresh database.
//!
//! The store's figures include its async interface: each call runs its statement on tokio's
//! blocking pool and is awaited (`block_on` here), as a task does.
//!
//! Run: `cargo bench -p switchyard-core --bench store` (add `--features postgres` for
//! PostgreSQL).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use switchyard_api::{ContentBlock, Message, Role};
use switchyard_core::context::{TruncationKeep, apply_deleted_range, get_next_truncation_range};
#[cfg(feature = "postgres")]
use switchyard_core::store::PgStore;
use switchyard_core::store::{NewTask, SqliteStore, TaskRecord, TaskStore};
use tokio::runtime::Runtime;

fn message(i: usize) -> Message {
    let role = if i % 2 == 0 {
        Role::User
    } else {
        Role::Assistant
    };
    Message {
        role,
        content: vec![ContentBlock::Text {
            text: format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(22)),
        }],
    }
}

fn history(n: usize) -> Vec<Message> {
    (0..n).map(message).collect()
}

/// The runtime the store's futures are awaited on.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A store in `dir` holding one task of `n` messages (written in one import transaction).
fn store_with(rt: &Runtime, dir: &Path, n: usize) -> (SqliteStore, String) {
    let store = SqliteStore::open(dir).unwrap();
    let id = task_with(rt, &store, n);
    (store, id)
}

/// A task of `n` messages in `store` (one import transaction); its id.
fn task_with(rt: &Runtime, store: &dyn TaskStore, n: usize) -> String {
    let base = rt
        .block_on(store.create_task(&NewTask {
            cwd: "/w".into(),
            mode: "act".into(),
            provider: "anthropic".into(),
            model: "m".into(),
            first_prompt: "p".into(),
        }))
        .unwrap();
    let record = TaskRecord {
        id: format!("{}0", base.id),
        ..base
    };
    rt.block_on(store.import_task(&record, &history(n), &[], &[]))
        .unwrap();
    record.id
}

/// The reference's write: the whole array, serialised, over the old file.
fn rewrite(path: &Path, history: &[Message], fsync: bool) {
    let bytes = serde_json::to_vec(history).unwrap();
    if fsync {
        let mut f = std::fs::File::create(path).unwrap();
        f.write_all(&bytes).unwrap();
        f.sync_all().unwrap();
    } else {
        std::fs::write(path, bytes).unwrap();
    }
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append_message");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for n in [10usize, 1_000, 10_000] {
        group.bench_with_input(BenchmarkId::new("store", n), &n, |b, &n| {
            let dir = tempfile::tempdir().unwrap();
            let rt = runtime();
            let (store, id) = store_with(&rt, dir.path(), n);
            let mut index = n;
            let m = message(n);
            b.iter(|| {
                rt.block_on(store.append_message(&id, index, black_box(&m)))
                    .unwrap();
                index += 1;
            });
        });
        #[cfg(feature = "postgres")]
        if std::env::var_os(switchyard_testkit::POSTGRES_URL_ENV).is_some() {
            group.bench_with_input(BenchmarkId::new("postgres", n), &n, |b, &n| {
                let url = switchyard_testkit::fresh_postgres_database("bench").unwrap();
                let rt = runtime();
                let store = rt.block_on(PgStore::connect(&url)).unwrap();
                let id = task_with(&rt, &store, n);
                let mut index = n;
                let m = message(n);
                b.iter(|| {
                    rt.block_on(store.append_message(&id, index, black_box(&m)))
                        .unwrap();
                    index += 1;
                });
            });
        }
        for fsync in [false, true] {
            let name = if fsync {
                "reference_rewrite_fsync"
            } else {
                "reference_rewrite"
            };
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, &n| {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("api_conversation_history.json");
                let mut h = history(n);
                rewrite(&path, &h, false);
                let m = message(n);
                // The task stays at n messages: each iteration writes n + 1.
                b.iter(|| {
                    h.push(black_box(m.clone()));
                    rewrite(&path, &h, fsync);
                    h.pop();
                });
            });
        }
    }
    group.finish();
}

fn load_and_truncate(c: &mut Criterion) {
    let n = 10_000;
    let mut group = c.benchmark_group("load_and_truncate_10k");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    group.bench_function("store", |b| {
        let dir = tempfile::tempdir().unwrap();
        let rt = runtime();
        let (store, id) = store_with(&rt, dir.path(), n);
        b.iter(|| {
            let h = rt.block_on(store.messages(&id)).unwrap();
            let range = get_next_truncation_range(&h, None, TruncationKeep::Half);
            rt.block_on(store.set_deleted_range(&id, Some(range), &json!({ "range": range })))
                .unwrap();
            black_box(apply_deleted_range(&h, Some(range)))
        });
    });
    for fsync in [false, true] {
        let name = if fsync {
            "reference_rewrite_fsync"
        } else {
            "reference_rewrite"
        };
        group.bench_function(name, |b| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("api_conversation_history.json");
            rewrite(&path, &history(n), false);
            b.iter(|| {
                let h: Vec<Message> =
                    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                let range = get_next_truncation_range(&h, None, TruncationKeep::Half);
                rewrite(&path, &h, fsync);
                black_box(apply_deleted_range(&h, Some(range)))
            });
        });
    }
    group.finish();
}

fn check_before_first_write(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("check_before_first_write");
    for n in [10, 10_000] {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = store_with(&rt, dir.path(), n);
        let path = store.path().to_owned();
        drop(store);
        let conn = rusqlite::Connection::open(&path).unwrap();
        group.bench_function(BenchmarkId::new("quick_check", n), |b| {
            b.iter(|| {
                let ok: String = conn
                    .query_row("PRAGMA quick_check(3)", [], |r| r.get(0))
                    .unwrap();
                assert_eq!(ok, "ok");
            });
        });
        group.bench_function(BenchmarkId::new("schema_read", n), |b| {
            b.iter(|| {
                let count: i64 = conn
                    .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
                    .unwrap();
                black_box(count);
            });
        });
        group.bench_function(BenchmarkId::new("open_file", n), |b| {
            b.iter(|| black_box(SqliteStore::open_file(&path).unwrap()));
        });
    }
    group.finish();
}

criterion_group!(benches, append, load_and_truncate, check_before_first_write);
criterion_main!(benches);
