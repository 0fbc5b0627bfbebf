//! Opening a database that cannot be written, as on a read-only mount, for reading only.
//! Spec: R10.2, R13.1.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::error::classify;
use super::schema;
use crate::store::StoreError;

/// Opens `path` for reading only, `immutable` where the WAL's `-shm` cannot be made.
pub(super) fn open(path: &Path) -> Result<Connection, StoreError> {
    std::fs::metadata(path).map_err(|source| StoreError::Io {
        path: path.to_owned(),
        source,
    })?;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = match Connection::open_with_flags(path, flags)
        .and_then(|c| probe(&c).map(|v| (c, v)))
    {
        Ok((conn, version)) => {
            schema::refuse_newer(path, version)?;
            return Ok(conn);
        }
        Err(e) if is_unreadable_wal(&e) => Connection::open_with_flags(immutable_uri(path), flags)
            .map_err(|e| classify(path, e))?,
        Err(e) => return Err(classify(path, e)),
    };
    let version = probe(&conn).map_err(|e| classify(path, e))?;
    schema::refuse_newer(path, version)?;
    Ok(conn)
}

/// Reads the schema version and the table list: a file that is not a database fails here.
fn probe(conn: &Connection) -> rusqlite::Result<i64> {
    let version = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(version)
}

/// The failure of a read-only WAL-mode file whose `-shm` cannot be made.
fn is_unreadable_wal(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
    )
}

/// `file:PATH?immutable=1`, with `%`, `?` and `#` percent-encoded.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewTask, SqliteStore, TaskStore};
    use switchyard_api::Message;

    #[tokio::test]
    async fn a_read_only_open_reads_everything_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).unwrap();
        let new = NewTask {
            cwd: "/w".into(),
            mode: "act".into(),
            provider: "openai".into(),
            model: "m".into(),
            first_prompt: "hello".into(),
        };
        let task = store
            .create_task_with_message(&new, &Message::user_text("hello"))
            .await
            .unwrap();
        drop(store);
        let path = dir.path().join(super::super::DB_FILE);
        let before = std::fs::read(&path).unwrap();

        let store = SqliteStore::open_read_only(&path).unwrap();
        let listed = store.list_tasks().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].first_prompt, "hello");
        assert_eq!(store.messages(&task.id).await.unwrap().len(), 1);
        let written = store.create_task(&new).await;
        assert!(
            matches!(written, Err(StoreError::ReadOnly { .. })),
            "{written:?}"
        );
        drop(store);
        assert_eq!(std::fs::read(&path).unwrap(), before);
        let missing = SqliteStore::open_read_only(&dir.path().join("none.db"));
        assert!(matches!(missing, Err(StoreError::Io { .. })), "{missing:?}");
    }

    #[test]
    fn the_uri_keeps_a_path_with_uri_characters_whole() {
        assert_eq!(
            immutable_uri(Path::new("/b a/x%?#.db")),
            "file:/b a/x%25%3f%23.db?immutable=1"
        );
    }
}
