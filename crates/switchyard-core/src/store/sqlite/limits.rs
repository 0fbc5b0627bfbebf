//! The limits state on SQLite; a slot is taken under the write lock.
//! Spec: R12, R13.2.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{Db, SqliteStore};
use crate::limits::state::{
    Cooldown, EntryKey, LearntLimits, LimitsStore, RATE_WINDOW_MS, RateState, SlotGrant,
    SlotRequest, decide_slot, slot_window,
};
use crate::store::gateway::sqlite::totals::total;
use crate::store::gateway::totals::{TotalKey, TotalScope};
use crate::store::rows::{
    COOLDOWN_COLUMNS, LEARNT_COLUMNS, SLOT_REQUESTS, cooldown_from_row, expand_slots,
    learnt_columns, learnt_from_row, rate_state_from_row, slot_from_row, to_i64, to_u64,
    window_start,
};
use crate::store::{BudgetWindow, StoreError, StoreFuture};

/// The most slot rows of a key one write deletes.
const PRUNE_ROWS: i64 = 64;

/// Deletes a few of `key`'s slots two minutes old, for clocks up to a minute behind.
pub(crate) fn prune_slots(conn: &Connection, key: &str, now_ms: i64) -> rusqlite::Result<()> {
    let old = now_ms - 2 * RATE_WINDOW_MS;
    // Most writes find nothing to delete, and this look costs less than the bounded delete.
    let any: Option<i64> = conn
        .prepare_cached("SELECT 1 FROM rate_slots WHERE key = ?1 AND ts_ms <= ?2 LIMIT 1")?
        .query_row(params![key, old], |r| r.get(0))
        .optional()?;
    if any.is_some() {
        conn.prepare_cached(
            "DELETE FROM rate_slots WHERE rowid IN (
               SELECT rowid FROM rate_slots WHERE key = ?1 AND ts_ms <= ?2 LIMIT ?3)",
        )?
        .execute(params![key, old, PRUNE_ROWS])?;
    }
    Ok(())
}

fn set_cooldown(db: &Db, c: &Cooldown) -> Result<(), StoreError> {
    db.conn()
        .execute(
            "INSERT INTO cooldowns (provider, model, base_url, since_ms, until_ms, reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (provider, model, base_url) DO UPDATE SET
               since_ms = excluded.since_ms, until_ms = excluded.until_ms,
               reason = excluded.reason
             WHERE excluded.until_ms > cooldowns.until_ms",
            params![
                c.entry.provider,
                c.entry.model,
                c.entry.base_url,
                c.since_ms,
                c.until_ms,
                c.reason
            ],
        )
        .map_err(|e| db.err(e))?;
    Ok(())
}

fn clear_cooldown(db: &Db, k: &EntryKey) -> Result<(), StoreError> {
    db.conn()
        .execute(
            "DELETE FROM cooldowns WHERE provider = ?1 AND model = ?2 AND base_url = ?3",
            params![k.provider, k.model, k.base_url],
        )
        .map_err(|e| db.err(e))?;
    Ok(())
}

fn cooldowns(db: &Db, now_ms: i64) -> Result<Vec<Cooldown>, StoreError> {
    let conn = db.conn();
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {COOLDOWN_COLUMNS} FROM cooldowns
             WHERE until_ms > ?1 ORDER BY until_ms, provider, model, base_url"
        ))
        .map_err(|e| db.err(e))?;
    let rows = (stmt.query_map([now_ms], |r| cooldown_from_row(r))).map_err(|e| db.err(e))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(|e| db.err(e))
}

/// A whole UTC day is read from the gateway's running total; any other range sums its rows.
fn spend_between(db: &Db, from_ms: i64, to_ms: i64) -> Result<f64, StoreError> {
    let conn = db.conn();
    if from_ms == BudgetWindow::Day.bucket_ms(from_ms) && to_ms == from_ms + 86_400_000 {
        let day = TotalKey::of(TotalScope::Gateway, "", BudgetWindow::Day, from_ms);
        // A read-only file of an older schema has no totals: its rows are summed.
        if let Ok(usd) = total(&conn, &day) {
            return Ok(usd);
        }
    }
    conn.query_row(
        "SELECT coalesce(sum(cost_usd), 0.0) FROM spend WHERE ts_ms >= ?1 AND ts_ms < ?2",
        params![from_ms, to_ms],
        |r| r.get(0),
    )
    .map_err(|e| db.err(e))
}

/// Takes the slot at `synchronous = NORMAL`, saving an `fsync` on the request's path.
fn acquire_rate_slot(db: &Db, req: &SlotRequest) -> Result<SlotGrant, StoreError> {
    let mut conn = db.conn();
    conn.execute_batch("PRAGMA synchronous = NORMAL")
        .map_err(|e| db.err(e))?;
    let result = take_slot(&mut conn, req).map_err(|e| db.err(e));
    conn.execute_batch("PRAGMA synchronous = FULL")
        .map_err(|e| db.err(e))?;
    result
}

