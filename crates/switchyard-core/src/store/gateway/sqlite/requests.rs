//! The gateway's request log on SQLite, a batch and all it settles in one transaction.

use rusqlite::{Connection, Transaction, params};

use super::holds::{insert_leased, settle_holds, undo_lost};
use super::totals::add_totals;
use crate::store::gateway::leases::LeasedRecord;
use crate::store::gateway::requests::{RequestLog, RequestRecord};
use crate::store::gateway::rows::{
    PRUNE_REQUESTS, REQUEST_COLUMNS, request_counts, request_from_row, request_spent_ms,
};
use crate::store::gateway::totals::Deltas;
use crate::store::sqlite::{Db, SqliteStore};
use crate::store::{StoreError, StoreFuture};

/// The most rows one `INSERT` writes, well under SQLite's bound parameters.
const ROWS_PER_INSERT: usize = 256;

/// Writes `records` at `synchronous = NORMAL`, with the lease reservations `leased` gives.
pub(crate) fn write_records(
    db: &Db,
    records: &[RequestRecord],
    leased: &[f64],
) -> Result<(), StoreError> {
    let mut conn = db.conn();
    conn.execute_batch("PRAGMA synchronous = NORMAL")
        .map_err(|e| db.err(e))?;
    let result = write(db, &mut conn, records, leased);
    conn.execute_batch("PRAGMA synchronous = FULL")
        .map_err(|e| db.err(e))?;
    result
}

fn write(
    db: &Db,
    conn: &mut Connection,
    records: &[RequestRecord],
    leased: &[f64],
) -> Result<(), StoreError> {
    let tx = conn.transaction().map_err(|e| db.err(e))?;
    write_in(db, &tx, records, leased)?;
    tx.commit().map_err(|e| db.err(e))
}

/// Writes `records` in `tx`: their rows, their holds settled, their spend and totals, and
/// their traces ended.
pub(crate) fn write_in(
    db: &Db,
    tx: &Transaction<'_>,
    records: &[RequestRecord],
    leased: &[f64],
) -> Result<(), StoreError> {
    let mut deltas = Deltas::default();
    undo_lost(tx, records, &mut deltas).map_err(|e| db.err(e))?;
    for rows in records.chunks(ROWS_PER_INSERT) {
        insert_rows(db, tx, rows)?;
    }
    let ledger = |tx: &Transaction<'_>, deltas: &mut Deltas| {
        let mut settled = settle_holds(tx, records, deltas)?;
        let pairs: Vec<(&RequestRecord, f64)> =
            records.iter().zip(leased.iter().copied()).collect();
        insert_leased(tx, &pairs, &mut settled, deltas)?;
        for r in records {
            let Some(cost) = settled.get(&r.id).copied().or(r.cost_usd) else {
                continue;
            };
            if cost != 0.0 {
                tx.prepare_cached(
                    "INSERT INTO spend (ts_ms, task_id, cost_usd) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![request_spent_ms(r), r.id, cost])?;
                deltas.spend(request_spent_ms(r), cost);
            }
        }
        let mut end = tx.prepare_cached("DELETE FROM gateway_open WHERE id = ?1")?;
        for r in records {
            end.execute([&r.id])?;
        }
        add_totals(tx, deltas)
    };
    ledger(tx, &mut deltas).map_err(|e| db.err(e))
}

/// One multi-row insert of `rows`; a taken id is a conflict of the first, SQLite not saying.
fn insert_rows(db: &Db, tx: &Transaction<'_>, rows: &[RequestRecord]) -> Result<(), StoreError> {
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
    // The single row is cached; a batch's size varies.
    let args = args.as_slice();
    let written = if rows.len() == 1 {
        tx.prepare_cached(&sql).and_then(|mut s| s.execute(args))
    } else {
        tx.prepare(&sql).and_then(|mut s| s.execute(args))
    };
    let first = rows.first().map_or("", |r| r.id.as_str());
    written.map(drop).map_err(|e| db.conflict(e, first))
}

/// Runs a prune statement, `?1` before and `?2` the most rows; how many rows it deleted.
pub(super) fn prune(db: &Db, sql: &str, before_ms: i64, limit: u64) -> Result<u64, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let n = (db.conn().execute(sql, params![before_ms, limit])).map_err(|e| db.err(e))?;
    Ok(n as u64)
}

fn recent(db: &Db, limit: usize) -> Result<Vec<RequestRecord>, StoreError> {
    let conn = db.conn();
    let limit = if limit == 0 { -1 } else { limit as i64 };
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {REQUEST_COLUMNS} FROM gateway_requests
             ORDER BY started_ms DESC, id DESC LIMIT ?1"
        ))
        .map_err(|e| db.err(e))?;
    let rows = (stmt.query_map([limit], |r| request_from_row(r))).map_err(|e| db.err(e))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(|e| db.err(e))
}

/// The records of `leased` and their reservations, apart.
pub(super) fn split(leased: &[LeasedRecord]) -> (Vec<RequestRecord>, Vec<f64>) {
    (leased.iter())
        .map(|l| (l.record.clone(), l.reserved_usd))
        .unzip()
}

impl RequestLog for SqliteStore {
    fn record_request(&self, record: &RequestRecord) -> StoreFuture<'static, ()> {
        self.with(record, |db, r| {
            write_records(db, std::slice::from_ref(r), &[])
        })
    }

    fn record_requests(&self, records: &[RequestRecord]) -> StoreFuture<'static, ()> {
        let records = records.to_vec();
        self.call(move |db| write_records(db, &records, &[]))
    }

    fn prune_requests(&self, before_ms: i64, limit: u64) -> StoreFuture<'static, u64> {
        self.call(move |db| prune(db, PRUNE_REQUESTS, before_ms, limit))
    }

    fn recent_requests(&self, limit: usize) -> StoreFuture<'static, Vec<RequestRecord>> {
        self.call(move |db| recent(db, limit))
    }
}
