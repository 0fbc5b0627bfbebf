//! How SQLite's errors become [`StoreError`]s a user can act on.
//! Spec: R10.2.

use std::path::Path;

use crate::store::StoreError;

/// Maps a SQLite error to the [`StoreError`] a user can act on.
pub(super) fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    if let rusqlite::Error::SqliteFailure(f, ref msg) = e {
        match f.code {
            ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => {
                return StoreError::Corrupt {
                    path: path.to_owned(),
                    detail: msg.clone().unwrap_or_else(|| f.to_string()),
                };
            }
            // A full tmpfs fails to grow the WAL's `-shm` file instead.
            _ if f.code == ErrorCode::DiskFull
                || f.extended_code == rusqlite::ffi::SQLITE_IOERR_SHMSIZE =>
            {
                return StoreError::DiskFull {
                    location: path.display().to_string(),
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
    StoreError::Backend {
        location: path.display().to_string(),
        source: Box::new(e),
    }
}

/// A constraint, a unique key or a foreign key, was violated.
pub(crate) fn is_constraint(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation)
}
