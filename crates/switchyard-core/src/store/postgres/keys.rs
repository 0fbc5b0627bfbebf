//! Client keys, teams and budget holds on PostgreSQL ([`crate::store::KeyStore`], SPEC R14.6,
//! R14.7), shared by every gateway process on every machine using the store.
//!
//! A hold is decided and taken in one transaction that first takes a transaction-scoped
//! advisory lock ([`HOLD_LOCK`]), then reads every amount it is decided on in one statement
//! (one snapshot) and inserts the hold. Every hold on the server queues on that one lock, so
//! no two processes can both take the last room under a key's, a team's or the gateway's cap
//! (a gateway-wide cap spans every key, so one lock is the honest granularity); settling a
//! hold (`requests.rs`, with its record) needs no lock (it only replaces a reservation by its exact cost). The lock ends with
//! the transaction, or with the connection when a process dies mid-way. The lock and the read
//! are pipelined: a hold costs four round trips (begin; lock + read; insert; commit).

use tokio_postgres::types::ToSql;

use super::PgStore;
use crate::store::key_rows::{
    HOLD_AMOUNT, KEY_COLUMNS, TEAM_COLUMNS, hold_use_sql, key_from_row, models_json, opt_i64,
    team_from_row, usage_from_row, usage_sql,
};
use crate::store::keys::{
    ClientKey, HoldOutcome, HoldRequest, HoldUse, KeyStore, Team, UsageBy, UsageRow, decide_hold,
};
use crate::store::{StoreError, StoreFuture};

/// Any constant: the advisory lock every hold is taken under.
const HOLD_LOCK: i64 = 0x5357_4954_4348_0002;

impl PgStore {
    async fn keys_where(
        &self,
        filter: &str,
        args: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<ClientKey>, StoreError> {
        let sql = format!("SELECT {KEY_COLUMNS} FROM client_keys {filter} ORDER BY created_ms, id");
        let rows = self.rows(&sql, args).await?;
        self.mapped(&rows, key_from_row)
    }

    async fn teams_where(
        &self,
        filter: &str,
        args: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Team>, StoreError> {
        let sql = format!("SELECT {TEAM_COLUMNS} FROM teams {filter} ORDER BY name");
        let rows = self.rows(&sql, args).await?;
        self.mapped(&rows, team_from_row)
    }

    async fn take_hold(&self, req: &HoldRequest) -> Result<HoldOutcome, StoreError> {
        let now = req.now_ms;
        let key_from = req.key.budget.map_or(now, |b| b.window_start_ms(now));
        let team = req.team.as_ref().map(|t| t.name.clone());
        let team_from = (req.team.as_ref())
            .and_then(|t| t.budget)
            .map_or(now, |b| b.window_start_ms(now));
        let day = crate::limits::utc_day_start_ms(now);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let sql = hold_use_sql(|i| {
            let types = ["", "text", "int8", "int8", "text", "int8", "int8"];
            format!("${i}::{}", types[i])
        });
        let (lock, read) = tokio::try_join!(
            tx.prepare_cached("SELECT pg_advisory_xact_lock($1)"),
            tx.prepare_cached(&sql),
        )
        .map_err(|e| self.err(e))?;
        // Sent together, run in order: the lock is held before anything is read.
        let lock_args: &[&(dyn ToSql + Sync)] = &[&HOLD_LOCK];
        let read_args: &[&(dyn ToSql + Sync)] =
            &[&req.key.id, &key_from, &now, &team, &team_from, &day];
        let (_, row) =
            tokio::try_join!(tx.query(&lock, lock_args), tx.query_one(&read, read_args),)
                .map_err(|e| self.err(e))?;
        let get = |i: usize| row.try_get::<_, f64>(i).map_err(|e| self.err(e));
        let used = HoldUse {
            key_usd: get(0)?,
            key_in_flight: u64::try_from(row.try_get::<_, i64>(1).map_err(|e| self.err(e))?)
                .unwrap_or(0),
            team_usd: get(2)?,
            gateway_usd: get(3)?,
        };
        let outcome = decide_hold(req, &used);
        if outcome == HoldOutcome::Held {
            tx.execute(
                "INSERT INTO budget_holds (id, key_id, team, ts_ms, reserved_usd, expires_ms)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &req.id,
                    &req.key.id,
                    &req.key.team,
                    &now,
                    &req.amount_usd,
                    &req.expires_ms,
                ],
            )
            .await
            .map_err(|e| self.task_err(&req.id, e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        Ok(outcome)
    }
}

impl KeyStore for PgStore {
    fn create_key<'a>(&'a self, key: &'a ClientKey, hash: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let budget = key.budget.as_ref();
            let (usd, window) = (budget.map(|b| b.usd), budget.map(|b| b.window_name()));
            let (rpm, tpm, par) = (
                opt_i64(key.rpm),
                opt_i64(key.tpm),
                opt_i64(key.max_parallel),
            );
            self.exec(
                &key.id,
                &format!(
                    "INSERT INTO client_keys (hash, {KEY_COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
                ),
                &[
                    &hash,
                    &key.id,
                    &key.prefix,
                    &key.name,
                    &key.team,
                    &models_json(&key.models),
                    &usd,
                    &window,
                    &rpm,
                    &tpm,
                    &par,
                    &key.expires_ms,
                    &i64::from(key.admin),
                    &key.created_ms,
                    &key.revoked_ms,
                ],
            )
            .await
            .map(drop)
        })
    }

    fn client_keys(&self) -> StoreFuture<'_, Vec<ClientKey>> {
        Box::pin(async move { self.keys_where("", &[]).await })
    }

