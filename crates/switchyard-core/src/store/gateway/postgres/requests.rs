//! The gateway's request log on PostgreSQL, a batch one transaction of array statements.

use std::collections::HashMap;

use deadpool_postgres::Transaction;

use super::holds::undo_lost;
use super::totals::add_totals;
use crate::store::gateway::holds::{settled_amount, settled_without_reservation};
use crate::store::gateway::requests::{RequestLog, RequestRecord};
use crate::store::gateway::rows::{
    PRUNE_REQUESTS, REQUEST_COLUMNS, request_counts, request_from_row, request_spent_ms,
};
use crate::store::gateway::totals::Deltas;
use crate::store::{PgStore, StoreError, StoreFuture};

/// Every row of a batch as one `INSERT … SELECT FROM unnest(…)`, in [`REQUEST_COLUMNS`] order.
const INSERT_ROWS: &str = "INSERT INTO gateway_requests (id, started_ms, route, dialect, stream,
        provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
        cost_usd, first_token_ms, duration_ms, status, error_kind, key_id, team)
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[],
        $6::text[], $7::text[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[],
        $12::float8[], $13::bigint[], $14::bigint[], $15::text[], $16::text[], $17::text[],
        $18::text[])";

/// The batch's open holds settled at their records' amounts, else their reservations.
const SETTLE_HOLDS: &str =
    "UPDATE budget_holds h SET settled_usd = coalesce(v.amount, h.reserved_usd)
    FROM unnest($1::text[], $2::float8[]) AS v(id, amount)
    WHERE h.id = v.id AND h.settled_usd IS NULL
    RETURNING h.id, h.settled_usd, h.key_id, h.team, h.ts_ms, h.user_id";

/// Settled ledger rows of requests admitted against a lease, each naming its key's owner as
/// written: one admitted just before an owner change counts for the new owner.
const INSERT_LEASED: &str = "INSERT INTO budget_holds
        (id, key_id, team, ts_ms, reserved_usd, expires_ms, settled_usd, user_id)
    SELECT i, k, t, ts, r, ts, a, (SELECT owner FROM client_keys WHERE id = k)
    FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[],
        $5::float8[], $6::float8[]) AS v(i, k, t, ts, r, a)
    ON CONFLICT (id) DO NOTHING
    RETURNING id, user_id";

/// A batch's spend rows.
const INSERT_SPEND: &str = "INSERT INTO spend (ts_ms, task_id, cost_usd)
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::float8[])";

/// The batch's rows in one statement; a taken id is a conflict of the first id.
async fn insert_rows(
    store: &PgStore,
    tx: &Transaction<'_>,
    records: &[RequestRecord],
) -> Result<(), StoreError> {
    let text = |f: fn(&RequestRecord) -> &str| records.iter().map(f).collect::<Vec<_>>();
    let opt = |f: fn(&RequestRecord) -> Option<&str>| records.iter().map(f).collect::<Vec<_>>();
    let int = |f: fn(&RequestRecord) -> i64| records.iter().map(f).collect::<Vec<_>>();
    let count = |i: usize| {
        records
            .iter()
            .map(|r| request_counts(r)[i])
            .collect::<Vec<_>>()
    };
    let (ids, routes, dialects) = (text(|r| &r.id), text(|r| &r.route), text(|r| &r.dialect));
    let (started, durations) = (int(|r| r.started_ms), int(|r| r.duration_ms));
    let (providers, models) = (opt(|r| r.provider.as_deref()), opt(|r| r.model.as_deref()));
    let statuses = text(|r| r.outcome.status());
    let kinds = opt(|r| r.outcome.error_kind());
    let (keys, teams) = (opt(|r| r.key_id.as_deref()), opt(|r| r.team.as_deref()));
    let costs: Vec<Option<f64>> = records.iter().map(|r| r.cost_usd).collect();
    let first: Vec<Option<i64>> = records.iter().map(|r| r.first_token_ms).collect();
    let [stream, input, output, cache_read, cache_write] = [0, 1, 2, 3, 4].map(count);
    let insert = tx
        .prepare_cached(INSERT_ROWS)
        .await
        .map_err(|e| store.err(e))?;
    let first_id = records.first().map_or("", |r| r.id.as_str());
    tx.execute(
        &insert,
        &[
            &ids,
            &started,
            &routes,
            &dialects,
            &stream,
            &providers,
            &models,
            &input,
            &output,
            &cache_read,
            &cache_write,
            &costs,
            &first,
            &durations,
            &statuses,
            &kinds,
            &keys,
            &teams,
        ],
    )
    .await
    .map_err(|e| store.task_err(first_id, e))?;
    Ok(())
}

