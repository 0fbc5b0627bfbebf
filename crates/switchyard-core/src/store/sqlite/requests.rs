//! The gateway's request log on SQLite ([`crate::store::RequestLog`], SPEC R14.4, R14.9): a
//! row per relayed request and, in the same transaction, its cost as a `spend` row (R12.2).

use rusqlite::params;

use super::history::is_constraint;
use super::{Db, SqliteStore};
use crate::store::rows::{
    PRUNE_REQUESTS, REQUEST_COLUMNS, request_counts, request_from_row, request_spent_ms,
};
use crate::store::{RequestLog, RequestRecord, StoreError, StoreFuture};

/// The most rows one `INSERT` writes (18 columns each: well under SQLite's 32,766 bound
/// parameters).
const ROWS_PER_INSERT: usize = 256;

impl Db {
    /// Writes the records (and settles their holds, logs their spend) in one transaction,
    /// with `synchronous = NORMAL`, as holds and rate-limit slots are taken: the rows survive
    /// the process being killed; a machine crash can lose the records of the last moments
    /// before it, whose holds then count until their lease ends. It saves the `fsync` per
    /// request that every next request's limit checks waited behind on the one connection
    /// (bench/README.md: SQLite was 36 % of the gateway's CPU at concurrency 1, `fsync` 13 %).
    fn record_requests(&self, records: &[RequestRecord]) -> Result<(), StoreError> {
        let mut conn = self.conn();
        conn.execute_batch("PRAGMA synchronous = NORMAL")
            .map_err(|e| self.err(e))?;
        let result = self.write_requests(&mut conn, records);
        conn.execute_batch("PRAGMA synchronous = FULL")
            .map_err(|e| self.err(e))?;
        result
    }

    /// [`Db::record_requests`]'s transaction: the rows in multi-row inserts of at most
    /// [`ROWS_PER_INSERT`], then each keyed record's hold settled and each spend logged.
    fn write_requests(
        &self,
        conn: &mut rusqlite::Connection,
        records: &[RequestRecord],
    ) -> Result<(), StoreError> {
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        for rows in records.chunks(ROWS_PER_INSERT) {
            self.insert_rows(&tx, rows)?;
        }
        for r in records {
            // A keyed request's hold is settled here (SPEC R14.7): its spend is what it
            // settles at.
            let spent = Db::settle_hold(&tx, r).map_err(|e| self.err(e))?;
            if let Some(cost) = spent.or(r.cost_usd).filter(|c| *c != 0.0) {
                tx.prepare_cached(
                    "INSERT INTO spend (ts_ms, task_id, cost_usd) VALUES (?1, ?2, ?3)",
                )
                .and_then(|mut s| s.execute(params![request_spent_ms(r), r.id, cost]))
                .map_err(|e| self.err(e))?;
            }
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// One multi-row insert of `rows` into `gateway_requests`; an id already recorded is
    /// [`StoreError::Conflict`] (of the first row: SQLite does not say which).
    fn insert_rows(
        &self,
        tx: &rusqlite::Transaction<'_>,
        rows: &[RequestRecord],
    ) -> Result<(), StoreError> {
        let columns = REQUEST_COLUMNS.split(',').count();
        let values = (0..rows.len())
            .map(|i| {
                let marks = (1..=columns).map(|c| format!("?{}", i * columns + c));
                format!("({})", marks.collect::<Vec<_>>().join(", "))
            })
            .collect::<Vec<_>>()
            .join(", ");
        let counts: Vec<[i64; 5]> = rows.iter().map(request_counts).collect();
        let ends: Vec<(&str, Option<&str>)> = (rows.iter())
            .map(|r| (r.outcome.status(), r.outcome.error_kind()))
            .collect();
        let mut args: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(rows.len() * columns);
        for ((r, counts), (status, kind)) in rows.iter().zip(&counts).zip(&ends) {
            let [stream, input, output, cache_read, cache_write] = counts;
            args.extend([
                &r.id as &dyn rusqlite::ToSql,
                &r.started_ms,
                &r.route,
                &r.dialect,
                stream,
                &r.provider,
                &r.model,
                input,
                output,
                cache_read,
                cache_write,
                &r.cost_usd,
                &r.first_token_ms,
                &r.duration_ms,
                status,
                kind,
                &r.key_id,
                &r.team,
            ]);
        }
        let sql = format!("INSERT INTO gateway_requests ({REQUEST_COLUMNS}) VALUES {values}");
        // One statement cached for the common single row; a batch's size varies.
        let args = args.as_slice();
        let written = if rows.len() == 1 {
            tx.prepare_cached(&sql).and_then(|mut s| s.execute(args))
        } else {
            tx.prepare(&sql).and_then(|mut s| s.execute(args))
        };
        written.map(drop).map_err(|e| {
            if is_constraint(&e) {
                StoreError::Conflict {
                    id: rows.first().map(|r| r.id.clone()).unwrap_or_default(),
                }
            } else {
                self.err(e)
            }
        })
    }

    /// [`RequestLog::prune_requests`]: at most `limit` of the records that arrived before
    /// `before_ms`, the oldest first (their holds and spend rows stay).
    fn prune_requests(&self, before_ms: i64, limit: u64) -> Result<u64, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let n = self
            .conn()
            .execute(PRUNE_REQUESTS, params![before_ms, limit])
            .map_err(|e| self.err(e))?;
        Ok(n as u64)
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
        self.with(record, |db, r| db.record_requests(std::slice::from_ref(r)))
    }

    fn record_requests(&self, records: &[RequestRecord]) -> StoreFuture<'static, ()> {
        let records = records.to_vec();
        self.call(move |db| db.record_requests(&records))
    }

    fn prune_requests(&self, before_ms: i64, limit: u64) -> StoreFuture<'static, u64> {
        self.call(move |db| db.prune_requests(before_ms, limit))
    }

    fn recent_requests(&self, limit: usize) -> StoreFuture<'static, Vec<RequestRecord>> {
        self.call(move |db| db.recent_requests(limit))
    }
}
