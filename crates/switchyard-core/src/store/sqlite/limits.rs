//! The limits state of SPEC R12 on SQLite: cooldowns, spend by time, rate-limit slots and
//! learnt limits ([`crate::limits::LimitsStore`]).
//!
//! A slot is taken in one `BEGIN IMMEDIATE` transaction: it takes SQLite's write lock before
//! reading, so two processes cannot both count the same free slot; the other waits (busy
//! timeout) and then sees the first one's row.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::{Db, SqliteStore};
use crate::limits::{
    Cooldown, EntryKey, LearntLimits, LimitsStore, RATE_WINDOW_MS, RateState, SlotGrant,
    SlotRequest, decide_slot,
};
use crate::store::{StoreError, StoreFuture};

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn to_u64(v: i64) -> u64 {
    v.max(0) as u64
}

fn learnt_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<LearntLimits> {
    Ok(LearntLimits {
        observed_ms: r.get(0)?,
        requests_remaining: r.get::<_, Option<i64>>(1)?.map(to_u64),
        requests_reset_ms: r.get(2)?,
        tokens_remaining: r.get::<_, Option<i64>>(3)?.map(to_u64),
        tokens_reset_ms: r.get(4)?,
    })
}

const LEARNT_COLUMNS: &str =
    "observed_ms, requests_remaining, requests_reset_ms, tokens_remaining, tokens_reset_ms";

