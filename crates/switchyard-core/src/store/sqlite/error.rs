//! How SQLite's errors become [`StoreError`]s a user can act on (SPEC R10.2): a damaged file,
//! a read-only one, a full disk, anything else.

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
            // SQLITE_FULL, or the WAL's `-shm` file that could not be grown
            // (SQLITE_IOERR_SHMSIZE: on a full tmpfs, where the shared memory lives).
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
