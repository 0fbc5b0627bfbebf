//! The gateway's tables on SQLite, every decision one short `BEGIN IMMEDIATE` transaction.

mod audit;
mod holds;
mod keys;
mod leases;
mod open;
mod requests;
mod responses;
pub(crate) mod totals;
mod users;

use rusqlite::{Transaction, params};

use super::audit::AuditEntry;
use super::claims::{Arg, Bound};
use super::rows::AUDIT_COLUMNS;

impl rusqlite::ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Self::Int(v) => v.to_sql(),
            Self::Text(v) => v.to_sql(),
        }
    }
}

/// The first row of `bound`, its columns as reals.
fn reals(conn: &rusqlite::Connection, bound: &Bound, columns: usize) -> rusqlite::Result<Vec<f64>> {
    let mut stmt = conn.prepare_cached(&bound.sql)?;
    let args = rusqlite::params_from_iter(bound.args.iter());
    stmt.query_row(args, |r| (0..columns).map(|i| r.get::<_, f64>(i)).collect())
}

/// Appends `e` to the audit log in `tx`.
pub(super) fn insert_entry(tx: &Transaction<'_>, e: &AuditEntry) -> rusqlite::Result<()> {
    let sql = format!("INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    tx.prepare_cached(&sql)?.execute(params![
        e.ts_ms, e.actor, e.origin, e.action, e.target, e.detail
    ])?;
    Ok(())
}

/// Deletes every holder's leases of `id` in each of `scopes`.
pub(super) fn end_leases(tx: &Transaction<'_>, scopes: &[&str], id: &str) -> rusqlite::Result<()> {
    for scope in scopes {
        tx.execute(
            "DELETE FROM budget_leases WHERE scope = ?1 AND id = ?2",
            params![scope, id],
        )?;
    }
    Ok(())
}
