//! Traces of admitted requests on PostgreSQL, and the lost ones recorded at their reservations.

use super::requests::record_in;
use crate::store::gateway::open::{OpenRequest, OpenStore};
use crate::store::{PgStore, StoreError, StoreFuture};

/// Every trace of a batch in one statement; a recorded request gets none.
const INSERT_OPEN: &str = "INSERT INTO gateway_open (id, holder, started_ms, route, dialect,
        stream, key_id, team, reserved_usd, expires_ms)
    SELECT v.*, $10::bigint FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[],
        $5::text[], $6::bool[], $7::text[], $8::text[], $9::float8[])
        AS v(id, holder, started_ms, route, dialect, stream, key_id, team, reserved_usd)
    WHERE NOT EXISTS (SELECT 1 FROM gateway_requests r WHERE r.id = v.id)
    ON CONFLICT (id) DO NOTHING";

/// Expired traces taken out, those another sweep holds skipped.
const TAKE_EXPIRED: &str = "DELETE FROM gateway_open WHERE id IN (
        SELECT id FROM gateway_open WHERE expires_ms <= $1 ORDER BY expires_ms LIMIT $2
        FOR UPDATE SKIP LOCKED)
    RETURNING id, holder, started_ms, route, dialect, stream, key_id, team, reserved_usd";

/// Store holds expired unsettled, locked until their records settle them.
const EXPIRED_HOLDS: &str = "SELECT id, key_id, team, ts_ms, reserved_usd,
        COALESCE(route, ''), COALESCE(dialect, ''), COALESCE(stream, false) FROM budget_holds
    WHERE settled_usd IS NULL AND expires_ms <= $1 ORDER BY expires_ms LIMIT $2
    FOR UPDATE SKIP LOCKED";

async fn insert_open(
    store: &PgStore,
    rows: &[OpenRequest],
    expires: i64,
) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    let text = |f: fn(&OpenRequest) -> &str| rows.iter().map(f).collect::<Vec<_>>();
    let (ids, holders) = (text(|r| &r.id), text(|r| &r.holder));
    let (routes, dialects, keys) = (
        text(|r| &r.route),
        text(|r| &r.dialect),
        text(|r| &r.key_id),
    );
    let started: Vec<i64> = rows.iter().map(|r| r.started_ms).collect();
    let streams: Vec<bool> = rows.iter().map(|r| r.stream).collect();
    let teams: Vec<Option<&str>> = rows.iter().map(|r| r.team.as_deref()).collect();
    let reserved: Vec<f64> = rows.iter().map(|r| r.reserved_usd).collect();
    let client = store.client().await?;
    let insert = (client.prepare_cached(INSERT_OPEN).await).map_err(|e| store.err(e))?;
    let args: [&(dyn tokio_postgres::types::ToSql + Sync); 10] = [
        &ids, &holders, &started, &routes, &dialects, &streams, &keys, &teams, &reserved, &expires,
    ];
    (client.execute(&insert, &args).await).map_err(|e| store.err(e))?;
    Ok(())
}

/// The lost requests of one sweep: expired traces, then expired store holds.
async fn expired(
    store: &PgStore,
    tx: &deadpool_postgres::Transaction<'_>,
    now: i64,
    limit: i64,
) -> Result<Vec<OpenRequest>, StoreError> {
    let get = |e| store.err(e);
    let mut lost = Vec::new();
    for row in (tx.query(TAKE_EXPIRED, &[&now, &limit]).await).map_err(get)? {
        lost.push(OpenRequest {
            id: row.try_get(0).map_err(get)?,
            holder: row.try_get(1).map_err(get)?,
            started_ms: row.try_get(2).map_err(get)?,
            route: row.try_get(3).map_err(get)?,
            dialect: row.try_get(4).map_err(get)?,
            stream: row.try_get(5).map_err(get)?,
            key_id: row.try_get(6).map_err(get)?,
            team: row.try_get(7).map_err(get)?,
            reserved_usd: row.try_get(8).map_err(get)?,
        });
    }
    let left = (limit - lost.len() as i64).max(0);
    // A hold taken before schema 11 keeps no route or dialect: its record names neither.
    for row in (tx.query(EXPIRED_HOLDS, &[&now, &left]).await).map_err(get)? {
        let id: String = row.try_get(0).map_err(get)?;
        if lost.iter().any(|l| l.id == id) {
            continue;
        }
        lost.push(OpenRequest {
            id,
            holder: String::new(),
            started_ms: row.try_get(3).map_err(get)?,
            route: row.try_get(5).map_err(get)?,
            dialect: row.try_get(6).map_err(get)?,
            stream: row.try_get(7).map_err(get)?,
            key_id: row.try_get(1).map_err(get)?,
            team: row.try_get(2).map_err(get)?,
            reserved_usd: row.try_get(4).map_err(get)?,
        });
    }
    Ok(lost)
}

async fn charge_lost(store: &PgStore, now: i64, limit: u64) -> Result<u64, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.err(e))?;
    let lost = expired(store, &tx, now, limit).await?;
    if lost.is_empty() {
        tx.rollback().await.map_err(|e| store.err(e))?;
        return Ok(0);
    }
    let ids: Vec<&str> = lost.iter().map(|l| l.id.as_str()).collect();
    let recorded: Vec<String> = (tx.query(
        "SELECT id FROM gateway_requests WHERE id = ANY($1)",
        &[&ids],
    ))
    .await
    .map_err(|e| store.err(e))?
    .iter()
    .map(|r| r.get(0))
    .collect();
    // Recorded without settling it: nothing more to charge, and no sweep finds it again.
    let settle =
        "UPDATE budget_holds SET settled_usd = 0 WHERE id = ANY($1) AND settled_usd IS NULL";
    (tx.execute(settle, &[&recorded]).await).map_err(|e| store.err(e))?;
    let fresh: Vec<&OpenRequest> = (lost.iter())
        .filter(|l| !recorded.contains(&l.id))
        .collect();
    let records: Vec<_> = fresh.iter().map(|l| l.lost()).collect();
    let reserved: Vec<f64> = fresh.iter().map(|l| l.reserved_usd).collect();
    record_in(store, &tx, &records, &reserved).await?;
    tx.commit().await.map_err(|e| store.err(e))?;
    Ok(lost.len() as u64)
}

impl OpenStore for PgStore {
    fn open_requests<'a>(
        &'a self,
        open_rows: &'a [OpenRequest],
        expires_ms: i64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(insert_open(self, open_rows, expires_ms))
    }

    fn renew_open<'a>(&'a self, holder: &'a str, expires_ms: i64) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let sql = "UPDATE gateway_open SET expires_ms = $2 WHERE holder = $1";
            self.exec(holder, sql, &[&holder, &expires_ms]).await
        })
    }

    fn charge_lost(&self, now_ms: i64, limit: u64) -> StoreFuture<'_, u64> {
        Box::pin(charge_lost(self, now_ms, limit))
    }
}
