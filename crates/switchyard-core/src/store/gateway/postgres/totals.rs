//! Running totals on PostgreSQL, added to in the settling transaction and checked.

use deadpool_postgres::Transaction;
use tokio_postgres::IsolationLevel;

use crate::store::gateway::claims::{recompute_sql, total_key};
use crate::store::gateway::totals::{Deltas, TotalKey, TotalsCheck, compare};
use crate::store::{PgStore, StoreError};

/// Adds to many totals at once, in the order given.
const ADD_TOTALS: &str = "INSERT INTO budget_totals (scope, id, span, bucket_ms, settled_usd)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::float8[])
    ON CONFLICT (scope, id, span, bucket_ms)
    DO UPDATE SET settled_usd = budget_totals.settled_usd + excluded.settled_usd";

/// Sets many totals at once.
const SET_TOTALS: &str = "INSERT INTO budget_totals (scope, id, span, bucket_ms, settled_usd)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::float8[])
    ON CONFLICT (scope, id, span, bucket_ms) DO UPDATE SET settled_usd = excluded.settled_usd";

/// Writes `rows` with `sql`, one of [`ADD_TOTALS`] and [`SET_TOTALS`].
async fn write(
    store: &PgStore,
    tx: &Transaction<'_>,
    sql: &str,
    rows: &[(&TotalKey, f64)],
) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    let scopes: Vec<&str> = rows.iter().map(|(k, _)| k.scope.name()).collect();
    let ids: Vec<&str> = rows.iter().map(|(k, _)| k.id.as_str()).collect();
    let spans: Vec<&str> = rows.iter().map(|(k, _)| k.window.name()).collect();
    let buckets: Vec<i64> = rows.iter().map(|(k, _)| k.bucket_ms).collect();
    let usd: Vec<f64> = rows.iter().map(|(_, v)| *v).collect();
    let stmt = tx.prepare_cached(sql).await.map_err(|e| store.err(e))?;
    tx.execute(&stmt, &[&scopes, &ids, &spans, &buckets, &usd])
        .await
        .map_err(|e| store.err(e))?;
    Ok(())
}

/// Adds `deltas` to their totals in lock order, creating those used for the first time.
pub(crate) async fn add_totals(
    store: &PgStore,
    tx: &Transaction<'_>,
    deltas: &Deltas,
) -> Result<(), StoreError> {
    let rows: Vec<(&TotalKey, f64)> = deltas.0.iter().map(|(k, v)| (k, *v)).collect();
    write(store, tx, ADD_TOTALS, &rows).await
}

async fn totals(
    store: &PgStore,
    tx: &Transaction<'_>,
    sql: &str,
) -> Result<Vec<(TotalKey, f64)>, StoreError> {
    let rows = tx.query(sql, &[]).await.map_err(|e| store.err(e))?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let get = |i| r.try_get::<_, String>(i).map_err(|e| store.err(e));
        let (scope, id, span) = (get(0)?, get(1)?, get(2)?);
        let bucket: i64 = r.try_get(3).map_err(|e| store.err(e))?;
        let usd: f64 = r.try_get(4).map_err(|e| store.err(e))?;
        out.extend(total_key(&scope, id, &span, bucket).map(|k| (k, usd)));
    }
    Ok(out)
}

/// Compares every total with the ledger; `repair` locks out writers and rewrites them.
pub(crate) async fn check_totals(store: &PgStore, repair: bool) -> Result<TotalsCheck, StoreError> {
    let mut client = store.client().await?;
    let level = if repair {
        IsolationLevel::ReadCommitted
    } else {
        IsolationLevel::RepeatableRead
    };
    let tx = (client
        .build_transaction()
        .isolation_level(level)
        .start()
        .await)
        .map_err(|e| store.err(e))?;
    if repair {
        (tx.batch_execute("LOCK TABLE budget_totals IN EXCLUSIVE MODE")
            .await)
            .map_err(|e| store.err(e))?;
    }
    let stored = totals(
        store,
        &tx,
        "SELECT scope, id, span, bucket_ms, settled_usd FROM budget_totals",
    )
    .await?;
    let mut check = compare(stored, totals(store, &tx, &recompute_sql(false)).await?);
    if repair && !check.differences.is_empty() {
        let rows: Vec<(&TotalKey, f64)> = (check.differences.iter())
            .map(|d| (&d.key, d.recomputed_usd))
            .collect();
        write(store, &tx, SET_TOTALS, &rows).await?;
        check.repaired = true;
    }
    tx.commit().await.map_err(|e| store.err(e))?;
    Ok(check)
}
