//! Budget holds on PostgreSQL: the limited scopes' rows locked, the claims read, one insert.

use super::{lock_rows, params, prepare_locks};
use crate::store::PgStore;
use crate::store::StoreError;
use crate::store::gateway::claims::{hold_locks, hold_sql};
use crate::store::gateway::holds::{HoldOutcome, HoldRequest, HoldUse, decide_hold};
use crate::store::gateway::requests::RequestRecord;
use crate::store::gateway::totals::Deltas;

pub(super) async fn hold(store: &PgStore, req: &HoldRequest) -> Result<HoldOutcome, StoreError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.err(e))?;
    let bound = hold_sql(req, '$', false);
    let (locks, read) = tokio::try_join!(prepare_locks(store, &tx), async {
        tx.prepare_cached(&bound.sql)
            .await
            .map_err(|e| store.err(e))
    })?;
    let (args, rows) = (params(&bound), hold_locks(req));
    let ((), row) = tokio::try_join!(lock_rows(&tx, &locks, &rows), tx.query_one(&read, &args))
        .map_err(|e| store.err(e))?;
    let get = |i: usize| row.try_get::<_, f64>(i).map_err(|e| store.err(e));
    let used = HoldUse {
        key_usd: get(0)?,
        key_in_flight: get(1)?.max(0.0).ceil() as u64,
        user_usd: get(2)?,
        team_usd: get(3)?,
        gateway_usd: get(4)?,
    };
    let outcome = decide_hold(req, &used);
    if outcome == HoldOutcome::Held {
        tx.execute(
            "INSERT INTO budget_holds (id, key_id, team, ts_ms, reserved_usd, expires_ms, user_id,
                 route, dialect, stream)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                &req.id,
                &req.key.id,
                &req.key.team,
                &req.now_ms,
                &req.amount_usd,
                &req.expires_ms,
                &req.key.owner,
                &req.asked.route,
                &req.asked.dialect,
                &req.asked.stream,
            ],
        )
        .await
        .map_err(|e| store.task_err(&req.id, e))?;
    }
    tx.commit().await.map_err(|e| store.err(e))?;
    Ok(outcome)
}

/// The lost records of a batch taken out, with their arrivals.
const TAKE_LOST: &str = "DELETE FROM gateway_requests WHERE id = ANY($1) AND status = 'lost'
    RETURNING id, started_ms";

/// Their holds' charges taken back, the holds left open for the records to settle.
const REOPEN_HOLDS: &str = "UPDATE budget_holds h SET settled_usd = NULL
    FROM (SELECT id, settled_usd FROM budget_holds WHERE id = ANY($1) AND settled_usd IS NOT NULL
          FOR UPDATE) o
    WHERE h.id = o.id RETURNING h.key_id, h.team, h.ts_ms, o.settled_usd, h.user_id";

/// Their spend rows, at their arrivals, which the index on time finds.
const TAKE_SPEND: &str = "DELETE FROM spend s USING unnest($1::text[], $2::bigint[]) AS v(id, ts)
    WHERE s.ts_ms = v.ts AND s.task_id = v.id RETURNING s.ts_ms, s.cost_usd";

/// Takes back the `lost` record of each of `records` charged as lost before its own record
/// arrived: its row, its spend and its hold's charge, the hold left open for the record to
/// settle. So a late record replaces its lost one and nothing is charged twice.
pub(super) async fn undo_lost(
    store: &PgStore,
    tx: &deadpool_postgres::Transaction<'_>,
    records: &[RequestRecord],
    deltas: &mut Deltas,
) -> Result<(), StoreError> {
    let get = |e| store.err(e);
    let ids: Vec<&str> = (records.iter())
        .filter(|r| r.key_id.is_some())
        .map(|r| r.id.as_str())
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    let lost = tx.query(TAKE_LOST, &[&ids]).await.map_err(get)?;
    if lost.is_empty() {
        return Ok(());
    }
    let lost_ids: Vec<String> = lost.iter().map(|r| r.get(0)).collect();
    let arrivals: Vec<i64> = lost.iter().map(|r| r.get(1)).collect();
    for row in tx.query(REOPEN_HOLDS, &[&lost_ids]).await.map_err(get)? {
        let team: Option<String> = row.try_get(1).map_err(get)?;
        let key: String = row.try_get(0).map_err(get)?;
        let settled: f64 = row.try_get(3).map_err(get)?;
        let user: Option<String> = row.try_get(4).map_err(get)?;
        deltas.hold(
            (&key, user.as_deref()),
            team.as_deref(),
            row.try_get(2).map_err(get)?,
            -settled,
        );
    }
    for row in (tx.query(TAKE_SPEND, &[&lost_ids, &arrivals]).await).map_err(get)? {
        let cost: f64 = row.try_get(1).map_err(get)?;
        deltas.spend(row.try_get(0).map_err(get)?, -cost);
    }
    Ok(())
}
