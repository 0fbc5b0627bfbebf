//! Budget and slot leases on PostgreSQL, under the locks holds and rate slots take.

use futures_util::future::try_join_all;
use tokio_postgres::types::ToSql;

/// One bound argument.
type P<'a> = &'a (dyn ToSql + Sync);

use super::requests::record;
use super::{lock_rows, params, prepare_locks};
use crate::limits::state::RATE_WINDOW_MS;
use crate::store::gateway::claims::{Claim, others_sql};
use crate::store::gateway::leases::{
    LeaseGrant, LeaseStore, LeaseWant, LeasedRecord, SlotLease, SlotLeaseRequest, decide_lease,
    decide_slot_lease, kept_one,
};
use crate::store::postgres::limits::{lock_slots, prepare_slot_lock};
use crate::store::rows::{LEARNT_COLUMNS, SLOT_REQUESTS, learnt_from_row, to_i64, to_u64};
use crate::store::{PgStore, StoreError, StoreFuture};

/// A holder's live lease on a claim's window.
const PREVIOUS: &str = "SELECT amount FROM budget_leases WHERE scope = $1 AND id = $2
    AND holder = $3 AND span = $4 AND bucket_ms = $5 AND expires_ms > $6";

async fn lease(
    store: &PgStore,
    holder: &str,
    (now, expires): (i64, i64),
    wants: &[LeaseWant],
) -> Result<Vec<LeaseGrant>, StoreError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.err(e))?;
    let claims: Vec<Claim> = wants.iter().map(|w| Claim::of_want(w, now)).collect();
    let reads: Vec<_> = (claims.iter())
        .map(|c| others_sql(c, holder, '$', false))
        .collect();
    let locks = prepare_locks(store, &tx).await?;
    let (previous, others) = tokio::try_join!(
        tx.prepare_cached(PREVIOUS),
        try_join_all(reads.iter().map(|b| tx.prepare_cached(&b.sql)))
    )
    .map_err(|e| store.err(e))?;
    let args: Vec<_> = reads.iter().map(params).collect();
    let names: Vec<(&str, &str, i64)> = (claims.iter())
        .map(|c| (c.scope.name(), c.window.name(), c.window.bucket_ms(now)))
        .collect();
    let lock = claims.iter().map(Claim::lock_row).collect::<Vec<_>>();
    let mine_args: Vec<[P<'_>; 6]> = (claims.iter().zip(&names))
        .map(|(c, (scope, span, bucket))| -> [P<'_>; 6] {
            [scope, &c.id, &holder, span, bucket, &now]
        })
        .collect();
    let ((), used, mine) = tokio::try_join!(
        lock_rows(&tx, &locks, &lock),
        try_join_all(others.iter().zip(&args).map(|(s, a)| tx.query_one(s, a))),
        try_join_all(mine_args.iter().map(|a| tx.query_opt(&previous, &a[..]))),
    )
    .map_err(|e| store.err(e))?;
    let mut grants = Vec::with_capacity(wants.len());
    for ((want, used), mine) in wants.iter().zip(used).zip(mine) {
        let others: f64 = used.try_get(0).map_err(|e| store.err(e))?;
        let previous: f64 = match mine {
            Some(r) => r.try_get(0).map_err(|e| store.err(e))?,
            None => 0.0,
        };
        grants.push(decide_lease(want, others, previous, now));
    }
    write_leases(store, &tx, holder, (&names, expires, now), (wants, &grants)).await?;
    tx.commit().await.map_err(|e| store.err(e))?;
    Ok(grants)
}

