//! Client keys, teams and budget reads on PostgreSQL, shared by every gateway on the server.

use deadpool_postgres::Transaction;
use tokio_postgres::types::ToSql;

use super::{holds, params, totals, users};
use crate::store::gateway::audit::Actor;
use crate::store::gateway::claims::{used_since_sql, window_from};
use crate::store::gateway::holds::{HoldOutcome, HoldRequest};
use crate::store::gateway::key_store::KeyStore;
use crate::store::gateway::keys::{ClientKey, Team};
use crate::store::gateway::leases::LeaseScope;
use crate::store::gateway::rows::{
    KEY_COLUMNS, TEAM_COLUMNS, key_from_row, models_json, opt_i64, team_from_row, usage_from_row,
    usage_range_sql, usage_slice_from_row, usage_sql,
};
use crate::store::gateway::totals::TotalsCheck;
use crate::store::gateway::usage::{UsageBy, UsageQuery, UsageRow, UsageSlice};
use crate::store::gateway::users::{SignIn, User, UserUpdate};
use crate::store::{PgStore, StoreError, StoreFuture};

async fn keys_where(
    store: &PgStore,
    filter: &str,
    args: &[&(dyn ToSql + Sync)],
) -> Result<Vec<ClientKey>, StoreError> {
    let sql = format!("SELECT {KEY_COLUMNS} FROM client_keys {filter} ORDER BY created_ms, id");
    let rows = store.rows(&sql, args).await?;
    store.mapped(&rows, key_from_row)
}

async fn teams_where(
    store: &PgStore,
    filter: &str,
    args: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Team>, StoreError> {
    let sql = format!("SELECT {TEAM_COLUMNS} FROM teams {filter} ORDER BY name");
    let rows = store.rows(&sql, args).await?;
    store.mapped(&rows, team_from_row)
}

/// A single `f64` from the first row of `sql`.
async fn real(store: &PgStore, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<f64, StoreError> {
    let rows = store.rows(sql, args).await?;
    (rows.first().map_or(Ok(0.0), |r| r.try_get(0))).map_err(|e| store.err(e))
}

async fn used_since(
    store: &PgStore,
    (key, team, from, now): (Option<&str>, Option<&str>, i64, i64),
) -> Result<f64, StoreError> {
    let one = match (key, team) {
        (Some(k), None) => Some((LeaseScope::Key, k)),
        (None, Some(t)) => Some((LeaseScope::Team, t)),
        _ => None,
    };
    if let (Some((scope, id)), Some(window)) = (one, window_from(from, now)) {
        let bound = used_since_sql(scope, id, window, now, '$', false);
        return real(store, &bound.sql, &params(&bound)).await;
    }
    // Any other start sums the ledger's rows.
    let sql = "SELECT coalesce(sum(CASE WHEN settled_usd IS NOT NULL THEN settled_usd
                 WHEN expires_ms > $4 THEN reserved_usd ELSE 0.0 END), 0.0)::float8
               FROM budget_holds WHERE ($1::text IS NULL OR key_id = $1)
                 AND ($2::text IS NULL OR team = $2) AND ts_ms >= $3";
    real(store, sql, &[&key, &team, &from, &now]).await
}

/// Inserts `key` with its `hash` in `tx`; a taken id or hash is a conflict.
pub(super) async fn insert_key(
    store: &PgStore,
    tx: &Transaction<'_>,
    key: &ClientKey,
    hash: &str,
) -> Result<(), StoreError> {
    let budget = key.budget.as_ref();
    let (usd, window) = (budget.map(|b| b.usd), budget.map(|b| b.window_name()));
    let (rpm, tpm) = (opt_i64(key.rpm), opt_i64(key.tpm));
    let parallel = opt_i64(key.max_parallel);
    let sql = format!(
        "INSERT INTO client_keys (hash, {KEY_COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
    );
    let args: [&(dyn ToSql + Sync); 16] = [
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
        &parallel,
        &key.expires_ms,
        &i64::from(key.admin),
        &key.created_ms,
        &key.revoked_ms,
        &key.owner,
    ];
    tx.execute(&sql, &args)
        .await
        .map(drop)
        .map_err(|e| store.task_err(&key.id, e))
}

/// Inserts `team` in `tx`; a taken name is a conflict.
pub(super) async fn insert_team(
    store: &PgStore,
    tx: &Transaction<'_>,
    team: &Team,
) -> Result<(), StoreError> {
    let budget = team.budget.as_ref();
    let (usd, window) = (budget.map(|b| b.usd), budget.map(|b| b.window_name()));
    let sql = format!("INSERT INTO teams ({TEAM_COLUMNS}) VALUES ($1, $2, $3, $4)");
    let args: [&(dyn ToSql + Sync); 4] = [&team.name, &usd, &window, &team.created_ms];
    tx.execute(&sql, &args)
        .await
        .map(drop)
        .map_err(|e| store.task_err(&team.name, e))
}

