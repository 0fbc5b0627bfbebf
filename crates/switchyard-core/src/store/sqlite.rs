//! [`SqliteStore`]: the task store on one SQLite file (SPEC R10.2, R13.1; the default,
//! DESIGN.md "Choices already made": rusqlite, bundled, WAL mode).
//!
//! # Layout (schema version [`SCHEMA_VERSION`], in `PRAGMA user_version`)
//!
//! - `tasks`: one row per [`crate::store::TaskRecord`] (totals, last request's tokens, deleted range).
//! - `messages`: the API conversation history, `(task_id, idx)` with the message as JSON.
//! - `ui_events`: the task's events in order, `kind` the event's `type`.
//! - `context_edits`: what context management did, in order.
//! - `cooldowns`, `spend`, `rate_slots`, `rate_learnt`: the limits state of SPEC R12.
//! - `gateway_requests`: the gateway's request log ([`crate::store::RequestLog`], R14.4).
//! - `gateway_responses`: the gateway's stored Responses ([`crate::store::ResponseStore`], R14.1).
//!
//! # Durability
//!
//! The database runs in WAL mode with `synchronous = FULL`: a committed message, usage report
//! or range survives a crash of the process and of the machine. Events appended with
//! `durable_now = false` (streamed text chunks) are committed with `synchronous = NORMAL`: they
//! survive the process being killed at any instant and are synced to disk with the next full
//! commit; so are the gateway's rate-limit slots, budget holds and request records (with
//! their spend), which sit on every request's path. `busy_timeout` lets two `switchyard` processes share one file; writers wait for each
//! other instead of failing. Starting a task costs one fsync for its row and first message
//! together ([`crate::store::TaskStore::create_task_with_message`]). The WAL is checkpointed into the file
//! and removed when the last connection closes, so after a run `switchyard.db` alone holds
//! everything (a copy of it is a whole backup); the price is one fsync of a new WAL's header
//! (and of the directory) at the next process's first commit.
//!
//! # Refusing files it must not touch
//!
//! A file that is not a SQLite database (corrupt), that is read-only, or whose schema is newer
//! than this build's is refused with a [`StoreError`] before anything is written to it.
//!
//! # Threads
//!
//! One connection, behind a mutex, serves every handle cloned from a [`SqliteStore`]. Each
//! [`crate::store::TaskStore`] call runs its statements on tokio's blocking pool (`spawn_blocking`): SQLite
//! is a blocking library, and a commit waits for `fsync`.

mod error;
mod history;
mod keys;
mod limits;
mod read_only;
mod requests;
mod responses;
mod schema;
mod task_store;
mod tasks;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, OpenFlags};
use switchyard_api::Message;

use super::rows::to_json;
use super::{StoreError, StoreFuture};
use error::classify;

pub use schema::SCHEMA_VERSION;

/// The database file name inside the data directory.
pub const DB_FILE: &str = "switchyard.db";

/// How long a writer waits for another process holding the write lock, in milliseconds.
pub const BUSY_TIMEOUT_MS: u64 = 10_000;

/// The task store on one SQLite file. Cloning gives another handle on the same connection.
#[derive(Clone)]
pub struct SqliteStore {
    db: Arc<Db>,
}

/// The connection and the blocking statements behind every [`crate::store::TaskStore`] method.
pub(super) struct Db {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.db.path)
            .finish()
    }
}

