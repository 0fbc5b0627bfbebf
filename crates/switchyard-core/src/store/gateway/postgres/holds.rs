//! Budget holds on PostgreSQL: the limited scopes' rows locked, the claims read, one insert.

use super::{lock_rows, params, prepare_locks};
use crate::store::PgStore;
use crate::store::StoreError;
use crate::store::gateway::claims::{hold_locks, hold_sql};
use crate::store::gateway::holds::{HoldOutcome, HoldRequest, HoldUse, decide_hold};

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
            "INSERT INTO budget_holds (id, key_id, team, ts_ms, reserved_usd, expires_ms, user_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                &req.id,
                &req.key.id,
                &req.key.team,
                &req.now_ms,
                &req.amount_usd,
                &req.expires_ms,
                &req.key.owner,
            ],
        )
        .await
        .map_err(|e| store.task_err(&req.id, e))?;
    }
    tx.commit().await.map_err(|e| store.err(e))?;
    Ok(outcome)
}