impl KeyStore for PgStore {
    fn create_key<'a>(&'a self, key: &'a ClientKey, hash: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(|e| self.err(e))?;
            insert_key(self, &tx, key, hash).await?;
            tx.commit().await.map_err(|e| self.err(e))
        })
    }

    fn client_keys(&self) -> StoreFuture<'_, Vec<ClientKey>> {
        Box::pin(keys_where(self, "", &[]))
    }

    fn key_by_hash<'a>(&'a self, hash: &'a str) -> StoreFuture<'a, Option<ClientKey>> {
        Box::pin(async move {
            let keys = keys_where(self, "WHERE hash = $1", &[&hash]).await?;
            Ok(keys.into_iter().next())
        })
    }

    fn has_client_keys(&self) -> StoreFuture<'_, bool> {
        Box::pin(async move {
            let sql = "SELECT EXISTS (SELECT 1 FROM client_keys WHERE revoked_ms IS NULL)";
            let rows = self.rows(sql, &[]).await?;
            (rows.first().map_or(Ok(false), |r| r.try_get(0))).map_err(|e| self.err(e))
        })
    }

    fn revoke_key<'a>(&'a self, id: &'a str, now_ms: i64) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let sql = "UPDATE client_keys SET revoked_ms = coalesce(revoked_ms, $2) WHERE id = $1";
            Ok(self.exec(id, sql, &[&id, &now_ms]).await? > 0)
        })
    }

    fn rotate_key<'a>(
        &'a self,
        id: &'a str,
        hash: &'a str,
        prefix: &'a str,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let sql = "UPDATE client_keys SET hash = $2, prefix = $3
                       WHERE id = $1 AND revoked_ms IS NULL";
            Ok(self.exec(id, sql, &[&id, &hash, &prefix]).await? > 0)
        })
    }

    fn create_team<'a>(&'a self, team: &'a Team) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(|e| self.err(e))?;
            insert_team(self, &tx, team).await?;
            tx.commit().await.map_err(|e| self.err(e))
        })
    }

    fn teams(&self) -> StoreFuture<'_, Vec<Team>> {
        Box::pin(teams_where(self, "", &[]))
    }

    fn team<'a>(&'a self, name: &'a str) -> StoreFuture<'a, Option<Team>> {
        Box::pin(async move {
            let teams = teams_where(self, "WHERE name = $1", &[&name]).await?;
            Ok(teams.into_iter().next())
        })
    }

    fn hold<'a>(&'a self, req: &'a HoldRequest) -> StoreFuture<'a, HoldOutcome> {
        Box::pin(holds::hold(self, req))
    }

    fn usage(&self, by: UsageBy, since_ms: i64) -> StoreFuture<'_, Vec<UsageRow>> {
        Box::pin(async move {
            let rows = self.rows(&usage_sql(by, "$1::int8"), &[&since_ms]).await?;
            self.mapped(&rows, usage_from_row)
        })
    }

    fn usage_between<'a>(&'a self, q: &'a UsageQuery) -> StoreFuture<'a, Vec<UsageSlice>> {
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
        Box::pin(used_since(self, (key_id, team, from_ms, now_ms)))
    }

    fn check_totals(&self, repair: bool) -> StoreFuture<'_, TotalsCheck> {
        Box::pin(totals::check_totals(self, repair))
    }

    fn sign_in_user<'a>(&'a self, sign_in: &'a SignIn, by: &'a Actor) -> StoreFuture<'a, User> {
        Box::pin(users::sign_in(self, sign_in, by))
    }

    fn disable_user<'a>(&'a self, id: &'a str, at_ms: i64, by: &'a Actor) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let update = UserUpdate {
                disabled: Some(true),
                ..UserUpdate::default()
            };
            let changed = users::change_user(self, id, &update, (by, at_ms)).await?;
            Ok(changed.is_some())
        })
    }

    fn users(&self) -> StoreFuture<'_, Vec<User>> {
        Box::pin(users::users(self, None))
    }

    fn user<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<User>> {
        Box::pin(async move { Ok(users::users(self, Some(id)).await?.into_iter().next()) })
    }

    fn change_user<'a>(
        &'a self,
        id: &'a str,
        update: &'a UserUpdate,
        by: &'a Actor,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<(User, User)>> {
        Box::pin(users::change_user(self, id, update, (by, now_ms)))
    }
}