/// Settles the batch's open holds, adding them to `deltas`; returns the amounts by id.
async fn settle_holds(
    store: &PgStore,
    tx: &Transaction<'_>,
    records: &[RequestRecord],
    deltas: &mut Deltas,
) -> Result<HashMap<String, f64>, StoreError> {
    let keyed: Vec<&RequestRecord> = records.iter().filter(|r| r.key_id.is_some()).collect();
    let mut settled = HashMap::new();
    if keyed.is_empty() {
        return Ok(settled);
    }
    let ids: Vec<&str> = keyed.iter().map(|r| r.id.as_str()).collect();
    let amounts: Vec<Option<f64>> = keyed
        .iter()
        .map(|r| settled_without_reservation(r))
        .collect();
    let settle = tx
        .prepare_cached(SETTLE_HOLDS)
        .await
        .map_err(|e| store.err(e))?;
    let rows = (tx.query(&settle, &[&ids, &amounts]).await).map_err(|e| store.err(e))?;
    for row in rows {
        let get = |e| store.err(e);
        let id: String = row.try_get(0).map_err(get)?;
        let amount: f64 = row.try_get(1).map_err(get)?;
        let key: String = row.try_get(2).map_err(get)?;
        let team: Option<String> = row.try_get(3).map_err(get)?;
        let user: Option<String> = row.try_get(5).map_err(get)?;
        let at = row.try_get(4).map_err(get)?;
        deltas.hold((&key, user.as_deref()), team.as_deref(), at, amount);
        settled.insert(id, amount);
    }
    Ok(settled)
}

/// Writes a settled ledger row for each keyed record admitted against a lease that had no hold.
async fn insert_leased(
    store: &PgStore,
    tx: &Transaction<'_>,
    leased: &[(&RequestRecord, f64)],
    settled: &mut HashMap<String, f64>,
    deltas: &mut Deltas,
) -> Result<(), StoreError> {
    let fresh: Vec<(&RequestRecord, f64)> = (leased.iter().copied())
        .filter(|(r, _)| r.key_id.is_some() && !settled.contains_key(&r.id))
        .collect();
    if fresh.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = fresh.iter().map(|(r, _)| r.id.as_str()).collect();
    let keys: Vec<Option<&str>> = fresh.iter().map(|(r, _)| r.key_id.as_deref()).collect();
    let teams: Vec<Option<&str>> = fresh.iter().map(|(r, _)| r.team.as_deref()).collect();
    let ts: Vec<i64> = fresh.iter().map(|(r, _)| r.started_ms).collect();
    let reserved: Vec<f64> = fresh.iter().map(|(_, v)| *v).collect();
    let amounts: Vec<f64> = fresh.iter().map(|(r, v)| settled_amount(r, *v)).collect();
    let insert = tx
        .prepare_cached(INSERT_LEASED)
        .await
        .map_err(|e| store.err(e))?;
    let rows = (tx
        .query(&insert, &[&ids, &keys, &teams, &ts, &reserved, &amounts])
        .await)
        .map_err(|e| store.err(e))?;
    let mut owners = HashMap::new();
    for row in rows {
        let get = |e| store.err(e);
        let id: String = row.try_get(0).map_err(get)?;
        owners.insert(id, row.try_get::<_, Option<String>>(1).map_err(get)?);
    }
    for ((r, _), amount) in fresh.iter().zip(amounts) {
        let owner = owners.get(&r.id).and_then(Option::as_deref);
        let key = (r.key_id.as_deref().unwrap_or(""), owner);
        deltas.hold(key, r.team.as_deref(), r.started_ms, amount);
        settled.insert(r.id.clone(), amount);
    }
    Ok(())
}

