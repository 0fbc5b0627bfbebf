//! Client keys, teams and budget holds on SQLite ([`crate::store::KeyStore`], SPEC R14.6,
//! R14.7). A hold is decided and taken in one `BEGIN IMMEDIATE` transaction: SQLite's write
//! lock is taken before the amounts are read, so two processes on one file cannot both take
//! the last room under a cap; the other waits (busy timeout) and then sees the first's row.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::history::is_constraint;
use super::{Db, SqliteStore};
use crate::store::key_rows::{
    HOLD_AMOUNT, KEY_COLUMNS, TEAM_COLUMNS, hold_use_sql, key_from_row, models_json, opt_i64,
    team_from_row, usage_from_row, usage_sql,
};
use crate::store::keys::{
    ClientKey, HoldOutcome, HoldRequest, HoldUse, KeyStore, Team, UsageBy, UsageRow, decide_hold,
    settled_amount,
};
use crate::store::{RequestRecord, StoreError, StoreFuture};

impl Db {
    fn create_key(&self, (key, hash): &(ClientKey, String)) -> Result<(), StoreError> {
        let budget = key.budget.as_ref();
        self.conn()
            .execute(
                &format!(
                    "INSERT INTO client_keys (hash, {KEY_COLUMNS})
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
                ),
                params![
                    hash,
                    key.id,
                    key.prefix,
                    key.name,
                    key.team,
                    models_json(&key.models),
                    budget.map(|b| b.usd),
                    budget.map(|b| b.window_name()),
                    opt_i64(key.rpm),
                    opt_i64(key.tpm),
                    opt_i64(key.max_parallel),
                    key.expires_ms,
                    i64::from(key.admin),
                    key.created_ms,
                    key.revoked_ms
                ],
            )
            .map_err(|e| self.conflict(e, &key.id))?;
        Ok(())
    }

    fn conflict(&self, e: rusqlite::Error, id: &str) -> StoreError {
        if is_constraint(&e) {
            StoreError::Conflict { id: id.to_owned() }
        } else {
            self.err(e)
        }
    }

