//! The gateway's stored Responses on SQLite ([`crate::store::ResponseStore`], SPEC R14.1): a
//! row per stored answer; expired rows are deleted in the transaction that stores the next.

use rusqlite::{OptionalExtension, params};

use super::history::is_constraint;
use super::{Db, SqliteStore};
use crate::store::rows::{RESPONSE_COLUMNS, ResponseRow, response_json};
use crate::store::{ResponseStore, StoreError, StoreFuture, StoredResponse};

impl Db {
    fn store_response(&self, r: &StoredResponse) -> Result<(), StoreError> {
        let (messages, answer) = response_json(r)?;
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        tx.execute(
            "DELETE FROM gateway_responses WHERE expires_ms <= ?1",
            [r.created_ms],
        )
        .map_err(|e| self.err(e))?;
        tx.execute(
            &format!("INSERT INTO gateway_responses ({RESPONSE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
            params![r.id, r.created_ms, r.expires_ms, r.route, r.system_prompt, messages, answer],
        )
        .map_err(|e| {
            if is_constraint(&e) {
                StoreError::Conflict { id: r.id.clone() }
            } else {
                self.err(e)
            }
        })?;
        tx.commit().map_err(|e| self.err(e))
    }

    fn stored_response(&self, id: &str, now_ms: i64) -> Result<Option<StoredResponse>, StoreError> {
        let conn = self.conn();
        let row = conn
            .query_row(
                &format!(
                    "SELECT {RESPONSE_COLUMNS} FROM gateway_responses
                     WHERE id = ?1 AND expires_ms > ?2"
                ),
                params![id, now_ms],
                |r| ResponseRow::read(r),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        row.map(ResponseRow::response).transpose()
    }
}

impl ResponseStore for SqliteStore {
    fn store_response(&self, response: &StoredResponse) -> StoreFuture<'static, ()> {
        self.with(response, Db::store_response)
    }

    fn stored_response(
        &self,
        id: &str,
        now_ms: i64,
    ) -> StoreFuture<'static, Option<StoredResponse>> {
        let id = id.to_owned();
        self.call(move |db| db.stored_response(&id, now_ms))
    }
}
