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

    fn execute(&self, sql: &str) {
        let (url, sql) = (self.0.clone(), sql.to_owned());
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(async move {
                let (client, conn) = tokio_postgres::connect(&url, NoTls).await.unwrap();
                let conn = tokio::spawn(conn);
                client.batch_execute(&sql).await.unwrap();
                drop(client);
                let _ = conn.await;
            })
        });
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

/// A full disk on the server is the store's disk-full sentence, as SQLite's is (SPEC R10.2;
/// issue 26 left it the generic backend error): the `messages` table moved to a tablespace on a
/// 1 MiB tmpfs, then a 3 MB incompressible message appended. Needs root (mount) and the test
/// server on this machine (the tablespace directory is made for the server's user).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_on_the_server_is_the_disk_full_error_and_keeps_what_was_saved() {
    use std::os::unix::fs::MetadataExt;
    let Some(url) = switchyard_testkit::fresh_postgres_database("disk_full") else {
        return;
    };
    let store = PgStore::connect(&url).await.unwrap();
    let client = store.client().await.unwrap();
    let data_dir: String = client
        .query_one("SHOW data_directory", &[])
        .await
        .unwrap()
        .get(0);
    let owner = std::fs::metadata(&data_dir).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let Some(_mount) = TmpfsMount::new(dir.path(), owner.uid(), owner.gid()) else {
        return;
    };
    let space = format!("full_{}", std::process::id());
    let location = dir.path().display().to_string().replace('\'', "''");
    client
        .batch_execute(&format!("CREATE TABLESPACE {space} LOCATION '{location}'"))
        .await
        .unwrap();
    client
        .batch_execute(&format!("ALTER TABLE messages SET TABLESPACE {space}"))
        .await
        .unwrap();

    let task = store
        .create_task(&crate::store::NewTask {
            cwd: "/work".into(),
            mode: "act".into(),
            provider: "anthropic".into(),
            model: "claude".into(),
            first_prompt: "fill the disk".into(),
        })
        .await
        .unwrap();
    let small = switchyard_api::Message::user_text("kept");
    store.append_message(&task.id, 0, &small).await.unwrap();
    let big = switchyard_api::Message::assistant_text(incompressible(3 << 20));
    let err = store.append_message(&task.id, 1, &big).await.unwrap_err();
    assert!(matches!(err, StoreError::DiskFull { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("is full") && text.contains("free some space"),
        "{text}"
    );
    assert!(!text.contains("password"), "{text}");
    let kept = store.messages(&task.id).await.unwrap();
    assert_eq!(kept, vec![small], "what was saved before stays");

    // Leave the server as it was: the table back, the tablespace gone, then the mount.
    // Two calls: DROP TABLESPACE cannot run in the implicit transaction of a batch.
    client
        .batch_execute("ALTER TABLE messages SET TABLESPACE pg_default")
        .await
        .unwrap();
    client
        .batch_execute(&format!("DROP TABLESPACE {space}"))
        .await
        .unwrap();
}

/// `len` bytes of text that compression cannot shrink (PostgreSQL compresses large values).
fn incompressible(len: usize) -> String {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'!' + (x % 94) as u8)
        })
        .collect()
}

/// A 1 MiB tmpfs owned by `uid:gid`, unmounted (lazily) when dropped; `None` (the test skipped,
/// or failed in CI) when it cannot be mounted.
struct TmpfsMount(std::path::PathBuf);

impl TmpfsMount {
    #[track_caller]
    fn new(at: &std::path::Path, uid: u32, gid: u32) -> Option<Self> {
        let options = format!("size=1m,mode=0700,uid={uid},gid={gid}");
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
            .arg(at)
            .output();
        match out {
            Ok(out) if out.status.success() => Some(Self(at.to_owned())),
            Ok(out) => {
                switchyard_testkit::skip_or_fail(&format!(
                    "`mount -t tmpfs` failed ({}); run the tests as root",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
                None
            }
            Err(e) => {
                switchyard_testkit::skip_or_fail(&format!("`mount` cannot be run ({e})"));
                None
            }
        }
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}
