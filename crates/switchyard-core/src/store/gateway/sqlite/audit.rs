//! Audited changes to keys and teams on SQLite, each one `BEGIN IMMEDIATE` transaction.

use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};

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
use crate::store::sqlite::{Db, SqliteStore};
use crate::store::{StoreError, StoreFuture};

fn write_key(tx: &Transaction<'_>, k: &ClientKey, hash: Option<&str>) -> rusqlite::Result<()> {
    let budget = k.budget.as_ref();
    tx.execute(
        "UPDATE client_keys SET prefix = ?2, name = ?3, team = ?4, models = ?5, budget_usd = ?6,
             budget_window = ?7, rpm = ?8, tpm = ?9, max_parallel = ?10, expires_ms = ?11,
             revoked_ms = ?12, hash = coalesce(?13, hash), owner = ?14
         WHERE id = ?1",
        params![
            k.id,
            k.prefix,
            k.name,
            k.team,
            models_json(&k.models),
            budget.map(|b| b.usd),
            budget.map(|b| b.window_name()),
            opt_i64(k.rpm),
            opt_i64(k.tpm),
            opt_i64(k.max_parallel),
            k.expires_ms,
            k.revoked_ms,
            hash,
            k.owner
        ],
    )?;
    Ok(())
}

type KeyArgs = (String, KeyChange, Actor, i64);

fn change_key(
    db: &Db,
    (id, change, by, now): &KeyArgs,
) -> Result<Option<(ClientKey, ClientKey)>, StoreError> {
    let mut conn = db.conn();
    let run = |conn: &mut rusqlite::Connection| -> rusqlite::Result<_> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let sql = format!("SELECT {KEY_COLUMNS} FROM client_keys WHERE id = ?1");
        let old = (tx.query_row(&sql, [id], |r| key_from_row(r))).optional()?;
        let Some((old, new)) = old.and_then(|o| change.apply(&o).map(|n| (o, n))) else {
            return Ok(None);
        };
        write_key(&tx, &new, change.hash())?;
        end_leases(&tx, &leases_ended(&old, &new), id)?;
        insert_entry(&tx, &key_entry(change, (&old, &new), by, *now))?;
        tx.commit()?;
        Ok(Some((old, new)))
    };
    run(&mut conn).map_err(|e| db.conflict(e, id))
}

type TeamArgs = (String, Option<Budget>, Actor, i64);

fn change_team(
    db: &Db,
    (name, budget, by, now): &TeamArgs,
) -> Result<Option<(Team, Team)>, StoreError> {
    let mut conn = db.conn();
    let run = |conn: &mut rusqlite::Connection| -> rusqlite::Result<_> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let sql = format!("SELECT {TEAM_COLUMNS} FROM teams WHERE name = ?1");
        let Some(old) = (tx.query_row(&sql, [name], |r| team_from_row(r))).optional()? else {
            return Ok(None);
        };
        let new = Team {
            budget: *budget,
            ..old.clone()
        };
        tx.execute(
            "UPDATE teams SET budget_usd = ?2, budget_window = ?3 WHERE name = ?1",
            params![name, budget.map(|b| b.usd), budget.map(|b| b.window_name())],
        )?;
        if old.budget != new.budget {
            end_leases(&tx, &["team"], name)?;
        }
        insert_entry(&tx, &team_entry(name, old.budget, new.budget, by, *now))?;
        tx.commit()?;
        Ok(Some((old, new)))
    };
    run(&mut conn).map_err(|e| db.err(e))
}

fn created(
    db: &Db,
    id: &str,
    entry: &AuditEntry,
    write: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<()>,
) -> Result<(), StoreError> {
    let mut conn = db.conn();
    let run = |conn: &mut rusqlite::Connection| -> rusqlite::Result<()> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        write(&tx)?;
        insert_entry(&tx, entry)?;
        tx.commit()
    };
    run(&mut conn).map_err(|e| db.conflict(e, id))
}

fn audit_log(db: &Db, since_ms: i64, limit: u32) -> Result<Vec<AuditEntry>, StoreError> {
    let conn = db.conn();
    let sql = format!(
        "SELECT {AUDIT_COLUMNS} FROM audit_log WHERE ts_ms >= ?1 ORDER BY seq DESC LIMIT ?2"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(|e| db.err(e))?;
    let rows =
        (stmt.query_map(params![since_ms, limit], |r| audit_from_row(r))).map_err(|e| db.err(e))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(|e| db.err(e))
}

impl AuditStore for SqliteStore {
    fn create_key_audited<'a>(
        &'a self,
        key: &'a ClientKey,
        hash: &'a str,
        entry: &'a AuditEntry,
    ) -> StoreFuture<'a, ()> {
        let args = (key.clone(), hash.to_owned(), entry.clone());
        self.with(&args, |db, (key, hash, entry)| {
            created(db, &key.id, entry, |tx| insert_key(tx, key, hash))
        })
    }

    fn create_team_audited<'a>(
        &'a self,
        team: &'a Team,
        entry: &'a AuditEntry,
    ) -> StoreFuture<'a, ()> {
        self.with(&(team.clone(), entry.clone()), |db, (team, entry)| {
            created(db, &team.name, entry, |tx| insert_team(tx, team))
        })
    }

    fn change_key<'a>(
        &'a self,
        id: &'a str,
        change: &'a KeyChange,
        by: &'a Actor,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<(ClientKey, ClientKey)>> {
        self.with(
            &(id.to_owned(), change.clone(), by.clone(), now_ms),
            change_key,
        )
    }

    fn change_team<'a>(
        &'a self,
        name: &'a str,
        budget: Option<Budget>,
        by: &'a Actor,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<(Team, Team)>> {
        self.with(&(name.to_owned(), budget, by.clone(), now_ms), change_team)
    }

    fn append_audit<'a>(&'a self, entry: &'a AuditEntry) -> StoreFuture<'a, ()> {
        self.with(entry, |db, entry| {
            created(db, &entry.target, entry, |_| Ok(()))
        })
    }

    fn audit_log(&self, since_ms: i64, limit: u32) -> StoreFuture<'_, Vec<AuditEntry>> {
        self.call(move |db| audit_log(db, since_ms, limit))
    }

    fn prune_audit(&self, before_ms: i64, limit: u64) -> StoreFuture<'_, u64> {
        self.call(move |db| prune(db, PRUNE_AUDIT, before_ms, limit))
    }
}