/// Sets each lease to its grant and deletes expired ones, pipelined.
async fn write_leases(
    store: &PgStore,
    tx: &deadpool_postgres::Transaction<'_>,
    holder: &str,
    (names, expires, now): (&[(&str, &str, i64)], i64, i64),
    (wants, grants): (&[LeaseWant], &[LeaseGrant]),
) -> Result<(), StoreError> {
    let (prune, set, end) = tokio::try_join!(
        tx.prepare_cached(
            "DELETE FROM budget_leases WHERE scope = $1 AND id = $2 AND expires_ms <= $3"
        ),
        tx.prepare_cached(
            "INSERT INTO budget_leases (scope, id, holder, span, bucket_ms, amount, expires_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (scope, id, holder) DO UPDATE SET
               span = excluded.span, bucket_ms = excluded.bucket_ms, amount = excluded.amount,
               expires_ms = excluded.expires_ms"
        ),
        tx.prepare_cached("DELETE FROM budget_leases WHERE scope = $1 AND id = $2 AND holder = $3"),
    )
    .map_err(|e| store.err(e))?;
    let rows: Vec<_> = names.iter().zip(wants).zip(grants).collect();
    let prune_args: Vec<[P<'_>; 3]> = (rows.iter())
        .map(|((n, w), _)| -> [P<'_>; 3] { [&n.0, &w.id, &now] })
        .collect();
    let set_args: Vec<[P<'_>; 7]> = (rows.iter())
        .map(|((n, w), g)| -> [P<'_>; 7] {
            [&n.0, &w.id, &holder, &n.1, &n.2, &g.amount, &expires]
        })
        .collect();
    let writes = (0..rows.len()).flat_map(|i| {
        let pruned = tx.execute(&prune, &prune_args[i][..]);
        let written = if rows[i].1.amount > 0.0 {
            tx.execute(&set, &set_args[i][..])
        } else {
            tx.execute(&end, &set_args[i][..3])
        };
        [pruned, written]
    });
    try_join_all(writes).await.map_err(|e| store.err(e))?;
    Ok(())
}

/// Requests and tokens of key `$1`'s slots stamped after `$2`.
const SLOTS_AFTER: &str = "SELECT coalesce(sum(SLOT_REQUESTS), 0)::bigint,
    coalesce(sum(input_tokens), 0)::bigint FROM rate_slots WHERE key = $1 AND ts_ms > $2";

async fn lease_slots(store: &PgStore, req: &SlotLeaseRequest) -> Result<SlotLease, StoreError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.err(e))?;
    let lock = prepare_slot_lock(store, &tx).await?;
    lock_slots(&tx, &lock, &req.key, req.now_ms)
        .await
        .map_err(|e| store.err(e))?;
    let learnt_sql = format!("SELECT {LEARNT_COLUMNS} FROM rate_learnt WHERE key = $1");
    let learnt = tx
        .query_opt(&learnt_sql, &[&req.key])
        .await
        .map_err(|e| store.err(e))?;
    let learnt = match &learnt {
        Some(r) => learnt_from_row(r, 0).map_err(|e| store.err(e))?,
        None => None,
    };
    let start = req.now_ms - RATE_WINDOW_MS;
    let since = learnt
        .as_ref()
        .map_or(i64::MAX, |l| start.max(l.observed_ms - 1));
    let sql = SLOTS_AFTER.replace("SLOT_REQUESTS", SLOT_REQUESTS);
    let (window_args, since_args): ([&(dyn ToSql + Sync); 2], [&(dyn ToSql + Sync); 2]) =
        ([&req.key, &start], [&req.key, &since]);
    let (window, since) = tokio::try_join!(
        tx.query_one(&sql, &window_args),
        tx.query_one(&sql, &since_args),
    )
    .map_err(|e| store.err(e))?;
    let lease = |r: &tokio_postgres::Row| SlotLease {
        requests: to_u64(r.get(0)),
        tokens: to_u64(r.get(1)),
    };
    let grant = decide_slot_lease(req, lease(&window), lease(&since), learnt.as_ref());
    if grant.requests > 0 {
        let stamp = req.valid_until_ms.max(req.now_ms);
        let (tokens, requests) = (to_i64(grant.tokens), to_i64(grant.requests));
        tx.execute(
            "INSERT INTO rate_slots (key, ts_ms, input_tokens, requests, holder)
             VALUES ($1, $2, $3, $4, $5)",
            &[&req.key, &stamp, &tokens, &requests, &req.holder],
        )
        .await
        .map_err(|e| store.err(e))?;
    }
    tx.commit().await.map_err(|e| store.err(e))?;
    Ok(grant)
}

async fn return_slots(
    store: &PgStore,
    key: &str,
    holder: &str,
    unused: SlotLease,
) -> Result<SlotLease, StoreError> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.err(e))?;
    let rows = tx
        .query(
            "SELECT ctid::text, requests, input_tokens FROM rate_slots
             WHERE holder = $1 AND key = $2 ORDER BY ts_ms FOR UPDATE",
            &[&holder, &key],
        )
        .await
        .map_err(|e| store.err(e))?;
    let mut left = unused;
    for row in rows {
        let (ctid, requests, tokens): (String, i64, i64) = (row.get(0), row.get(1), row.get(2));
        let t = to_u64(tokens).min(left.tokens);
        let r = kept_one(to_u64(requests), left.requests, to_u64(tokens) - t);
        left.requests -= r;
        left.tokens -= t;
        let (requests, tokens) = (requests - to_i64(r), tokens - to_i64(t));
        let (sql, args): (&str, Vec<&(dyn ToSql + Sync)>) = if requests == 0 && tokens == 0 {
            (
                "DELETE FROM rate_slots WHERE ctid = $1::text::tid",
                vec![&ctid],
            )
        } else {
            (
                "UPDATE rate_slots SET requests = $2, input_tokens = $3 WHERE ctid = $1::text::tid",
                vec![&ctid, &requests, &tokens],
            )
        };
        tx.execute(sql, &args).await.map_err(|e| store.err(e))?;
    }
    tx.commit().await.map_err(|e| store.err(e))?;
    Ok(SlotLease {
        requests: unused.requests - left.requests,
        tokens: unused.tokens - left.tokens,
    })
}

impl LeaseStore for PgStore {
    fn lease<'a>(
        &'a self,
        holder: &'a str,
        now_ms: i64,
        expires_ms: i64,
        wants: &'a [LeaseWant],
    ) -> StoreFuture<'a, Vec<LeaseGrant>> {
        Box::pin(lease(self, holder, (now_ms, expires_ms), wants))
    }

    fn release<'a>(&'a self, holder: &'a str) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let sql = "DELETE FROM budget_leases WHERE holder = $1";
            self.exec(holder, sql, &[&holder]).await
        })
    }

    fn lease_slots<'a>(&'a self, request: &'a SlotLeaseRequest) -> StoreFuture<'a, SlotLease> {
        Box::pin(lease_slots(self, request))
    }

    fn return_slots<'a>(
        &'a self,
        key: &'a str,
        holder: &'a str,
        unused: SlotLease,
    ) -> StoreFuture<'a, SlotLease> {
        Box::pin(return_slots(self, key, holder, unused))
    }

    fn record_leased<'a>(&'a self, records: &'a [LeasedRecord]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (records, reserved): (Vec<_>, Vec<_>) = (records.iter())
                .map(|l| (l.record.clone(), l.reserved_usd))
                .unzip();
            record(self, &records, &reserved).await
        })
    }
}