impl SqliteStore {
    /// Opens (creating when missing) `data_dir/switchyard.db`, creating `data_dir` too.
    ///
    /// A directory it creates is private to the user (mode 0700 on Unix): conversations can
    /// hold code and secrets pasted by the user.
    pub fn open(data_dir: &Path) -> Result<Self, StoreError> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(data_dir).map_err(|source| StoreError::Io {
            path: data_dir.to_owned(),
            source,
        })?;
        Self::open_file(&data_dir.join(DB_FILE))
    }

    /// Opens (creating when missing) the database file `path`.
    ///
    /// An existing file is checked before anything is written: read-only permissions
    /// ([`StoreError::ReadOnly`], even for root), not a database or damaged
    /// ([`StoreError::Corrupt`]), a schema newer than [`SCHEMA_VERSION`]
    /// ([`StoreError::NewerSchema`]). Then WAL mode, foreign keys and the busy timeout are set
    /// and older schemas are migrated forward in one transaction.
    pub fn open_file(path: &Path) -> Result<Self, StoreError> {
        let exists = path.exists();
        if exists {
            let meta = std::fs::metadata(path).map_err(|source| StoreError::Io {
                path: path.to_owned(),
                source,
            })?;
            if meta.permissions().readonly() {
                return Err(StoreError::ReadOnly {
                    path: path.to_owned(),
                });
            }
        }
        let opened = Self::open_writable(path, exists);
        if let Err(StoreError::DiskFull { .. }) = &opened
            && !exists
        {
            // A file made here that the full disk left empty is removed: a failed first run
            // leaves nothing behind (issue 26).
            remove_unfinished(path);
        }
        opened
    }

    /// [`SqliteStore::open_file`] once the file's permissions were checked; `exists` says
    /// whether the file was there before.
    fn open_writable(path: &Path, exists: bool) -> Result<Self, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| classify(path, e))?;
        conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))
            .map_err(|e| classify(path, e))?;
        if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            return Err(StoreError::ReadOnly {
                path: path.to_owned(),
            });
        }
        // Read before any write: a file that is not a database fails here (SQLITE_NOTADB),
        // a newer schema is refused, and neither is modified.
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| classify(path, e))?;
        conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
            r.get::<_, i64>(0)
        })
        .map_err(|e| classify(path, e))?;
        schema::refuse_newer(path, version)?;
        if exists {
            check_pages(&conn, path)?;
        }
        set_wal(&conn, path)?;
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")
            .map_err(|e| classify(path, e))?;
        let mut conn = conn;
        schema::migrate(&mut conn, path)?;
        Ok(Self {
            db: Arc::new(Db {
                conn: Mutex::new(conn),
                path: path.to_owned(),
            }),
        })
    }

    /// Opens the existing database file `path` to read it only (a read-only mount, a
    /// read-only file or backup): nothing is created, migrated or written, and every write
    /// fails with [`StoreError::ReadOnly`]. `tasks`, `export` and `limits` use it when
    /// [`SqliteStore::open_file`] says [`StoreError::ReadOnly`].
    ///
    /// Errors: a missing file ([`StoreError::Io`]), not a database ([`StoreError::Corrupt`]),
    /// a newer schema ([`StoreError::NewerSchema`]).
    pub fn open_read_only(path: &Path) -> Result<Self, StoreError> {
        let conn = read_only::open(path)?;
        conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))
            .map_err(|e| classify(path, e))?;
        Ok(Self {
            db: Arc::new(Db {
                conn: Mutex::new(conn),
                path: path.to_owned(),
            }),
        })
    }

    /// A store in memory, shared by this handle and its clones and gone with the last of
    /// them: for a library user who keeps nothing between runs (a gateway built without a
    /// store keeps its cooldowns, rate-limit window and request log here, for its lifetime).
    /// Its [`SqliteStore::path`] is `:memory:`.
    pub fn in_memory() -> Result<Self, StoreError> {
        let path = PathBuf::from(":memory:");
        let mut conn = Connection::open_in_memory().map_err(|e| classify(&path, e))?;
        conn.execute_batch("PRAGMA foreign_keys = ON;")
            .map_err(|e| classify(&path, e))?;
        schema::migrate(&mut conn, &path)?;
        Ok(Self {
            db: Arc::new(Db {
                conn: Mutex::new(conn),
                path,
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.db.path
    }

    /// Runs `f` on the blocking pool with the connection; its result is the future's.
    fn call<T, F>(&self, f: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&Db) -> Result<T, StoreError> + Send + 'static,
    {
        let db = Arc::clone(&self.db);
        Box::pin(async move {
            let location = db.path.display().to_string();
            tokio::task::spawn_blocking(move || f(&db))
                .await
                .unwrap_or_else(|e| {
                    // A panic in a statement, or the runtime shutting down under it.
                    Err(StoreError::Backend {
                        location,
                        source: Box::new(e),
                    })
                })
        })
    }
}

impl SqliteStore {
    /// `read` of task `id`.
    fn by_id<T: Send + 'static>(
        &self,
        id: &str,
        read: fn(&Db, &str) -> Result<T, StoreError>,
    ) -> StoreFuture<'static, T> {
        let id = id.to_owned();
        self.call(move |db| read(db, &id))
    }

    /// `run` with a copy of `arg` (the future outlives the caller's borrow).
    fn with<A, T>(
        &self,
        arg: &A,
        run: fn(&Db, &A) -> Result<T, StoreError>,
    ) -> StoreFuture<'static, T>
    where
        A: Clone + Send + 'static,
        T: Send + 'static,
    {
        let arg = arg.clone();
        self.call(move |db| run(db, &arg))
    }

    /// `write` (append or replace) of message `index` of task `id`, as JSON.
    fn write_message(
        &self,
        id: &str,
        index: usize,
        message: &Message,
        write: fn(&Db, &str, usize, &str) -> Result<(), StoreError>,
    ) -> StoreFuture<'static, ()> {
        let id = id.to_owned();
        let json = to_json(&id, message);
        self.call(move |db| write(db, &id, index, &json?))
    }
}

