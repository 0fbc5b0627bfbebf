//! [`StoreError`], how a store fails, and [`StoreFuture`], what every store method returns.
//! Spec: R10, R13.1.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

/// The future a [`super::TaskStore`] method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A failure of the task store. `Display` is one sentence saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but is not a SQLite database, or is damaged.
    #[error(
        "the task database {path} is damaged or is not a Switchyard database ({detail}); it was left untouched: move it away (or point --data-dir elsewhere) to start a new one"
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// SQLite's message.
        detail: String,
    },
    /// The file or its directory cannot be written.
    #[error(
        "the task database {path} is read-only; make it writable or point --data-dir (or SWITCHYARD_DATA_DIR) at a writable directory"
    )]
    ReadOnly {
        /// The database file.
        path: PathBuf,
    },
    /// The disk has no room for the change, which was not saved; what was saved is kept.
    #[error(
        "the disk holding the task database {location} is full, so the last change was not saved (everything saved before it is kept); free some space, or point --data-dir (or --store) elsewhere, and run the command again"
    )]
    DiskFull {
        /// The file, or the server without its password.
        location: String,
    },
    /// The store was written by a newer Switchyard.
    #[error(
        "the task database {location} has schema version {found}, newer than this Switchyard supports ({supported}); upgrade Switchyard (the file was left untouched)"
    )]
    NewerSchema {
        /// The file, or the server without its password.
        location: String,
        /// The store's schema version.
        found: i64,
        /// The newest this build knows.
        supported: i64,
    },
    /// No task has this id.
    #[error("no task with id {id}; `switchyard tasks` lists the saved tasks")]
    TaskNotFound {
        /// The id asked for.
        id: String,
    },
    /// Another process changed the same task at the same time.
    #[error(
        "task {id} was changed by another switchyard process at the same time; run one process per task"
    )]
    Conflict {
        /// The task's id.
        id: String,
    },
    /// The data directory could not be created or read.
    #[error("cannot use the data directory {path}: {source}")]
    Io {
        /// The data directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A stored row could not be decoded.
    #[error("a stored record of task {id} could not be read: {source}")]
    Json {
        /// The task's id.
        id: String,
        /// The decoder's error.
        source: serde_json::Error,
    },
    /// The database server cannot be reached within the reconnect time.
    #[error(
        "cannot reach the task store {location} ({source}); start the server, or point --store, SWITCHYARD_STORE or `store` in the configuration at a running one"
    )]
    Unreachable {
        /// The server without its password.
        location: String,
        /// The connection error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Any other failure of the database, such as a lost connection.
    #[error("the task database {location} could not be used: {source}")]
    Backend {
        /// The file, or the server without its password.
        location: String,
        /// The database's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
