//! Users on PostgreSQL: the user's row locked, a sign-in or a change and its audit row in one
//! transaction.

use deadpool_postgres::Transaction;
use tokio_postgres::types::ToSql;

use super::{end_leases, insert_entry};
use crate::store::gateway::audit::Actor;
use crate::store::gateway::rows::{USER_COLUMNS, models_json, user_from_row};
use crate::store::gateway::users::{
    SignIn, User, UserUpdate, signed_in, user_entry, user_leases_end,
};
use crate::store::{PgStore, StoreError};

/// Inserts `u`, or rewrites every field of the stored user of its id.
async fn write_user(store: &PgStore, tx: &Transaction<'_>, u: &User) -> Result<(), StoreError> {
    let budget = u.budget.as_ref();
    let (usd, window) = (budget.map(|b| b.usd), budget.map(|b| b.window_name()));
    let models = models_json(&u.models);
    let sql = format!(
        "INSERT INTO users ({USER_COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         ON CONFLICT (id) DO UPDATE SET email = excluded.email, name = excluded.name,
             role = excluded.role, team = excluded.team, models = excluded.models,
             budget_usd = excluded.budget_usd, budget_window = excluded.budget_window,
             signed_in_ms = excluded.signed_in_ms, disabled_ms = excluded.disabled_ms"
    );
    let args: [&(dyn ToSql + Sync); 13] = [
        &u.id,
        &u.issuer,
        &u.subject,
        &u.email,
        &u.name,
        &u.role.as_str(),
        &u.team,
        &models,
        &usd,
        &window,
        &u.created_ms,
        &u.signed_in_ms,
        &u.disabled_ms,
    ];
    tx.execute(&sql, &args)
        .await
        .map_err(|e| store.task_err(&u.id, e))?;
    Ok(())
}

/// The user `filter` finds, locked until the transaction ends.
async fn lock_user(
    store: &PgStore,
    tx: &Transaction<'_>,
    filter: &str,
    args: &[&(dyn ToSql + Sync)],
) -> Result<Option<User>, StoreError> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE {filter} FOR UPDATE");
    let row = tx.query_opt(&sql, args).await.map_err(|e| store.err(e))?;
    (row.map(|r| user_from_row(&r)).transpose()).map_err(|e| store.err(e))
}

/// Writes `new` over `old`, ending the user's leases and auditing it as the change says.
async fn commit_user(
    store: &PgStore,
    tx: Transaction<'_>,
    (old, new): (Option<&User>, &User),
    (by, now): (&Actor, i64),
) -> Result<(), StoreError> {
    write_user(store, &tx, new).await?;
    if old.is_some_and(|o| user_leases_end(o, new)) {
        end_leases(store, &tx, &["user"], &new.id).await?;
    }
    if let Some(entry) = user_entry(old, new, by, now) {
        insert_entry(store, &tx, &entry).await?;
    }
    tx.commit().await.map_err(|e| store.err(e))
}

pub(super) async fn sign_in(store: &PgStore, s: &SignIn, by: &Actor) -> Result<User, StoreError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.err(e))?;
    let pair: [&(dyn ToSql + Sync); 2] = [&s.issuer, &s.subject];
    let mut old = lock_user(store, &tx, "issuer = $1 AND subject = $2", &pair).await?;
    if old.is_none() {
        // A first sign-in racing another of the same person makes the row once; the loser
        // then rewrites the winner's row as any later sign-in does.
        let new = signed_in(None, s);
        let made = "INSERT INTO users (id, issuer, subject, role, models, created_ms, signed_in_ms)
                    VALUES ($1, $2, $3, 'viewer', '[]', $4, $4) ON CONFLICT DO NOTHING";
        let args: [&(dyn ToSql + Sync); 4] = [&new.id, &s.issuer, &s.subject, &s.at_ms];
        let inserted = tx.execute(made, &args).await.map_err(|e| store.err(e))?;
        if inserted == 1 {
            commit_user(store, tx, (None, &new), (by, s.at_ms)).await?;
            return Ok(new);
        }
        old = lock_user(store, &tx, "issuer = $1 AND subject = $2", &pair).await?;
    }
    let new = signed_in(old.as_ref(), s);
    commit_user(store, tx, (old.as_ref(), &new), (by, s.at_ms)).await?;
    Ok(new)
}

pub(super) async fn change_user(
    store: &PgStore,
    id: &str,
    update: &UserUpdate,
    (by, now): (&Actor, i64),
) -> Result<Option<(User, User)>, StoreError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.err(e))?;
    let Some(old) = lock_user(store, &tx, "id = $1", &[&id]).await? else {
        return Ok(None);
    };
    let new = update.apply(&old, now);
    commit_user(store, tx, (Some(&old), &new), (by, now)).await?;
    Ok(Some((old, new)))
}

pub(super) async fn users(store: &PgStore, id: Option<&str>) -> Result<Vec<User>, StoreError> {
    let sql = format!(
        "SELECT {USER_COLUMNS} FROM users WHERE ($1::text IS NULL OR id = $1)
         ORDER BY created_ms, id"
    );
    let rows = store.rows(&sql, &[&id]).await?;
    store.mapped(&rows, user_from_row)
}
