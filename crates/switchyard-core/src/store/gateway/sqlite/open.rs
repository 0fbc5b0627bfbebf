//! Traces of admitted requests on SQLite, and the lost ones recorded at their reservations.

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::requests::write_in;
use crate::store::gateway::open::{OpenRequest, OpenStore};
use crate::store::sqlite::{Db, SqliteStore};
use crate::store::{StoreError, StoreFuture};

/// Runs `f` in one immediate transaction at `synchronous = NORMAL`, as records are written.
fn normal<T>(
    db: &Db,
    f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut conn = db.conn();
    conn.execute_batch("PRAGMA synchronous = NORMAL")
        .map_err(|e| db.err(e))?;
    let run = |conn: &mut Connection| {
        let tx = (conn.transaction_with_behavior(TransactionBehavior::Immediate))
            .map_err(|e| db.err(e))?;
        let out = f(&tx)?;
        tx.commit().map_err(|e| db.err(e))?;
        Ok(out)
    };
    let result = run(&mut conn);
    conn.execute_batch("PRAGMA synchronous = FULL")
        .map_err(|e| db.err(e))?;
    result
}

fn insert_open(
    tx: &Transaction<'_>,
    rows: &[OpenRequest],
    expires_ms: i64,
) -> rusqlite::Result<()> {
    // A record written first, its trace queued behind it, needs no trace.
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO gateway_open (id, holder, started_ms, route, dialect, stream,
           key_id, team, reserved_usd, expires_ms)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10
         WHERE NOT EXISTS (SELECT 1 FROM gateway_requests WHERE id = ?1)",
    )?;
    for r in rows {
        insert.execute(params![
            r.id,
            r.holder,
            r.started_ms,
            r.route,
            r.dialect,
            i64::from(r.stream),
            r.key_id,
            r.team,
            r.reserved_usd,
            expires_ms
        ])?;
    }
    Ok(())
}

/// The traces expired by `now`, then the store holds expired unsettled, at most `limit`.
fn expired(tx: &Transaction<'_>, now: i64, limit: i64) -> rusqlite::Result<Vec<OpenRequest>> {
    let mut lost: Vec<OpenRequest> = tx
        .prepare_cached(
            "SELECT id, holder, started_ms, route, dialect, stream, key_id, team, reserved_usd
             FROM gateway_open WHERE expires_ms <= ?1 ORDER BY expires_ms LIMIT ?2",
        )?
        .query_map(params![now, limit], |r| {
            Ok(OpenRequest {
                id: r.get(0)?,
                holder: r.get(1)?,
                started_ms: r.get(2)?,
                route: r.get(3)?,
                dialect: r.get(4)?,
                stream: r.get::<_, i64>(5)? != 0,
                key_id: r.get(6)?,
                team: r.get(7)?,
                reserved_usd: r.get(8)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let left = limit - lost.len() as i64;
    // A hold taken before schema 12 keeps no route or dialect: its record names neither.
    let holds = tx
        .prepare_cached(
            "SELECT id, key_id, team, ts_ms, reserved_usd,
                 COALESCE(route, ''), COALESCE(dialect, ''), COALESCE(stream, 0) FROM budget_holds
             WHERE settled_usd IS NULL AND expires_ms <= ?1 ORDER BY expires_ms LIMIT ?2",
        )?
        .query_map(params![now, left.max(0)], |r| {
            Ok(OpenRequest {
                id: r.get(0)?,
                holder: String::new(),
                started_ms: r.get(3)?,
                route: r.get(5)?,
                dialect: r.get(6)?,
                stream: r.get::<_, i64>(7)? != 0,
                key_id: r.get(1)?,
                team: r.get(2)?,
                reserved_usd: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let fresh: Vec<OpenRequest> = (holds.into_iter())
        .filter(|h| !lost.iter().any(|l| l.id == h.id))
        .collect();
    lost.extend(fresh);
    Ok(lost)
}

fn charge_lost(db: &Db, now: i64, limit: u64) -> Result<u64, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // Most sweeps find nothing: they read without taking the write lock.
    let any: bool = (db.conn())
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM gateway_open WHERE expires_ms <= ?1)
               OR EXISTS (SELECT 1 FROM budget_holds
                          WHERE settled_usd IS NULL AND expires_ms <= ?1)",
        )
        .and_then(|mut s| s.query_row([now], |r| r.get(0)))
        .map_err(|e| db.err(e))?;
    if !any {
        return Ok(0);
    }
    normal(db, |tx| {
        let lost = expired(tx, now, limit).map_err(|e| db.err(e))?;
        let mut records = Vec::with_capacity(lost.len());
        let mut reserved = Vec::with_capacity(lost.len());
        for open in &lost {
            let recorded: bool = (tx
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM gateway_requests WHERE id = ?1)"))
            .and_then(|mut s| s.query_row([&open.id], |r| r.get(0)))
            .map_err(|e| db.err(e))?;
            if recorded {
                // Recorded without settling it: nothing more to charge, and no sweep finds it again.
                (tx.execute("DELETE FROM gateway_open WHERE id = ?1", [&open.id]))
                    .and_then(|_| {
                        tx.execute(
                            "UPDATE budget_holds SET settled_usd = 0 WHERE id = ?1 AND settled_usd IS NULL",
                            [&open.id],
                        )
                    })
                    .map_err(|e| db.err(e))?;
            } else {
                records.push(open.lost());
                reserved.push(open.reserved_usd);
            }
        }
        write_in(db, tx, &records, &reserved)?;
        Ok(lost.len() as u64)
    })
}

impl OpenStore for SqliteStore {
    fn open_requests<'a>(
        &'a self,
        open: &'a [OpenRequest],
        expires_ms: i64,
    ) -> StoreFuture<'a, ()> {
        let rows = open.to_vec();
        self.call(move |db| {
            normal(db, |tx| {
                insert_open(tx, &rows, expires_ms).map_err(|e| db.err(e))
            })
        })
    }

    fn renew_open<'a>(&'a self, holder: &'a str, expires_ms: i64) -> StoreFuture<'a, u64> {
        let holder = holder.to_owned();
        self.call(move |db| {
            let n = (db.conn())
                .execute(
                    "UPDATE gateway_open SET expires_ms = ?2 WHERE holder = ?1",
                    params![holder, expires_ms],
                )
                .map_err(|e| db.err(e))?;
            Ok(n as u64)
        })
    }

    fn charge_lost(&self, now_ms: i64, limit: u64) -> StoreFuture<'_, u64> {
        self.call(move |db| charge_lost(db, now_ms, limit))
    }
}