impl Db {
    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a transaction half-applied (SQLite rolls
        // it back when the statement or transaction is dropped), so a poisoned lock is usable.
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        classify(&self.path, e)
    }
}

/// SQLite's `PRAGMA quick_check` (every page's structure, without comparing indexes to their
/// tables), run once per process before its first write: a damaged page is found here and the
/// file is refused, never written (issue 14). It reads the whole file, so its cost grows with
/// it: measured on the 2-core machine of bench/README.md under a load of 11, from a fresh
/// connection as each process has, 0.12 ms at 10 messages (0.10 ms for the cheapest read,
/// which misses a damaged page), 41 ms median at 10,000 (7.7 MiB; 17 ms unloaded), 309 ms at
/// 50,000 (40 MiB; 86 ms unloaded). `PRAGMA integrity_check`, which also compares indexes with
/// their tables, took 1.3 to 3.5 times as long. `cargo bench -p switchyard-core --bench store
/// -- check_before_first_write` measures it with this crate's SQLite.
fn check_pages(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let mut stmt = conn
        .prepare("PRAGMA quick_check(3)")
        .map_err(|e| classify(path, e))?;
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(|e| classify(path, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| classify(path, e))?;
    if rows.len() == 1 && rows[0] == "ok" {
        return Ok(());
    }
    Err(StoreError::Corrupt {
        path: path.to_owned(),
        detail: rows.join("; "),
    })
}

/// Removes the database file `path` that this process created and a full disk left empty,
/// with its `-wal`, `-shm` and `-journal` files. A file that holds anything (another process
/// made it at the same moment and wrote to it) is left alone.
fn remove_unfinished(path: &Path) {
    if std::fs::metadata(path).map_or(true, |m| m.len() != 0) {
        return;
    }
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(std::path::PathBuf::from(file));
    }
}

/// Puts the file in WAL mode (SPEC R10.2). The switch takes an exclusive lock that SQLite's
/// busy handler does not wait for, so two processes opening a new file at the same moment
/// (two tasks started together on a fresh data directory) can be told "database is locked"
/// at once: the switch is retried for up to [`BUSY_TIMEOUT_MS`], as a write would wait.
fn set_wal(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(BUSY_TIMEOUT_MS);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => return Err(classify(path, e)),
        }
    }
}

/// SQLite's "database is locked" (`SQLITE_BUSY`, `SQLITE_LOCKED`).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests;
