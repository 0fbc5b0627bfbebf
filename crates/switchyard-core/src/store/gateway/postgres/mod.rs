//! The gateway's tables on PostgreSQL, locking only the totals rows a decision touches.
//! Spec: R14.15.

mod audit;
mod holds;
mod keys;
mod leases;
mod open;
mod requests;
mod responses;
pub(crate) mod totals;
mod users;

use deadpool_postgres::Transaction;
use futures_util::future::{Either, try_join_all};
use tokio_postgres::Statement;
use tokio_postgres::types::ToSql;

use super::audit::AuditEntry;
use super::claims::{Arg, Bound};
use super::rows::AUDIT_COLUMNS;
use super::totals::TotalKey;
use crate::store::{PgStore, StoreError};

/// `bound`'s arguments as the client binds them.
fn params(bound: &Bound) -> Vec<&(dyn ToSql + Sync)> {
    (bound.args.iter())
        .map(|a| match a {
            Arg::Int(v) => v as &(dyn ToSql + Sync),
            Arg::Text(v) => v as &(dyn ToSql + Sync),
        })
        .collect()
}

/// The statements that lock totals rows, prepared so the locks go out ahead of the reads.
struct Locks {
    make: Statement,
    lock: Statement,
}

async fn prepare_locks(store: &PgStore, tx: &Transaction<'_>) -> Result<Locks, StoreError> {
    let (make, lock) = tokio::try_join!(
        tx.prepare_cached(
            "INSERT INTO budget_totals (scope, id, span, bucket_ms, settled_usd)
             VALUES ($1, $2, $3, $4, 0.0) ON CONFLICT (scope, id, span, bucket_ms) DO NOTHING"
        ),
        tx.prepare_cached(
            "SELECT 1 FROM budget_totals
             WHERE scope = $1 AND id = $2 AND span = $3 AND bucket_ms = $4 FOR UPDATE"
        ),
    )
    .map_err(|e| store.err(e))?;
    Ok(Locks { make, lock })
}

/// Locks `rows`, made when missing, in [`TotalKey`]'s order, which every writer keeps.
async fn lock_rows(
    tx: &Transaction<'_>,
    locks: &Locks,
    rows: &[TotalKey],
) -> Result<(), tokio_postgres::Error> {
    let mut rows = rows.to_vec();
    rows.sort();
    rows.dedup();
    let names: Vec<(&str, &str)> = (rows.iter())
        .map(|k| (k.scope.name(), k.window.name()))
        .collect();
    let args: Vec<[&(dyn ToSql + Sync); 4]> = (rows.iter().zip(&names))
        .map(|(k, (scope, span))| -> [&(dyn ToSql + Sync); 4] {
            [scope, &k.id, span, &k.bucket_ms]
        })
        .collect();
    let each = args.iter().flat_map(|a| {
        let make = tx.execute(&locks.make, &a[..]);
        let lock = async { tx.query(&locks.lock, &a[..]).await.map(|_| 0) };
        [Either::Left(make), Either::Right(lock)]
    });
    try_join_all(each).await.map(drop)
}

/// Appends `e` to the audit log in `tx`.
pub(super) async fn insert_entry(
    store: &PgStore,
    tx: &Transaction<'_>,
    e: &AuditEntry,
) -> Result<(), StoreError> {
    let sql = format!("INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)");
    let args: [&(dyn ToSql + Sync); 6] = [
        &e.ts_ms, &e.actor, &e.origin, &e.action, &e.target, &e.detail,
    ];
    tx.execute(&sql, &args).await.map_err(|e| store.err(e))?;
    Ok(())
}

/// Deletes every holder's leases of `id` in each of `scopes`.
pub(super) async fn end_leases(
    store: &PgStore,
    tx: &Transaction<'_>,
    scopes: &[&str],
    id: &str,
) -> Result<(), StoreError> {
    for scope in scopes {
        let sql = "DELETE FROM budget_leases WHERE scope = $1 AND id = $2";
        tx.execute(sql, &[scope, &id])
            .await
            .map_err(|e| store.err(e))?;
    }
    Ok(())
}
