//! The gateway's tables on SQLite, every decision one short `BEGIN IMMEDIATE` transaction.

mod audit;
mod holds;
mod keys;
mod leases;
mod open;
mod requests;
mod responses;
pub(crate) mod totals;

use super::claims::{Arg, Bound};

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
