//! Audited changes to keys and teams on PostgreSQL: the changed row locked, the change and its
//! audit row in one transaction.

use deadpool_postgres::Transaction;
use tokio_postgres::types::ToSql;

use super::keys::{insert_key, insert_team};
use super::requests::prune;
use super::{end_leases, insert_entry};
use crate::store::gateway::audit::{
    Actor, AuditEntry, AuditStore, KeyChange, key_entry, leases_ended, team_entry,
};
use crate::store::gateway::budget::Budget;
use crate::store::gateway::keys::{ClientKey, Team};
use crate::store::gateway::rows::{
    AUDIT_COLUMNS, KEY_COLUMNS, PRUNE_AUDIT, TEAM_COLUMNS, audit_from_row, key_from_row,
    models_json, opt_i64, team_from_row,
};
use crate::store::{PgStore, StoreError, StoreFuture};

async fn write_key(
    store: &PgStore,
    tx: &Transaction<'_>,
    k: &ClientKey,
    hash: Option<&str>,
) -> Result<(), StoreError> {
    let budget = k.budget.as_ref();
    let (usd, window) = (budget.map(|b| b.usd), budget.map(|b| b.window_name()));
    let (rpm, tpm, parallel) = (opt_i64(k.rpm), opt_i64(k.tpm), opt_i64(k.max_parallel));
    let models = models_json(&k.models);
    let sql = "UPDATE client_keys SET prefix = $2, name = $3, team = $4, models = $5,
            budget_usd = $6, budget_window = $7, rpm = $8, tpm = $9, max_parallel = $10,
            expires_ms = $11, revoked_ms = $12, hash = coalesce($13, hash), owner = $14
        WHERE id = $1";
    let args: [&(dyn ToSql + Sync); 14] = [
        &k.id,
        &k.prefix,
        &k.name,
        &k.team,
        &models,
        &usd,
        &window,
        &rpm,
        &tpm,
        &parallel,
        &k.expires_ms,
        &k.revoked_ms,
        &hash,
        &k.owner,
    ];
    tx.execute(sql, &args)
        .await
        .map_err(|e| store.task_err(&k.id, e))?;
    Ok(())
}

async fn change_key(
    store: &PgStore,
    id: &str,
    change: &KeyChange,
    (by, now): (&Actor, i64),
) -> Result<Option<(ClientKey, ClientKey)>, StoreError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.err(e))?;
    let sql = format!("SELECT {KEY_COLUMNS} FROM client_keys WHERE id = $1 FOR UPDATE");
    let row = tx.query_opt(&sql, &[&id]).await.map_err(|e| store.err(e))?;
    let old = row
        .map(|r| key_from_row(&r))
        .transpose()
        .map_err(|e| store.err(e))?;
    let Some((old, new)) = old.and_then(|o| change.apply(&o).map(|n| (o, n))) else {
        return Ok(None);
    };
    write_key(store, &tx, &new, change.hash()).await?;
    end_leases(store, &tx, &leases_ended(&old, &new), id).await?;
    insert_entry(store, &tx, &key_entry(change, (&old, &new), by, now)).await?;
    tx.commit().await.map_err(|e| store.err(e))?;
    Ok(Some((old, new)))
}

async fn change_team(
    store: &PgStore,
    name: &str,
    budget: Option<Budget>,
    (by, now): (&Actor, i64),
) -> Result<Option<(Team, Team)>, StoreError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.err(e))?;
    let sql = format!("SELECT {TEAM_COLUMNS} FROM teams WHERE name = $1 FOR UPDATE");
    let row = tx
        .query_opt(&sql, &[&name])
        .await
        .map_err(|e| store.err(e))?;
    let Some(old) = row
        .map(|r| team_from_row(&r))
        .transpose()
        .map_err(|e| store.err(e))?
    else {
        return Ok(None);
    };
    let new = Team {
        budget,
        ..old.clone()
    };
    let (usd, window) = (budget.map(|b| b.usd), budget.map(|b| b.window_name()));
    let sql = "UPDATE teams SET budget_usd = $2, budget_window = $3 WHERE name = $1";
    tx.execute(sql, &[&name, &usd, &window])
        .await
        .map_err(|e| store.err(e))?;
    if old.budget != new.budget {
        end_leases(store, &tx, &["team"], name).await?;
    }
    insert_entry(
        store,
        &tx,
        &team_entry(name, old.budget, new.budget, by, now),
    )
    .await?;
    tx.commit().await.map_err(|e| store.err(e))?;
    Ok(Some((old, new)))
}

impl AuditStore for PgStore {
    fn create_key_audited<'a>(
        &'a self,
        key: &'a ClientKey,
        hash: &'a str,
        entry: &'a AuditEntry,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(|e| self.err(e))?;
            insert_key(self, &tx, key, hash).await?;
            insert_entry(self, &tx, entry).await?;
            tx.commit().await.map_err(|e| self.err(e))
        })
    }

    fn create_team_audited<'a>(
        &'a self,
        team: &'a Team,
        entry: &'a AuditEntry,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(|e| self.err(e))?;
            insert_team(self, &tx, team).await?;
            insert_entry(self, &tx, entry).await?;
            tx.commit().await.map_err(|e| self.err(e))
        })
    }

    fn change_key<'a>(
        &'a self,
        id: &'a str,
        change: &'a KeyChange,
        by: &'a Actor,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<(ClientKey, ClientKey)>> {
        Box::pin(change_key(self, id, change, (by, now_ms)))
    }

    fn change_team<'a>(
        &'a self,
        name: &'a str,
        budget: Option<Budget>,
        by: &'a Actor,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<(Team, Team)>> {
        Box::pin(change_team(self, name, budget, (by, now_ms)))
    }

    fn append_audit<'a>(&'a self, entry: &'a AuditEntry) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let sql =
                format!("INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)");
            let e = entry;
            let args: [&(dyn ToSql + Sync); 6] = [
                &e.ts_ms, &e.actor, &e.origin, &e.action, &e.target, &e.detail,
            ];
            self.exec(&e.target, &sql, &args).await.map(drop)
        })
    }

    fn audit_log(&self, since_ms: i64, limit: u32) -> StoreFuture<'_, Vec<AuditEntry>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT {AUDIT_COLUMNS} FROM audit_log WHERE ts_ms >= $1 ORDER BY seq DESC LIMIT $2"
            );
            let rows = self.rows(&sql, &[&since_ms, &i64::from(limit)]).await?;
            self.mapped(&rows, audit_from_row)
        })
    }

    fn prune_audit(&self, before_ms: i64, limit: u64) -> StoreFuture<'_, u64> {
        Box::pin(prune(self, PRUNE_AUDIT, before_ms, limit))
    }
}
