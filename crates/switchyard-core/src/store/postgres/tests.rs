//! The PostgreSQL store: the shared suite (`store/suite/`) on a fresh database of the real
//! test server (`scripts/postgres.sh`), and what only a server can do (a newer schema, many
//! processes migrating at once, an unreachable server).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::NoTls;

use super::*;
use crate::store::suite::{StoreFixture, task_store_suite};
use crate::store::{StoreError, TaskStore};

/// A fresh database; every `open` is a new pool on it.
struct PgFixture(String);

impl PgFixture {
    #[track_caller]
    fn new() -> Option<Self> {
        switchyard_testkit::fresh_postgres_database("suite").map(Self)
    }
}

impl StoreFixture for PgFixture {
    fn open(&self) -> Arc<dyn TaskStore> {
        let url = self.0.clone();
        let store = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(PgStore::connect(&url))
        });
        Arc::new(store.unwrap())
    }
}

task_store_suite!(PgFixture::new());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_is_refused_and_left_untouched() {
    let Some(url) = switchyard_testkit::fresh_postgres_database("newer") else {
        return;
    };
    let store = PgStore::connect(&url).await.unwrap();
    let client = store.client().await.unwrap();
    client
        .batch_execute("UPDATE switchyard_schema SET version = 99")
        .await
        .unwrap();
    drop(client);
    let err = PgStore::connect(&url).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NewerSchema {
                found: 99,
                supported: PG_SCHEMA_VERSION,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade Switchyard"), "{err}");
    let client = store.client().await.unwrap();
    let row = client
        .query_one("SELECT version FROM switchyard_schema", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 99);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_connections_migrating_a_new_database_at_once_migrate_it_once() {
    let Some(url) = switchyard_testkit::fresh_postgres_database("migrate") else {
        return;
    };
    let opens: Vec<_> = (0..8)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { PgStore::connect_and_migrate(&url).await })
        })
        .collect();
    let mut found = Vec::new();
    for open in opens {
        found.push(open.await.unwrap().unwrap().1);
    }
    found.sort_unstable();
    assert_eq!(found[0], 0, "one connection migrated a new database");
    assert!(
        found[1..].iter().all(|&v| v == PG_SCHEMA_VERSION),
        "{found:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_server_is_a_clear_error_without_the_password() {
    // Port 1 on localhost: nothing listens, the connection is refused at once; the paused
    // clock runs the retries of RECONNECT_MS without waiting for real.
    let err = PgStore::connect("postgres://u:sekrit-pw@127.0.0.1:1/db")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("postgres://u@127.0.0.1:1/db"), "{text}");
    assert!(!text.contains("sekrit"), "{text}");
    assert!(text.contains("SWITCHYARD_STORE"), "{text}");
}

#[test]
fn urls_are_recognised_and_shown_without_secrets() {
    assert!(is_postgres_url("postgres://h/db"));
    assert!(is_postgres_url("PostgreSQL://h/db"));
    assert!(!is_postgres_url("sqlite:/tmp/x.db"));
    assert_eq!(
        redact_url("postgresql://me:pw@db.example:6543/team?sslmode=disable"),
        "postgres://me@db.example:6543/team"
    );
    assert!(!redact_url("postgres://me:pw@[bad").contains("pw"));
}

fn slot(key: &str, now_ms: i64, rpm: u64) -> crate::limits::SlotRequest {
    crate::limits::SlotRequest {
        key: key.into(),
        now_ms,
        input_tokens: 1,
        limits: crate::limits::RateLimits {
            requests_per_minute: Some(rpm),
            input_tokens_per_minute: None,
        },
    }
}

/// No lost update under many writers (R13.2): 48 callers on 8 stores (up to 32 connections)
/// race for 15 slots of one key; exactly 15 get one, and the rows say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_writers_race_for_the_slots_of_one_key_and_exactly_the_limit_wins() {
    use crate::limits::{LimitsStore, SlotGrant};
    let Some(url) = switchyard_testkit::fresh_postgres_database("race") else {
        return;
    };
    let mut stores = Vec::new();
    for _ in 0..8 {
        stores.push(PgStore::connect(&url).await.unwrap());
    }
    let now = 7_000_000;
    let handles: Vec<_> = (0..48)
        .map(|i| {
            let store = stores[i % stores.len()].clone();
            tokio::spawn(async move { store.acquire_rate_slot(&slot("k", now, 15)).await })
        })
        .collect();
    let mut granted = 0;
    for h in handles {
        if h.await.unwrap().unwrap() == SlotGrant::Granted {
            granted += 1;
        }
    }
    assert_eq!(granted, 15);
    let states = stores[0].rate_states(now).await.unwrap();
    assert_eq!(states[0].requests_in_window, 15);
}

/// A process killed inside the slot transaction (holding the key's lock) blocks nobody: the
/// server ends its transaction and lock with its connection, and the waiting caller goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_holding_the_slot_lock_blocks_nobody() {
    use crate::limits::{LimitsStore, SlotGrant};
    let Some(url) = switchyard_testkit::fresh_postgres_database("killed") else {
        return;
    };
    let store = PgStore::connect(&url).await.unwrap();
    let config = tokio_postgres::Config::from_str(&url).unwrap();
    let (client, connection) = config.connect(NoTls).await.unwrap();
    let connection = tokio::spawn(connection);
    client
        .batch_execute("BEGIN; SELECT pg_advisory_xact_lock(hashtext('k'));")
        .await
        .unwrap();
    let waiting = {
        let store = store.clone();
        tokio::spawn(async move { store.acquire_rate_slot(&slot("k", 1_000, 1)).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the lock holder is still alive");
    // The process dies: its socket closes without a commit or a rollback.
    connection.abort();
    drop(client);
    let got = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the lock of a dead connection was released")
        .unwrap()
        .unwrap();
    assert_eq!(got, SlotGrant::Granted);
}
