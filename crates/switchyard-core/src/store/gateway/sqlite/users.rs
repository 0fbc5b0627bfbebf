//! Users on SQLite: a sign-in or a change and its audit row in one `BEGIN IMMEDIATE`.

use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};

use super::{end_leases, insert_entry};
use crate::store::StoreError;
use crate::store::gateway::audit::Actor;
use crate::store::gateway::rows::{USER_COLUMNS, models_json, user_from_row};
use crate::store::gateway::users::{
    SignIn, User, UserUpdate, signed_in, user_entry, user_leases_end,
};
use crate::store::sqlite::Db;

/// Inserts `u`, or rewrites every field of the stored user of its id.
fn write_user(tx: &Transaction<'_>, u: &User) -> rusqlite::Result<()> {
    let budget = u.budget.as_ref();
    let sql = format!(
        "INSERT INTO users ({USER_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         ON CONFLICT (id) DO UPDATE SET email = excluded.email, name = excluded.name,
             role = excluded.role, team = excluded.team, models = excluded.models,
             budget_usd = excluded.budget_usd, budget_window = excluded.budget_window,
             signed_in_ms = excluded.signed_in_ms, disabled_ms = excluded.disabled_ms"
    );
    tx.prepare_cached(&sql)?.execute(params![
        u.id,
        u.issuer,
        u.subject,
        u.email,
        u.name,
        u.role.as_str(),
        u.team,
        models_json(&u.models),
        budget.map(|b| b.usd),
        budget.map(|b| b.window_name()),
        u.created_ms,
        u.signed_in_ms,
        u.disabled_ms
    ])?;
    Ok(())
}

fn read_user(tx: &Transaction<'_>, filter: &str, args: &[&str]) -> rusqlite::Result<Option<User>> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE {filter}");
    let args = rusqlite::params_from_iter(args.iter());
    (tx.prepare_cached(&sql)?
        .query_row(args, |r| user_from_row(r)))
    .optional()
}

/// Writes `new` over `old`, ending the user's leases and auditing it as the change says.
fn commit_user(
    tx: Transaction<'_>,
    old: Option<&User>,
    new: &User,
    (by, now): (&Actor, i64),
) -> rusqlite::Result<()> {
    write_user(&tx, new)?;
    if old.is_some_and(|o| user_leases_end(o, new)) {
        end_leases(&tx, &["user"], &new.id)?;
    }
    if let Some(entry) = user_entry(old, new, by, now) {
        insert_entry(&tx, &entry)?;
    }
    tx.commit()
}

pub(super) fn sign_in(db: &Db, (s, by): &(SignIn, Actor)) -> Result<User, StoreError> {
    let mut conn = db.conn();
    let run = |conn: &mut rusqlite::Connection| -> rusqlite::Result<User> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let old = read_user(
            &tx,
            "issuer = ?1 AND subject = ?2",
            &[&s.issuer, &s.subject],
        )?;
        let new = signed_in(old.as_ref(), s);
        commit_user(tx, old.as_ref(), &new, (by, s.at_ms))?;
        Ok(new)
    };
    run(&mut conn).map_err(|e| db.conflict(e, &s.subject))
}

pub(super) type UserArgs = (String, UserUpdate, Actor, i64);

pub(super) fn change_user(
    db: &Db,
    (id, update, by, now): &UserArgs,
) -> Result<Option<(User, User)>, StoreError> {
    let mut conn = db.conn();
    let run = |conn: &mut rusqlite::Connection| -> rusqlite::Result<_> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let Some(old) = read_user(&tx, "id = ?1", &[id])? else {
            return Ok(None);
        };
        let new = update.apply(&old, *now);
        commit_user(tx, Some(&old), &new, (by, *now))?;
        Ok(Some((old, new)))
    };
    run(&mut conn).map_err(|e| db.err(e))
}

pub(super) fn users(db: &Db, id: Option<&str>) -> Result<Vec<User>, StoreError> {
    let conn = db.conn();
    let filter = if id.is_some() { "WHERE id = ?1" } else { "" };
    let sql = format!("SELECT {USER_COLUMNS} FROM users {filter} ORDER BY created_ms, id");
    let mut stmt = conn.prepare_cached(&sql).map_err(|e| db.err(e))?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(id), |r| user_from_row(r))
        .map_err(|e| db.err(e))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(|e| db.err(e))
}
