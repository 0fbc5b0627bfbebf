//! [`SqliteStore`]: the default store, one SQLite file in WAL mode.
//! Spec: R10.2, R13.1.

mod error;
mod history;
pub(crate) mod limits;
mod read_only;
mod schema;
mod task_store;
mod tasks;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, OpenFlags};
use switchyard_api::Message;

use super::rows::to_json;
use super::{StoreError, StoreFuture};
use error::{classify, is_constraint};

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

/// The connection every call of a [`SqliteStore`] runs its statements on.
pub(crate) struct Db {
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
    /// Opens `data_dir/switchyard.db`, creating both; the directory private to the user.
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

    /// Opens the database file `path`; one read-only, damaged or newer is refused untouched.
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
            // A failed first run on a full disk leaves nothing behind.
            remove_unfinished(path);
        }
        opened
    }

    /// [`SqliteStore::open_file`] once the file's permissions were checked.
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
        // Read before any write, so a file that is not a database or is newer stays untouched.
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

    /// Opens the existing database file `path` to read it only; writes fail as read-only.
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

    /// A store in memory, shared by this handle's clones and gone with the last of them.
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
    pub(crate) fn call<T, F>(&self, f: F) -> StoreFuture<'static, T>
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

    /// `run` with a copy of `arg`, since the future outlives the caller's borrow.
    pub(crate) fn with<A, T>(
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

    /// `write` of message `index` of task `id` as JSON.
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
    /// The connection.
    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        // SQLite rolls back what a panic left half-done, so a poisoned lock is usable.
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `e` as the [`StoreError`] a user can act on.
    pub(crate) fn err(&self, e: rusqlite::Error) -> StoreError {
        classify(&self.path, e)
    }

    /// `e` as [`StoreError::Conflict`] of `id` when it broke a constraint, else as [`Db::err`].
    pub(crate) fn conflict(&self, e: rusqlite::Error, id: &str) -> StoreError {
        if is_constraint(&e) {
            StoreError::Conflict { id: id.to_owned() }
        } else {
            self.err(e)
        }
    }
}

/// SQLite's `PRAGMA quick_check`: a damaged page refuses the file before it is written.
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

/// Removes the empty database file `path` a full disk left, with its companion files.
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

/// Puts the file in WAL mode, retrying: the busy handler does not wait for the switch.
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

/// SQLite's "database is locked".
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests;
