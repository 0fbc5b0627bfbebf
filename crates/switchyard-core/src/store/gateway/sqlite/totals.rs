//! Running totals on SQLite, added to in the settling transaction and checked.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::store::StoreError;
use crate::store::gateway::claims::{ADD_TOTAL, recompute_sql, total_key};
use crate::store::gateway::totals::{Deltas, TotalKey, TotalsCheck, compare};
use crate::store::sqlite::Db;

/// Adds `deltas` to their totals, creating those used for the first time.
pub(crate) fn add_totals(conn: &Connection, deltas: &Deltas) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(ADD_TOTAL)?;
    for (k, usd) in &deltas.0 {
        stmt.execute(params![
            k.scope.name(),
            k.id,
            k.window.name(),
            k.bucket_ms,
            usd
        ])?;
    }
    Ok(())
}

/// The total `key`, 0 when never used.
pub(crate) fn total(conn: &Connection, key: &TotalKey) -> rusqlite::Result<f64> {
    let sql = "SELECT settled_usd FROM budget_totals
               WHERE scope = ?1 AND id = ?2 AND span = ?3 AND bucket_ms = ?4";
    let found = conn
        .prepare_cached(sql)?
        .query_row(
            params![key.scope.name(), key.id, key.window.name(), key.bucket_ms],
            |r| r.get(0),
        )
        .optional()?;
    Ok(found.unwrap_or(0.0))
}

fn totals(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<(TotalKey, f64)>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |r| {
        let (scope, span): (String, String) = (r.get(0)?, r.get(2)?);
        let usd: f64 = r.get(4)?;
        Ok(total_key(&scope, r.get(1)?, &span, r.get(3)?).map(|k| (k, usd)))
    })?;
    Ok(rows
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect())
}

/// Compares every total with the ledger; `repair` rewrites them under the write lock.
pub(crate) fn check_totals(db: &Db, repair: bool) -> Result<TotalsCheck, StoreError> {
    let mut conn = db.conn();
    let behavior = if repair {
        TransactionBehavior::Immediate
    } else {
        TransactionBehavior::Deferred
    };
    let run = |conn: &mut Connection| -> rusqlite::Result<TotalsCheck> {
        let tx = conn.transaction_with_behavior(behavior)?;
        let stored = totals(
            &tx,
            "SELECT scope, id, span, bucket_ms, settled_usd FROM budget_totals",
        )?;
        let mut check = compare(stored, totals(&tx, &recompute_sql(true))?);
        if repair && !check.differences.is_empty() {
            let mut stmt = tx.prepare(
                "INSERT INTO budget_totals (scope, id, span, bucket_ms, settled_usd)
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (scope, id, span, bucket_ms)
                 DO UPDATE SET settled_usd = excluded.settled_usd",
            )?;
            for d in &check.differences {
                let k = &d.key;
                let usd = d.recomputed_usd;
                stmt.execute(params![
                    k.scope.name(),
                    k.id,
                    k.window.name(),
                    k.bucket_ms,
                    usd
                ])?;
            }
            drop(stmt);
            check.repaired = true;
        }
        tx.commit()?;
        Ok(check)
    };
    run(&mut conn).map_err(|e| db.err(e))
}