fn take_slot(conn: &mut Connection, req: &SlotRequest) -> rusqlite::Result<SlotGrant> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let window_start = window_start(req.now_ms);
    prune_slots(&tx, &req.key, req.now_ms)?;
    let learnt = tx
        .prepare_cached(&format!(
            "SELECT {LEARNT_COLUMNS} FROM rate_learnt WHERE key = ?1"
        ))?
        .query_row([&req.key], |r| learnt_from_row(r, 0))
        .optional()?
        .flatten();
    let grant = match slot_window(learnt.as_ref(), req) {
        None => SlotGrant::Granted,
        Some(could_wait) => {
            let sql = format!(
                "SELECT coalesce(sum({SLOT_REQUESTS}), 0), coalesce(sum(input_tokens), 0)
                 FROM rate_slots WHERE key = ?1 AND ts_ms > ?2"
            );
            let (count, tokens) = tx
                .prepare_cached(&sql)?
                .query_row(params![req.key, window_start], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
                })?;
            if could_wait(to_u64(count), to_u64(tokens)) {
                let mut stmt = tx.prepare_cached(
                    "SELECT ts_ms, input_tokens, requests FROM rate_slots
                     WHERE key = ?1 AND ts_ms > ?2 ORDER BY ts_ms",
                )?;
                let rows = stmt.query_map(params![req.key, window_start], |r| slot_from_row(r))?;
                let rows = rows.collect::<Result<Vec<_>, _>>()?;
                decide_slot(&expand_slots(&rows), learnt.as_ref(), req)
            } else {
                SlotGrant::Granted
            }
        }
    };
    if grant == SlotGrant::Granted {
        tx.prepare_cached("INSERT INTO rate_slots (key, ts_ms, input_tokens) VALUES (?1, ?2, ?3)")?
            .execute(params![req.key, req.now_ms, to_i64(req.input_tokens)])?;
    }
    tx.commit()?;
    Ok(grant)
}

fn record_learnt_limits(db: &Db, key: &str, l: &LearntLimits) -> Result<(), StoreError> {
    let [requests, requests_reset, tokens, tokens_reset] = learnt_columns(l);
    db.conn()
        .execute(
            &format!(
                "INSERT OR REPLACE INTO rate_learnt (key, {LEARNT_COLUMNS})
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
            ),
            params![
                key,
                l.observed_ms,
                requests,
                requests_reset,
                tokens,
                tokens_reset
            ],
        )
        .map_err(|e| db.err(e))?;
    Ok(())
}

fn rate_states(db: &Db, now_ms: i64) -> Result<Vec<RateState>, StoreError> {
    let conn = db.conn();
    let window_start = window_start(now_ms);
    let mut stmt = conn
        .prepare_cached(&format!(
            "WITH keys AS (
               SELECT key FROM rate_slots WHERE ts_ms > ?1
               UNION
               SELECT key FROM rate_learnt
               WHERE max(coalesce(requests_reset_ms, 0), coalesce(tokens_reset_ms, 0)) > ?2
             )
             SELECT keys.key,
               (SELECT coalesce(sum({SLOT_REQUESTS}), 0) FROM rate_slots s
                  WHERE s.key = keys.key AND s.ts_ms > ?1),
               (SELECT coalesce(sum(input_tokens), 0) FROM rate_slots s
                  WHERE s.key = keys.key AND s.ts_ms > ?1),
               (SELECT min(ts_ms) FROM rate_slots s WHERE s.key = keys.key AND s.ts_ms > ?1),
               {LEARNT_COLUMNS}
             FROM keys LEFT JOIN rate_learnt l ON l.key = keys.key
             ORDER BY keys.key"
        ))
        .map_err(|e| db.err(e))?;
    let rows = stmt
        .query_map(params![window_start, now_ms], |r| rate_state_from_row(r))
        .map_err(|e| db.err(e))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(|e| db.err(e))
}

impl LimitsStore for SqliteStore {
    fn set_cooldown(&self, cooldown: &Cooldown) -> StoreFuture<'static, ()> {
        self.with(cooldown, set_cooldown)
    }

    fn clear_cooldown(&self, entry: &EntryKey) -> StoreFuture<'static, ()> {
        self.with(entry, clear_cooldown)
    }

    fn cooldowns(&self, now_ms: i64) -> StoreFuture<'static, Vec<Cooldown>> {
        self.call(move |db| cooldowns(db, now_ms))
    }

    fn spend_between(&self, from_ms: i64, to_ms: i64) -> StoreFuture<'static, f64> {
        self.call(move |db| spend_between(db, from_ms, to_ms))
    }

    fn acquire_rate_slot(&self, request: &SlotRequest) -> StoreFuture<'static, SlotGrant> {
        self.with(request, acquire_rate_slot)
    }

    fn record_learnt_limits(&self, key: &str, learnt: &LearntLimits) -> StoreFuture<'static, ()> {
        let (key, learnt) = (key.to_owned(), *learnt);
        self.call(move |db| record_learnt_limits(db, &key, &learnt))
    }

    fn rate_states(&self, now_ms: i64) -> StoreFuture<'static, Vec<RateState>> {
        self.call(move |db| rate_states(db, now_ms))
    }
}
