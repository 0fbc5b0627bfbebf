//! The gateway's stored Responses on SQLite.

use rusqlite::{OptionalExtension, params};

use crate::store::gateway::responses::{ResponseStore, StoredResponse};
use crate::store::gateway::rows::{RESPONSE_COLUMNS, ResponseRow, response_json};
use crate::store::sqlite::{Db, SqliteStore};
use crate::store::{StoreError, StoreFuture};

fn store(db: &Db, r: &StoredResponse) -> Result<(), StoreError> {
    let (messages, answer) = response_json(r)?;
    let mut conn = db.conn();
    let tx = conn.transaction().map_err(|e| db.err(e))?;
    tx.execute(
        "DELETE FROM gateway_responses WHERE expires_ms <= ?1",
        [r.created_ms],
    )
    .map_err(|e| db.err(e))?;
    tx.execute(
        &format!(
            "INSERT INTO gateway_responses ({RESPONSE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        ),
        params![
            r.id,
            r.created_ms,
            r.expires_ms,
            r.route,
            r.system_prompt,
            messages,
            answer
        ],
    )
    .map_err(|e| db.conflict(e, &r.id))?;
    tx.commit().map_err(|e| db.err(e))
}

fn find(db: &Db, id: &str, now_ms: i64) -> Result<Option<StoredResponse>, StoreError> {
    let row = db
        .conn()
        .query_row(
            &format!(
                "SELECT {RESPONSE_COLUMNS} FROM gateway_responses WHERE id = ?1 AND expires_ms > ?2"
            ),
            params![id, now_ms],
            |r| ResponseRow::read(r),
        )
        .optional()
        .map_err(|e| db.err(e))?;
    row.map(ResponseRow::response).transpose()
}

impl ResponseStore for SqliteStore {
    fn store_response(&self, response: &StoredResponse) -> StoreFuture<'static, ()> {
        self.with(response, store)
    }

    fn stored_response(
        &self,
        id: &str,
        now_ms: i64,
    ) -> StoreFuture<'static, Option<StoredResponse>> {
        let id = id.to_owned();
        self.call(move |db| find(db, &id, now_ms))
    }
}
