//! Client keys, teams and budget reads on SQLite.

use rusqlite::params;

use super::{holds, reals, totals, users};
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
use crate::store::sqlite::{Db, SqliteStore};
use crate::store::{StoreError, StoreFuture};

/// Inserts `key` with its `hash` on `conn`, a transaction's too.
pub(super) fn insert_key(
    conn: &rusqlite::Connection,
    key: &ClientKey,
    hash: &str,
) -> rusqlite::Result<()> {
    let budget = key.budget.as_ref();
    conn.execute(
        &format!(
            "INSERT INTO client_keys (hash, {KEY_COLUMNS})
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
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
            key.revoked_ms,
            key.owner
        ],
    )?;
    Ok(())
}

fn create_key(db: &Db, (key, hash): &(ClientKey, String)) -> Result<(), StoreError> {
    insert_key(&db.conn(), key, hash).map_err(|e| db.conflict(e, &key.id))
}

fn keys_where(db: &Db, filter: &str, arg: Option<&str>) -> Result<Vec<ClientKey>, StoreError> {
    let conn = db.conn();
    let sql = format!("SELECT {KEY_COLUMNS} FROM client_keys {filter} ORDER BY created_ms, id");
    let mut stmt = conn.prepare_cached(&sql).map_err(|e| db.err(e))?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(arg), |r| key_from_row(r))
        .map_err(|e| db.err(e))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(|e| db.err(e))
}

fn update_key(db: &Db, sql: &str, p: &[&dyn rusqlite::ToSql]) -> Result<bool, StoreError> {
    Ok(db.conn().execute(sql, p).map_err(|e| db.err(e))? > 0)
}

/// Inserts `team` on `conn`, a transaction's too.
pub(super) fn insert_team(conn: &rusqlite::Connection, team: &Team) -> rusqlite::Result<()> {
    let budget = team.budget.as_ref();
    conn.execute(
        &format!("INSERT INTO teams ({TEAM_COLUMNS}) VALUES (?1, ?2, ?3, ?4)"),
        params![
            team.name,
            budget.map(|b| b.usd),
            budget.map(|b| b.window_name()),
            team.created_ms
        ],
    )?;
    Ok(())
}

fn create_team(db: &Db, team: &Team) -> Result<(), StoreError> {
    insert_team(&db.conn(), team).map_err(|e| db.conflict(e, &team.name))
}

fn teams(db: &Db, name: Option<&str>) -> Result<Vec<Team>, StoreError> {
    let conn = db.conn();
    let filter = if name.is_some() {
        "WHERE name = ?1"
    } else {
        ""
    };
    let sql = format!("SELECT {TEAM_COLUMNS} FROM teams {filter} ORDER BY name");
    let mut stmt = conn.prepare_cached(&sql).map_err(|e| db.err(e))?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(name), |r| team_from_row(r))
        .map_err(|e| db.err(e))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(|e| db.err(e))
}

fn usage(db: &Db, by: UsageBy, since_ms: i64) -> Result<Vec<UsageRow>, StoreError> {
    let conn = db.conn();
    let mut stmt = conn
        .prepare_cached(&usage_sql(by, "?1"))
        .map_err(|e| db.err(e))?;
    let rows = (stmt.query_map([since_ms], |r| usage_from_row(r))).map_err(|e| db.err(e))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(|e| db.err(e))
}

fn usage_between(db: &Db, q: &UsageQuery) -> Result<Vec<UsageSlice>, StoreError> {
    let conn = db.conn();
    let sql = usage_range_sql(q.by, q.bucket, "?1", Some("?2"));
    let mut stmt = conn.prepare_cached(&sql).map_err(|e| db.err(e))?;
    let rows = stmt
        .query_map([q.from_ms, q.to_ms], |r| usage_slice_from_row(r))
        .map_err(|e| db.err(e))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(|e| db.err(e))
}

/// What a hold counts: its settled amount, its reservation while it lives, else nothing.
const HOLD_AMOUNT: &str = "CASE WHEN settled_usd IS NOT NULL THEN settled_usd
    WHEN expires_ms > ?4 THEN reserved_usd ELSE 0.0 END";

fn used_since(
    db: &Db,
    (key, team, from, now): (Option<&str>, Option<&str>, i64, i64),
) -> Result<f64, StoreError> {
    let conn = db.conn();
    let one = match (key, team) {
        (Some(k), None) => Some((LeaseScope::Key, k)),
        (None, Some(t)) => Some((LeaseScope::Team, t)),
        _ => None,
    };
    if let (Some((scope, id)), Some(window)) = (one, window_from(from, now)) {
        let bound = used_since_sql(scope, id, window, now, '?', true);
        return Ok(reals(&conn, &bound, 1).map_err(|e| db.err(e))?[0]);
    }
    // Any other start sums the ledger's rows.
    conn.query_row(
        &format!(
            "SELECT coalesce(sum({HOLD_AMOUNT}), 0.0) FROM budget_holds
             WHERE (?1 IS NULL OR key_id = ?1) AND (?2 IS NULL OR team = ?2) AND ts_ms >= ?3"
        ),
        params![key, team, from, now],
        |r| r.get(0),
    )
    .map_err(|e| db.err(e))
}