impl Db {
    fn set_cooldown(&self, c: &Cooldown) -> Result<(), StoreError> {
        self.conn()
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
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn clear_cooldown(&self, k: &EntryKey) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "DELETE FROM cooldowns WHERE provider = ?1 AND model = ?2 AND base_url = ?3",
                params![k.provider, k.model, k.base_url],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn cooldowns(&self, now_ms: i64) -> Result<Vec<Cooldown>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT provider, model, base_url, since_ms, until_ms, reason FROM cooldowns
                 WHERE until_ms > ?1 ORDER BY until_ms, provider, model, base_url",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([now_ms], |r| {
                Ok(Cooldown {
                    entry: EntryKey {
                        provider: r.get(0)?,
                        model: r.get(1)?,
                        base_url: r.get(2)?,
                    },
                    since_ms: r.get(3)?,
                    until_ms: r.get(4)?,
                    reason: r.get(5)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    fn spend_between(&self, from_ms: i64, to_ms: i64) -> Result<f64, StoreError> {
        self.conn()
            .query_row(
                "SELECT coalesce(sum(cost_usd), 0.0) FROM spend WHERE ts_ms >= ?1 AND ts_ms < ?2",
                params![from_ms, to_ms],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// Takes the slot with `synchronous = NORMAL`: the row survives the process being killed,
    /// and a machine crash can lose only the count of a request being sent that instant (a
    /// slot is a count, not a record; the `api_req_started` event just before it is a full
    /// commit). It saves an `fsync` on the path from start to the first request (issue 17).
    fn acquire_rate_slot(&self, req: &SlotRequest) -> Result<SlotGrant, StoreError> {
        let mut conn = self.conn();
        conn.execute_batch("PRAGMA synchronous = NORMAL")
            .map_err(|e| self.err(e))?;
        let result = Self::take_slot(&mut conn, req).map_err(|e| self.err(e));
        conn.execute_batch("PRAGMA synchronous = FULL")
            .map_err(|e| self.err(e))?;
        result
    }

    /// [`Db::acquire_rate_slot`]'s transaction.
    fn take_slot(
        conn: &mut rusqlite::Connection,
        req: &SlotRequest,
    ) -> rusqlite::Result<SlotGrant> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let window_start = req.now_ms - RATE_WINDOW_MS;
        tx.execute(
            "DELETE FROM rate_slots WHERE key = ?1 AND ts_ms <= ?2",
            params![req.key, window_start],
        )?;
        let slots = {
            let mut stmt = tx.prepare_cached(
                "SELECT ts_ms, input_tokens FROM rate_slots WHERE key = ?1 AND ts_ms > ?2
                     ORDER BY ts_ms",
            )?;
            let rows = stmt.query_map(params![req.key, window_start], |r| {
                Ok((r.get::<_, i64>(0)?, to_u64(r.get(1)?)))
            })?;
            rows.collect::<Result<Vec<_>, _>>()?
        };
        let learnt = tx
            .query_row(
                &format!("SELECT {LEARNT_COLUMNS} FROM rate_learnt WHERE key = ?1"),
                [&req.key],
                learnt_from_row,
            )
            .optional()?;
        let grant = decide_slot(&slots, learnt.as_ref(), req);
        if grant == SlotGrant::Granted {
            tx.execute(
                "INSERT INTO rate_slots (key, ts_ms, input_tokens) VALUES (?1, ?2, ?3)",
                params![req.key, req.now_ms, to_i64(req.input_tokens)],
            )?;
        }
        tx.commit()?;
        Ok(grant)
    }

    fn record_learnt_limits(&self, key: &str, l: &LearntLimits) -> Result<(), StoreError> {
        self.conn()
            .execute(
                &format!(
                    "INSERT OR REPLACE INTO rate_learnt (key, {LEARNT_COLUMNS})
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
                ),
                params![
                    key,
                    l.observed_ms,
                    l.requests_remaining.map(to_i64),
                    l.requests_reset_ms,
                    l.tokens_remaining.map(to_i64),
                    l.tokens_reset_ms
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn rate_states(&self, now_ms: i64) -> Result<Vec<RateState>, StoreError> {
        let conn = self.conn();
        let window_start = now_ms - RATE_WINDOW_MS;
        let mut stmt = conn
            .prepare_cached(&format!(
                "WITH keys AS (
                   SELECT key FROM rate_slots WHERE ts_ms > ?1
                   UNION
                   SELECT key FROM rate_learnt
                   WHERE max(coalesce(requests_reset_ms, 0), coalesce(tokens_reset_ms, 0)) > ?2
                 )
                 SELECT keys.key,
                   (SELECT count(*) FROM rate_slots s WHERE s.key = keys.key AND s.ts_ms > ?1),
                   (SELECT coalesce(sum(input_tokens), 0) FROM rate_slots s
                      WHERE s.key = keys.key AND s.ts_ms > ?1),
                   (SELECT min(ts_ms) FROM rate_slots s WHERE s.key = keys.key AND s.ts_ms > ?1),
                   {LEARNT_COLUMNS}
                 FROM keys LEFT JOIN rate_learnt l ON l.key = keys.key
                 ORDER BY keys.key"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![window_start, now_ms], |r| {
                let observed: Option<i64> = r.get(4)?;
                Ok(RateState {
                    key: r.get(0)?,
                    requests_in_window: to_u64(r.get(1)?),
                    input_tokens_in_window: to_u64(r.get(2)?),
                    oldest_ms: r.get(3)?,
                    learnt: match observed {
                        Some(observed_ms) => Some(LearntLimits {
                            observed_ms,
                            requests_remaining: r.get::<_, Option<i64>>(5)?.map(to_u64),
                            requests_reset_ms: r.get(6)?,
                            tokens_remaining: r.get::<_, Option<i64>>(7)?.map(to_u64),
                            tokens_reset_ms: r.get(8)?,
                        }),
                        None => None,
                    },
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }
}

impl LimitsStore for SqliteStore {
    fn set_cooldown<'a>(&'a self, cooldown: &'a Cooldown) -> StoreFuture<'a, ()> {
        let cooldown = cooldown.clone();
        self.call(move |db| db.set_cooldown(&cooldown))
    }

    fn clear_cooldown<'a>(&'a self, entry: &'a EntryKey) -> StoreFuture<'a, ()> {
        let entry = entry.clone();
        self.call(move |db| db.clear_cooldown(&entry))
    }

    fn cooldowns(&self, now_ms: i64) -> StoreFuture<'_, Vec<Cooldown>> {
        self.call(move |db| db.cooldowns(now_ms))
    }

    fn spend_between(&self, from_ms: i64, to_ms: i64) -> StoreFuture<'_, f64> {
        self.call(move |db| db.spend_between(from_ms, to_ms))
    }

    fn acquire_rate_slot<'a>(&'a self, request: &'a SlotRequest) -> StoreFuture<'a, SlotGrant> {
        let request = request.clone();
        self.call(move |db| db.acquire_rate_slot(&request))
    }

    fn record_learnt_limits<'a>(
        &'a self,
        key: &'a str,
        learnt: &'a LearntLimits,
    ) -> StoreFuture<'a, ()> {
        let (key, learnt) = (key.to_owned(), *learnt);
        self.call(move |db| db.record_learnt_limits(&key, &learnt))
    }

    fn rate_states(&self, now_ms: i64) -> StoreFuture<'_, Vec<RateState>> {
        self.call(move |db| db.rate_states(now_ms))
    }
}
