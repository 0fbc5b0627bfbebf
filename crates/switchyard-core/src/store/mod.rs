//! The durable task store (SPEC R10): one SQLite file holds every task.
//!
//! The reference rewrites whole JSON files (`api_conversation_history.json`,
//! `ui_messages.json`) on every change, so a long task costs more per message the longer it
//! gets, and a crash in the middle of a write can lose the file. Here each change is one small
//! transaction that touches only its own rows: appending a message inserts one row, a usage
//! report updates one task row, a streamed text chunk inserts one event row. Nothing is ever
//! rewritten whole, and SQLite's write-ahead log makes every commit atomic.
//!
//! # Layout (schema version [`SCHEMA_VERSION`], in `PRAGMA user_version`)
//!
//! - `tasks`: id, created (Unix ms), cwd, mode, provider, model, first prompt, totals (tokens
//!   in/out, cache writes/reads, cost in USD), the previous request's total tokens (for R8.2
//!   after a resume) and `conversation_history_deleted_range` (R8.4).
//! - `messages`: the API conversation history, one row per message, `(task_id, idx)` with the
//!   message as JSON in the Anthropic shape (`{"role", "content": [blocks]}`).
//! - `ui_events`: the task's [`crate::task::TaskEvent`]s in order (the reference's
//!   `ui_messages.json`), one row each, `kind` the event's `type`.
//! - `context_edits`: what context management did (truncation ranges, file-read dedupe), in
//!   order, so a task's context history can be inspected.
//!
//! # Durability
//!
//! The database runs in WAL mode with `synchronous = FULL`: a committed message, usage report
//! or range survives a crash of the process and of the machine. Streamed text chunks are
//! committed with `synchronous = NORMAL`: they survive the process being killed at any instant
//! (so a SIGKILL loses at most the chunk being received) and are synced to disk with the next
//! full commit. `busy_timeout` lets two `switchyard` processes share one file; writers wait
//! for each other instead of failing.
//!
//! # Refusing files it must not touch
//!
//! A file that is not a SQLite database (corrupt), that is read-only, or whose schema is newer
//! than this build's is refused with a [`StoreError`] before anything is written to it.

mod history;
mod import;
mod schema;
mod tasks;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OpenFlags};

pub use history::{ContextEdit, StoredEvent};
pub use import::{ImportError, UNKNOWN_MODEL, messages_from_reference};
pub use schema::SCHEMA_VERSION;
pub use tasks::{NewTask, TaskRecord, TaskUsage};

/// The database file name inside the data directory.
pub const DB_FILE: &str = "switchyard.db";

/// How long a writer waits for another process holding the write lock, in milliseconds.
pub const BUSY_TIMEOUT_MS: u64 = 10_000;

/// A failure of the task store. `Display` is one sentence saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but is not a SQLite database, or is damaged.
    #[error(
        "the task database {path} is damaged or is not a Switchyard database ({detail}); it was left untouched: move it away (or point --data-dir elsewhere) to start a new one"
    )]
    Corrupt { path: PathBuf, detail: String },
    /// The file (or its directory) cannot be written.
    #[error(
        "the task database {path} is read-only; make it writable or point --data-dir (or SWITCHYARD_DATA_DIR) at a writable directory"
    )]
    ReadOnly { path: PathBuf },
    /// The file was written by a newer Switchyard.
    #[error(
        "the task database {path} has schema version {found}, newer than this Switchyard supports ({supported}); upgrade Switchyard (the file was left untouched)"
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    /// No task has this id.
    #[error("no task with id {id}; `switchyard tasks` lists the saved tasks")]
    TaskNotFound { id: String },
    /// Another process changed the same task at the same time.
    #[error(
        "task {id} was changed by another switchyard process at the same time; run one process per task"
    )]
    Conflict { id: String },
    /// The data directory could not be created or read.
    #[error("cannot use the data directory {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A stored row could not be decoded.
    #[error("a stored record of task {id} could not be read: {source}")]
    Json {
        id: String,
        source: serde_json::Error,
    },
    /// Any other SQLite failure (disk full, I/O error, locked for longer than the timeout).
    #[error("the task database {path} could not be used: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

/// The task store: one SQLite connection, shared by reference (`&TaskStore` is `Sync`; calls
/// are serialised by an internal mutex). Every method is one transaction.
pub struct TaskStore {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for TaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskStore")
            .field("path", &self.path)
            .finish()
    }
}

impl TaskStore {
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
        if version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: path.to_owned(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .map_err(|e| classify(path, e))?;
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")
            .map_err(|e| classify(path, e))?;
        let mut conn = conn;
        schema::migrate(&mut conn, path)?;
        Ok(Self {
            conn: Mutex::new(conn),
            path: path.to_owned(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

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

/// Maps a SQLite error to the [`StoreError`] a user can act on.
fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    if let rusqlite::Error::SqliteFailure(f, ref msg) = e {
        match f.code {
            ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => {
                return StoreError::Corrupt {
                    path: path.to_owned(),
                    detail: msg.clone().unwrap_or_else(|| f.to_string()),
                };
            }
            ErrorCode::ReadOnly => {
                return StoreError::ReadOnly {
                    path: path.to_owned(),
                };
            }
            _ => {}
        }
    }
    StoreError::Sqlite {
        path: path.to_owned(),
        source: e,
    }
}

/// The current time in Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