/// Logs the batch's spend: a settled amount, else the record's known cost, when not 0.
async fn insert_spend(
    store: &PgStore,
    tx: &Transaction<'_>,
    records: &[RequestRecord],
    settled: &HashMap<String, f64>,
    deltas: &mut Deltas,
) -> Result<(), StoreError> {
    let (mut ts, mut ids, mut costs) = (Vec::new(), Vec::new(), Vec::new());
    for r in records {
        let spent = settled.get(&r.id).copied().or(r.cost_usd);
        if let Some(cost) = spent.filter(|c| *c != 0.0) {
            ts.push(request_spent_ms(r));
            ids.push(r.id.as_str());
            costs.push(cost);
            deltas.spend(request_spent_ms(r), cost);
        }
    }
    if !ids.is_empty() {
        let insert = tx
            .prepare_cached(INSERT_SPEND)
            .await
            .map_err(|e| store.err(e))?;
        (tx.execute(&insert, &[&ts, &ids, &costs]).await).map_err(|e| store.err(e))?;
    }
    Ok(())
}

/// Records `records` in one transaction, with the lease reservations `leased` gives.
pub(crate) async fn record(
    store: &PgStore,
    records: &[RequestRecord],
    leased: &[f64],
) -> Result<(), StoreError> {
    if records.is_empty() {
        return Ok(());
    }
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(|e| store.err(e))?;
    record_in(store, &tx, records, leased).await?;
    tx.commit().await.map_err(|e| store.err(e))
}

/// Writes `records` in `tx`: their rows, their holds settled, their spend and totals, and
/// their traces ended.
pub(crate) async fn record_in(
    store: &PgStore,
    tx: &Transaction<'_>,
    records: &[RequestRecord],
    leased: &[f64],
) -> Result<(), StoreError> {
    if records.is_empty() {
        return Ok(());
    }
    // The traces first: a sweep charging one of them as lost locks it first too.
    let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    (tx.execute("DELETE FROM gateway_open WHERE id = ANY($1)", &[&ids])
        .await)
        .map_err(|e| store.err(e))?;
    let mut deltas = Deltas::default();
    undo_lost(store, tx, records, &mut deltas).await?;
    insert_rows(store, tx, records).await?;
    let mut settled = settle_holds(store, tx, records, &mut deltas).await?;
    let pairs: Vec<(&RequestRecord, f64)> = records.iter().zip(leased.iter().copied()).collect();
    insert_leased(store, tx, &pairs, &mut settled, &mut deltas).await?;
    insert_spend(store, tx, records, &settled, &mut deltas).await?;
    add_totals(store, tx, &deltas).await
}

impl RequestLog for PgStore {
    fn record_request<'a>(&'a self, r: &'a RequestRecord) -> StoreFuture<'a, ()> {
        self.record_requests(std::slice::from_ref(r))
    }

    fn record_requests<'a>(&'a self, records: &'a [RequestRecord]) -> StoreFuture<'a, ()> {
        Box::pin(record(self, records, &[]))
    }

    fn prune_requests(&self, before_ms: i64, limit: u64) -> StoreFuture<'_, u64> {
        Box::pin(prune(self, PRUNE_REQUESTS, before_ms, limit))
    }

    fn recent_requests(&self, limit: usize) -> StoreFuture<'_, Vec<RequestRecord>> {
        Box::pin(async move {
            // LIMIT NULL is no limit.
            let limit = (limit > 0).then(|| i64::try_from(limit).unwrap_or(i64::MAX));
            let sql = format!(
                "SELECT {REQUEST_COLUMNS} FROM gateway_requests
                 ORDER BY started_ms DESC, id DESC LIMIT $1"
            );
            let rows = self.rows(&sql, &[&limit]).await?;
            self.mapped(&rows, request_from_row)
        })
    }
}

/// Runs a prune statement written with `?1` before and `?2` the most rows; how many rows it
/// deleted.
pub(super) async fn prune(
    store: &PgStore,
    sql: &str,
    before_ms: i64,
    limit: u64,
) -> Result<u64, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let client = store.client().await?;
    let sql = sql.replace("?1", "$1").replace("?2", "$2");
    (client.execute(sql.as_str(), &[&before_ms, &limit]).await).map_err(|e| store.err(e))
}