    fn keys_where(&self, filter: &str, arg: Option<&str>) -> Result<Vec<ClientKey>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {KEY_COLUMNS} FROM client_keys {filter} ORDER BY created_ms, id"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(arg), |r| key_from_row(r))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    fn has_client_keys(&self) -> Result<bool, StoreError> {
        self.conn()
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM client_keys WHERE revoked_ms IS NULL)",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    fn update_key(&self, sql: &str, p: &[&dyn rusqlite::ToSql]) -> Result<bool, StoreError> {
        let n = self.conn().execute(sql, p).map_err(|e| self.err(e))?;
        Ok(n > 0)
    }

    fn create_team(&self, team: &Team) -> Result<(), StoreError> {
        let budget = team.budget.as_ref();
        self.conn()
            .execute(
                &format!("INSERT INTO teams ({TEAM_COLUMNS}) VALUES (?1, ?2, ?3, ?4)"),
                params![
                    team.name,
                    budget.map(|b| b.usd),
                    budget.map(|b| b.window_name()),
                    team.created_ms
                ],
            )
            .map_err(|e| self.conflict(e, &team.name))?;
        Ok(())
    }

    fn teams(&self, name: Option<&str>) -> Result<Vec<Team>, StoreError> {
        let conn = self.conn();
        let filter = if name.is_some() {
            "WHERE name = ?1"
        } else {
            ""
        };
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {TEAM_COLUMNS} FROM teams {filter} ORDER BY name"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(name), |r| team_from_row(r))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Takes the hold with `synchronous = NORMAL`, as a rate-limit slot is taken: the row
    /// survives the process being killed, and a machine crash can lose only holds of requests
    /// that died with it (a hold is a lease; the settled amount is a full commit). It saves an
    /// `fsync` per keyed request (measured: ~4.8 ms of a 4 ms request on this machine's disk).
    fn hold(&self, req: &HoldRequest) -> Result<HoldOutcome, StoreError> {
        let mut conn = self.conn();
        conn.execute_batch("PRAGMA synchronous = NORMAL")
            .map_err(|e| self.err(e))?;
        let result = Self::take_hold(&mut conn, req);
        conn.execute_batch("PRAGMA synchronous = FULL")
            .map_err(|e| self.err(e))?;
        result.map_err(|e| self.conflict(e, &req.id))
    }

    /// [`Db::hold`]'s transaction.
    fn take_hold(
        conn: &mut rusqlite::Connection,
        req: &HoldRequest,
    ) -> rusqlite::Result<HoldOutcome> {
        {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let used = Self::hold_use(&tx, req)?;
            let outcome = decide_hold(req, &used);
            if outcome == HoldOutcome::Held {
                tx.execute(
                    "INSERT INTO budget_holds (id, key_id, team, ts_ms, reserved_usd, expires_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        req.id,
                        req.key.id,
                        req.key.team,
                        req.now_ms,
                        req.amount_usd,
                        req.expires_ms
                    ],
                )?;
            }
            tx.commit()?;
            Ok(outcome)
        }
    }

    /// [`HoldUse`] in `tx`'s snapshot.
    fn hold_use(tx: &rusqlite::Transaction<'_>, req: &HoldRequest) -> rusqlite::Result<HoldUse> {
        let now = req.now_ms;
        let key_from = req.key.budget.map_or(now, |b| b.window_start_ms(now));
        let team = req.team.as_ref();
        let team_from = team
            .and_then(|t| t.budget)
            .map_or(now, |b| b.window_start_ms(now));
        let sql = hold_use_sql(|i| format!("?{i}"));
        tx.query_row(
            &sql,
            params![
                req.key.id,
                key_from,
                now,
                team.map(|t| t.name.as_str()),
                team_from,
                crate::limits::utc_day_start_ms(now)
            ],
            |r| {
                Ok(HoldUse {
                    key_usd: r.get(0)?,
                    key_in_flight: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                    team_usd: r.get(2)?,
                    gateway_usd: r.get(3)?,
                })
            },
        )
    }

    /// Settles the hold of `record`'s id, when it is a keyed request's and still open: the
    /// amount [`settled_amount`] gives (also its spend), else `None`.
    pub(super) fn settle_hold(
        tx: &rusqlite::Transaction<'_>,
        record: &RequestRecord,
    ) -> rusqlite::Result<Option<f64>> {
        if record.key_id.is_none() {
            return Ok(None);
        }
        let reserved: Option<f64> = tx
            .query_row(
                "SELECT reserved_usd FROM budget_holds WHERE id = ?1 AND settled_usd IS NULL",
                [&record.id],
                |r| r.get(0),
            )
            .optional()?;
        let Some(reserved) = reserved else {
            return Ok(None);
        };
        let amount = settled_amount(record, reserved);
        tx.execute(
            "UPDATE budget_holds SET settled_usd = ?2 WHERE id = ?1",
            params![record.id, amount],
        )?;
        Ok(Some(amount))
    }

    fn usage(&self, by: UsageBy, since_ms: i64) -> Result<Vec<UsageRow>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&usage_sql(by, "?1"))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([since_ms], |r| usage_from_row(r))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    fn usage_between(
        &self,
        q: &crate::store::UsageQuery,
    ) -> Result<Vec<crate::store::UsageSlice>, StoreError> {
        use crate::store::key_rows::{usage_range_sql, usage_slice_from_row};
        let conn = self.conn();
        let sql = usage_range_sql(q.by, q.bucket, "?1", Some("?2"));
        let mut stmt = conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([q.from_ms, q.to_ms], |r| usage_slice_from_row(r))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    fn used_since(
        &self,
        (key, team, from, now): (Option<&str>, Option<&str>, i64, i64),
    ) -> Result<f64, StoreError> {
        let amount = HOLD_AMOUNT.replace("$NOW", "?4");
        self.conn()
            .query_row(
                &format!(
                    "SELECT coalesce(sum({amount}), 0.0) FROM budget_holds
                     WHERE (?1 IS NULL OR key_id = ?1) AND (?2 IS NULL OR team = ?2)
                       AND ts_ms >= ?3"
                ),
                params![key, team, from, now],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }
}

impl KeyStore for SqliteStore {
    fn create_key<'a>(&'a self, key: &'a ClientKey, hash: &'a str) -> StoreFuture<'a, ()> {
        self.with(&(key.clone(), hash.to_owned()), Db::create_key)
    }

    fn client_keys(&self) -> StoreFuture<'_, Vec<ClientKey>> {
        self.call(|db| db.keys_where("", None))
    }

    fn key_by_hash<'a>(&'a self, hash: &'a str) -> StoreFuture<'a, Option<ClientKey>> {
        let hash = hash.to_owned();
        self.call(move |db| {
            let keys = db.keys_where("WHERE hash = ?1", Some(&hash))?;
            Ok(keys.into_iter().next())
        })
    }

    fn has_client_keys(&self) -> StoreFuture<'_, bool> {
        self.call(Db::has_client_keys)
    }

    fn revoke_key<'a>(&'a self, id: &'a str, now_ms: i64) -> StoreFuture<'a, bool> {
        let id = id.to_owned();
        self.call(move |db| {
            db.update_key(
                "UPDATE client_keys SET revoked_ms = coalesce(revoked_ms, ?2) WHERE id = ?1",
                &[&id, &now_ms],
            )
        })
    }

    fn rotate_key<'a>(
        &'a self,
        id: &'a str,
        hash: &'a str,
        prefix: &'a str,
    ) -> StoreFuture<'a, bool> {
        let (id, hash, prefix) = (id.to_owned(), hash.to_owned(), prefix.to_owned());
        self.call(move |db| {
            db.update_key(
                "UPDATE client_keys SET hash = ?2, prefix = ?3
                 WHERE id = ?1 AND revoked_ms IS NULL",
                &[&id, &hash, &prefix],
            )
        })
    }

    fn create_team<'a>(&'a self, team: &'a Team) -> StoreFuture<'a, ()> {
        self.with(team, Db::create_team)
    }

    fn teams(&self) -> StoreFuture<'_, Vec<Team>> {
        self.call(|db| db.teams(None))
    }

    fn team<'a>(&'a self, name: &'a str) -> StoreFuture<'a, Option<Team>> {
        let name = name.to_owned();
        self.call(move |db| Ok(db.teams(Some(&name))?.into_iter().next()))
    }

    fn hold<'a>(&'a self, req: &'a HoldRequest) -> StoreFuture<'a, HoldOutcome> {
        self.with(req, Db::hold)
    }

    fn usage(&self, by: UsageBy, since_ms: i64) -> StoreFuture<'_, Vec<UsageRow>> {
        self.call(move |db| db.usage(by, since_ms))
    }

    fn usage_between<'a>(
        &'a self,
        query: &'a crate::store::UsageQuery,
    ) -> StoreFuture<'a, Vec<crate::store::UsageSlice>> {
        let query = *query;
        self.call(move |db| db.usage_between(&query))
    }

    fn used_since<'a>(
        &'a self,
        key_id: Option<&'a str>,
        team: Option<&'a str>,
        from_ms: i64,
        now_ms: i64,
    ) -> StoreFuture<'a, f64> {
        let (key, team) = (key_id.map(str::to_owned), team.map(str::to_owned));
        self.call(move |db| db.used_since((key.as_deref(), team.as_deref(), from_ms, now_ms)))
    }
}
