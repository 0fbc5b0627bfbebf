//! Budget holds on SQLite: indexed reads and one insert under `BEGIN IMMEDIATE`.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::reals;
use crate::store::StoreError;
use crate::store::gateway::claims::hold_sql;
use crate::store::gateway::holds::{
    HoldOutcome, HoldRequest, HoldUse, decide_hold, settled_amount,
};
use crate::store::gateway::requests::RequestRecord;
use crate::store::gateway::totals::Deltas;
use crate::store::sqlite::Db;

/// Takes the hold at `synchronous = NORMAL`, saving an `fsync` per keyed request.
pub(super) fn hold(db: &Db, req: &HoldRequest) -> Result<HoldOutcome, StoreError> {
    let mut conn = db.conn();
    conn.execute_batch("PRAGMA synchronous = NORMAL")
        .map_err(|e| db.err(e))?;
    let result = take_hold(&mut conn, req);
    conn.execute_batch("PRAGMA synchronous = FULL")
        .map_err(|e| db.err(e))?;
    result.map_err(|e| db.conflict(e, &req.id))
}

fn take_hold(conn: &mut Connection, req: &HoldRequest) -> rusqlite::Result<HoldOutcome> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let used = reals(&tx, &hold_sql(req, '?', true), 5)?;
    let used = HoldUse {
        key_usd: used[0],
        key_in_flight: used[1].max(0.0).ceil() as u64,
        user_usd: used[2],
        team_usd: used[3],
        gateway_usd: used[4],
    };
    let outcome = decide_hold(req, &used);
    if outcome == HoldOutcome::Held {
        tx.prepare_cached(
            "INSERT INTO budget_holds (id, key_id, team, ts_ms, reserved_usd, expires_ms, user_id,
                 route, dialect, stream)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?
        .execute(params![
            req.id,
            req.key.id,
            req.key.team,
            req.now_ms,
            req.amount_usd,
            req.expires_ms,
            req.key.owner,
            req.asked.route,
            req.asked.dialect,
            req.asked.stream
        ])?;
    }
    tx.commit()?;
    Ok(outcome)
}

/// Settles each keyed record's open hold into `deltas`; returns the amounts by id.
pub(crate) fn settle_holds(
    tx: &Transaction<'_>,
    records: &[RequestRecord],
    deltas: &mut Deltas,
) -> rusqlite::Result<HashMap<String, f64>> {
    let mut settled = HashMap::new();
    for r in records.iter().filter(|r| r.key_id.is_some()) {
        type Open = (f64, String, Option<String>, i64, Option<String>);
        let open: Option<Open> = tx
            .prepare_cached(
                "SELECT reserved_usd, key_id, team, ts_ms, user_id FROM budget_holds
                 WHERE id = ?1 AND settled_usd IS NULL",
            )?
            .query_row([&r.id], |h| {
                Ok((h.get(0)?, h.get(1)?, h.get(2)?, h.get(3)?, h.get(4)?))
            })
            .optional()?;
        let Some((reserved, key, team, ts, user)) = open else {
            continue;
        };
        let amount = settled_amount(r, reserved);
        tx.prepare_cached("UPDATE budget_holds SET settled_usd = ?2 WHERE id = ?1")?
            .execute(params![r.id, amount])?;
        deltas.hold((&key, user.as_deref()), team.as_deref(), ts, amount);
        settled.insert(r.id.clone(), amount);
    }
    Ok(settled)
}

/// Writes a settled ledger row for each leased record [`settle_holds`] found no hold for.
pub(crate) fn insert_leased(
    tx: &Transaction<'_>,
    leased: &[(&RequestRecord, f64)],
    settled: &mut HashMap<String, f64>,
    deltas: &mut Deltas,
) -> rusqlite::Result<()> {
    for (r, reserved) in leased {
        let Some(key) = &r.key_id else { continue };
        if settled.contains_key(&r.id) {
            continue;
        }
        let amount = settled_amount(r, *reserved);
        // The key's owner as written: one admitted just before an owner change counts for the
        // new owner.
        let owner: Option<String> = tx
            .prepare_cached("SELECT owner FROM client_keys WHERE id = ?1")?
            .query_row([key], |k| k.get(0))
            .optional()?
            .flatten();
        tx.prepare_cached(
            "INSERT INTO budget_holds
                 (id, key_id, team, ts_ms, reserved_usd, expires_ms, settled_usd, user_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?4, ?6, ?7)",
        )?
        .execute(params![
            r.id,
            key,
            r.team,
            r.started_ms,
            reserved,
            amount,
            owner
        ])?;
        deltas.hold(
            (key, owner.as_deref()),
            r.team.as_deref(),
            r.started_ms,
            amount,
        );
        settled.insert(r.id.clone(), amount);
    }
    Ok(())
}

/// Takes back the `lost` record of each of `records` charged as lost before its own record
/// arrived: its row, its spend and its hold's charge, the hold left open for the record to
/// settle. So a late record replaces its lost one and nothing is charged twice.
pub(crate) fn undo_lost(
    tx: &Transaction<'_>,
    records: &[RequestRecord],
    deltas: &mut Deltas,
) -> rusqlite::Result<()> {
    for r in records.iter().filter(|r| r.key_id.is_some()) {
        let lost: Option<i64> = tx
            .prepare_cached(
                "DELETE FROM gateway_requests WHERE id = ?1 AND status = 'lost' RETURNING started_ms",
            )?
            .query_row([&r.id], |row| row.get(0))
            .optional()?;
        let Some(started) = lost else { continue };
        type Settled = (String, Option<String>, i64, f64, Option<String>);
        let hold: Option<Settled> = tx
            .prepare_cached(
                "SELECT key_id, team, ts_ms, settled_usd, user_id FROM budget_holds
                 WHERE id = ?1 AND settled_usd IS NOT NULL",
            )?
            .query_row([&r.id], |h| {
                Ok((h.get(0)?, h.get(1)?, h.get(2)?, h.get(3)?, h.get(4)?))
            })
            .optional()?;
        if let Some((key, team, ts, settled, user)) = hold {
            deltas.hold((&key, user.as_deref()), team.as_deref(), ts, -settled);
            tx.prepare_cached("UPDATE budget_holds SET settled_usd = NULL WHERE id = ?1")?
                .execute([&r.id])?;
        }
        // A lost record's spend is at its arrival, which the index on time finds.
        let spent: Vec<f64> = tx
            .prepare_cached(
                "DELETE FROM spend WHERE ts_ms = ?1 AND task_id = ?2 RETURNING cost_usd",
            )?
            .query_map(params![started, r.id], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for cost in spent {
            deltas.spend(started, -cost);
        }
    }
    Ok(())
}
