//! The gateway's request log on SQLite ([`crate::store::RequestLog`], SPEC R14.4, R14.9): a
//! row per relayed request and, in the same transaction, its cost as a `spend` row (R12.2).

use rusqlite::params;

use super::history::is_constraint;
use super::{Db, SqliteStore};
use crate::store::rows::{REQUEST_COLUMNS, request_counts, request_from_row, request_spent_ms};
use crate::store::{RequestLog, RequestRecord, StoreError, StoreFuture};

impl Db {
    /// Writes the record (and settles its hold, logs its spend) with `synchronous = NORMAL`,
    /// as holds and rate-limit slots are taken: the rows survive the process being killed;
    /// a machine crash can lose the records of the last moments before it, whose holds then
    /// count until their lease ends. It saves the `fsync` per request that every next
    /// request's limit checks waited behind on the one connection (bench/README.md: SQLite
    /// was 36 % of the gateway's CPU at concurrency 1, `fsync` 13 %).
    fn record_request(&self, r: &RequestRecord) -> Result<(), StoreError> {
        let mut conn = self.conn();
        conn.execute_batch("PRAGMA synchronous = NORMAL")
            .map_err(|e| self.err(e))?;
        let result = self.write_request(&mut conn, r);
        conn.execute_batch("PRAGMA synchronous = FULL")
            .map_err(|e| self.err(e))?;
        result
    }

    /// [`Db::record_request`]'s transaction.
    fn write_request(
        &self,
        conn: &mut rusqlite::Connection,
        r: &RequestRecord,
    ) -> Result<(), StoreError> {
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let [stream, input, output, cache_read, cache_write] = request_counts(r);
        tx.execute(
            &format!(
                "INSERT INTO gateway_requests ({REQUEST_COLUMNS})
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"
            ),
            params![
                r.id,
                r.started_ms,
                r.route,
                r.dialect,
                stream,
                r.provider,
                r.model,
                input,
                output,
                cache_read,
                cache_write,
                r.cost_usd,
                r.first_token_ms,
                r.duration_ms,
                r.outcome.status(),
                r.outcome.error_kind(),
                r.key_id,
                r.team
            ],
        )
        .map_err(|e| {
            if is_constraint(&e) {
                StoreError::Conflict { id: r.id.clone() }
            } else {
                self.err(e)
            }
        })?;
        // A keyed request's hold is settled here (SPEC R14.7): its spend is what it settles at.
        let spent = Db::settle_hold(&tx, r).map_err(|e| self.err(e))?;
        if let Some(cost) = spent.or(r.cost_usd).filter(|c| *c != 0.0) {
            tx.execute(
                "INSERT INTO spend (ts_ms, task_id, cost_usd) VALUES (?1, ?2, ?3)",
                params![request_spent_ms(r), r.id, cost],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    fn recent_requests(&self, limit: usize) -> Result<Vec<RequestRecord>, StoreError> {
        let conn = self.conn();
        let limit = if limit == 0 { -1 } else { limit as i64 };
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {REQUEST_COLUMNS} FROM gateway_requests
                 ORDER BY started_ms DESC, id DESC LIMIT ?1"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([limit], |r| request_from_row(r))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }
}

impl RequestLog for SqliteStore {
    fn record_request(&self, record: &RequestRecord) -> StoreFuture<'static, ()> {
        self.with(record, Db::record_request)
    }

    fn recent_requests(&self, limit: usize) -> StoreFuture<'static, Vec<RequestRecord>> {
        self.call(move |db| db.recent_requests(limit))
    }
}