impl KeyStore for SqliteStore {
    fn create_key<'a>(&'a self, key: &'a ClientKey, hash: &'a str) -> StoreFuture<'a, ()> {
        self.with(&(key.clone(), hash.to_owned()), create_key)
    }

    fn client_keys(&self) -> StoreFuture<'_, Vec<ClientKey>> {
        self.call(|db| keys_where(db, "", None))
    }

    fn key_by_hash<'a>(&'a self, hash: &'a str) -> StoreFuture<'a, Option<ClientKey>> {
        let hash = hash.to_owned();
        self.call(move |db| {
            Ok(keys_where(db, "WHERE hash = ?1", Some(&hash))?
                .into_iter()
                .next())
        })
    }

    fn has_client_keys(&self) -> StoreFuture<'_, bool> {
        self.call(|db| {
            let sql = "SELECT EXISTS (SELECT 1 FROM client_keys WHERE revoked_ms IS NULL)";
            db.conn()
                .query_row(sql, [], |r| r.get(0))
                .map_err(|e| db.err(e))
        })
    }

    fn revoke_key<'a>(&'a self, id: &'a str, now_ms: i64) -> StoreFuture<'a, bool> {
        let id = id.to_owned();
        self.call(move |db| {
            update_key(
                db,
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
            update_key(
                db,
                "UPDATE client_keys SET hash = ?2, prefix = ?3 WHERE id = ?1 AND revoked_ms IS NULL",
                &[&id, &hash, &prefix],
            )
        })
    }

    fn create_team<'a>(&'a self, team: &'a Team) -> StoreFuture<'a, ()> {
        self.with(team, create_team)
    }

    fn teams(&self) -> StoreFuture<'_, Vec<Team>> {
        self.call(|db| teams(db, None))
    }

    fn team<'a>(&'a self, name: &'a str) -> StoreFuture<'a, Option<Team>> {
        let name = name.to_owned();
        self.call(move |db| Ok(teams(db, Some(&name))?.into_iter().next()))
    }

    fn hold<'a>(&'a self, req: &'a HoldRequest) -> StoreFuture<'a, HoldOutcome> {
        self.with(req, holds::hold)
    }

    fn usage(&self, by: UsageBy, since_ms: i64) -> StoreFuture<'_, Vec<UsageRow>> {
        self.call(move |db| usage(db, by, since_ms))
    }

    fn usage_between<'a>(&'a self, query: &'a UsageQuery) -> StoreFuture<'a, Vec<UsageSlice>> {
        let query = *query;
        self.call(move |db| usage_between(db, &query))
    }

    fn used_since<'a>(
        &'a self,
        key_id: Option<&'a str>,
        team: Option<&'a str>,
        from_ms: i64,
        now_ms: i64,
    ) -> StoreFuture<'a, f64> {
        let (key, team) = (key_id.map(str::to_owned), team.map(str::to_owned));
        self.call(move |db| used_since(db, (key.as_deref(), team.as_deref(), from_ms, now_ms)))
    }

    fn check_totals(&self, repair: bool) -> StoreFuture<'_, TotalsCheck> {
        self.call(move |db| totals::check_totals(db, repair))
    }

    fn sign_in_user<'a>(&'a self, sign_in: &'a SignIn, by: &'a Actor) -> StoreFuture<'a, User> {
        self.with(&(sign_in.clone(), by.clone()), users::sign_in)
    }

    fn disable_user<'a>(&'a self, id: &'a str, at_ms: i64, by: &'a Actor) -> StoreFuture<'a, bool> {
        let update = UserUpdate {
            disabled: Some(true),
            ..UserUpdate::default()
        };
        let args = (id.to_owned(), update, by.clone(), at_ms);
        self.call(move |db| Ok(users::change_user(db, &args)?.is_some()))
    }

    fn users(&self) -> StoreFuture<'_, Vec<User>> {
        self.call(|db| users::users(db, None))
    }

    fn user<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<User>> {
        let id = id.to_owned();
        self.call(move |db| Ok(users::users(db, Some(&id))?.into_iter().next()))
    }

    fn change_user<'a>(
        &'a self,
        id: &'a str,
        update: &'a UserUpdate,
        by: &'a Actor,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<(User, User)>> {
        let args = (id.to_owned(), update.clone(), by.clone(), now_ms);
        self.with(&args, users::change_user)
    }
}