    fn key_by_hash<'a>(&'a self, hash: &'a str) -> StoreFuture<'a, Option<ClientKey>> {
        Box::pin(async move {
            let keys = self.keys_where("WHERE hash = $1", &[&hash]).await?;
            Ok(keys.into_iter().next())
        })
    }

    fn has_client_keys(&self) -> StoreFuture<'_, bool> {
        Box::pin(async move {
            let rows = self
                .rows(
                    "SELECT EXISTS (SELECT 1 FROM client_keys WHERE revoked_ms IS NULL)",
                    &[],
                )
                .await?;
            rows.first()
                .map_or(Ok(false), |r| r.try_get(0))
                .map_err(|e| self.err(e))
        })
    }

    fn revoke_key<'a>(&'a self, id: &'a str, now_ms: i64) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let n = self
                .exec(
                    id,
                    "UPDATE client_keys SET revoked_ms = coalesce(revoked_ms, $2) WHERE id = $1",
                    &[&id, &now_ms],
                )
                .await?;
            Ok(n > 0)
        })
    }

    fn rotate_key<'a>(
        &'a self,
        id: &'a str,
        hash: &'a str,
        prefix: &'a str,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let n = self
                .exec(
                    id,
                    "UPDATE client_keys SET hash = $2, prefix = $3
                     WHERE id = $1 AND revoked_ms IS NULL",
                    &[&id, &hash, &prefix],
                )
                .await?;
            Ok(n > 0)
        })
    }

    fn create_team<'a>(&'a self, team: &'a Team) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let budget = team.budget.as_ref();
            let (usd, window) = (budget.map(|b| b.usd), budget.map(|b| b.window_name()));
            self.exec(
                &team.name,
                &format!("INSERT INTO teams ({TEAM_COLUMNS}) VALUES ($1, $2, $3, $4)"),
                &[&team.name, &usd, &window, &team.created_ms],
            )
            .await
            .map(drop)
        })
    }

    fn teams(&self) -> StoreFuture<'_, Vec<Team>> {
        Box::pin(async move { self.teams_where("", &[]).await })
    }

    fn team<'a>(&'a self, name: &'a str) -> StoreFuture<'a, Option<Team>> {
        Box::pin(async move {
            let teams = self.teams_where("WHERE name = $1", &[&name]).await?;
            Ok(teams.into_iter().next())
        })
    }

    fn hold<'a>(&'a self, req: &'a HoldRequest) -> StoreFuture<'a, HoldOutcome> {
        Box::pin(self.take_hold(req))
    }

    fn usage(&self, by: UsageBy, since_ms: i64) -> StoreFuture<'_, Vec<UsageRow>> {
        Box::pin(async move {
            let rows = self.rows(&usage_sql(by, "$1::int8"), &[&since_ms]).await?;
            self.mapped(&rows, usage_from_row)
        })
    }

    fn usage_between<'a>(
        &'a self,
        q: &'a crate::store::UsageQuery,
    ) -> StoreFuture<'a, Vec<crate::store::UsageSlice>> {
        use crate::store::key_rows::{usage_range_sql, usage_slice_from_row};
        Box::pin(async move {
            let sql = usage_range_sql(q.by, q.bucket, "$1::int8", Some("$2::int8"));
            let rows = self.rows(&sql, &[&q.from_ms, &q.to_ms]).await?;
            self.mapped(&rows, usage_slice_from_row)
        })
    }

    fn used_since<'a>(
        &'a self,
        key_id: Option<&'a str>,
        team: Option<&'a str>,
        from_ms: i64,
        now_ms: i64,
    ) -> StoreFuture<'a, f64> {
        Box::pin(async move {
            let amount = HOLD_AMOUNT.replace("$NOW", "$4");
            let rows = self
                .rows(
                    &format!(
                        "SELECT coalesce(sum({amount}), 0.0)::float8 FROM budget_holds
                         WHERE ($1::text IS NULL OR key_id = $1) AND ($2::text IS NULL OR team = $2)
                           AND ts_ms >= $3"
                    ),
                    &[&key_id, &team, &from_ms, &now_ms],
                )
                .await?;
            rows.first()
                .map_or(Ok(0.0), |r| r.try_get(0))
                .map_err(|e| self.err(e))
        })
    }
}
