//! The gateway's request log on PostgreSQL ([`crate::store::RequestLog`], SPEC R14.4, R14.8,
//! R14.9, R13.2): a row per relayed request and, in the same transaction, its hold settled
//! (R14.7) and its cost as a `spend` row (R12.2), so every gateway and task on the server
//! counts it toward the daily cap.
//!
//! A batch of records is one transaction of four round trips whatever its size (begin; the
//! rows; the holds; the spend, then commit), each one statement over arrays (`unnest`), so
//! the statements are prepared once per connection.

use deadpool_postgres::Transaction;

use super::PgStore;
use crate::store::keys::settled_without_reservation;
use crate::store::rows::{
    PRUNE_REQUESTS, REQUEST_COLUMNS, request_counts, request_from_row, request_spent_ms,
};
use crate::store::{RequestLog, RequestRecord, StoreError, StoreFuture};

/// Every row of a batch as one `INSERT … SELECT FROM unnest(…)`, in [`REQUEST_COLUMNS`] order.
const INSERT_ROWS: &str = "INSERT INTO gateway_requests (id, started_ms, route, dialect, stream,
        provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
        cost_usd, first_token_ms, duration_ms, status, error_kind, key_id, team)
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[],
        $6::text[], $7::text[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[],
        $12::float8[], $13::bigint[], $14::bigint[], $15::text[], $16::text[], $17::text[],
        $18::text[])";

/// The open holds of a batch's keyed records settled: each at its record's amount, or its
/// reservation where the record has none (`crate::store::settled_amount`).
const SETTLE_HOLDS: &str =
    "UPDATE budget_holds h SET settled_usd = coalesce(v.amount, h.reserved_usd)
    FROM unnest($1::text[], $2::float8[]) AS v(id, amount)
    WHERE h.id = v.id AND h.settled_usd IS NULL
    RETURNING h.id, h.settled_usd";

/// A batch's spend rows.
const INSERT_SPEND: &str = "INSERT INTO spend (ts_ms, task_id, cost_usd)
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::float8[])";

impl PgStore {
    /// The batch's rows in one statement; an id already recorded is
    /// [`StoreError::Conflict`] (of the batch's first id: the server's message names it).
    async fn insert_rows(
        &self,
        tx: &Transaction<'_>,
        records: &[RequestRecord],
    ) -> Result<(), StoreError> {
        let text = |f: fn(&RequestRecord) -> &str| records.iter().map(f).collect::<Vec<_>>();
        let opt = |f: fn(&RequestRecord) -> Option<&str>| records.iter().map(f).collect::<Vec<_>>();
        let int = |f: fn(&RequestRecord) -> i64| records.iter().map(f).collect::<Vec<_>>();
        let count = |i: usize| {
            (records.iter())
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
            .map_err(|e| self.err(e))?;
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
        .map_err(|e| self.task_err(first_id, e))?;
        Ok(())
    }

    /// Settles the batch's open holds (SPEC R14.7) and logs its spend: a settled hold's
    /// amount, else the record's known cost, when not 0.
    async fn settle_batch(
        &self,
        tx: &Transaction<'_>,
        records: &[RequestRecord],
    ) -> Result<(), StoreError> {
        let keyed: Vec<&RequestRecord> = records.iter().filter(|r| r.key_id.is_some()).collect();
        let mut settled = std::collections::HashMap::new();
        if !keyed.is_empty() {
            let ids: Vec<&str> = keyed.iter().map(|r| r.id.as_str()).collect();
            let amounts: Vec<Option<f64>> = keyed
                .iter()
                .map(|r| settled_without_reservation(r))
                .collect();
            let settle = tx
                .prepare_cached(SETTLE_HOLDS)
                .await
                .map_err(|e| self.err(e))?;
            let rows = (tx.query(&settle, &[&ids, &amounts]).await).map_err(|e| self.err(e))?;
            for row in rows {
                let id: String = row.try_get(0).map_err(|e| self.err(e))?;
                let amount: f64 = row.try_get(1).map_err(|e| self.err(e))?;
                settled.insert(id, amount);
            }
        }
        let (mut ts, mut ids, mut costs) = (Vec::new(), Vec::new(), Vec::new());
        for r in records {
            let spent = settled.get(&r.id).copied().or(r.cost_usd);
            if let Some(cost) = spent.filter(|c| *c != 0.0) {
                ts.push(request_spent_ms(r));
                ids.push(r.id.as_str());
                costs.push(cost);
            }
        }
        if !ids.is_empty() {
            let insert = tx
                .prepare_cached(INSERT_SPEND)
                .await
                .map_err(|e| self.err(e))?;
            (tx.execute(&insert, &[&ts, &ids, &costs]).await).map_err(|e| self.err(e))?;
        }
        Ok(())
    }
}

impl RequestLog for PgStore {
    fn record_request<'a>(&'a self, r: &'a RequestRecord) -> StoreFuture<'a, ()> {
        self.record_requests(std::slice::from_ref(r))
    }

    fn record_requests<'a>(&'a self, records: &'a [RequestRecord]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if records.is_empty() {
                return Ok(());
            }
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(|e| self.err(e))?;
            self.insert_rows(&tx, records).await?;
            self.settle_batch(&tx, records).await?;
            tx.commit().await.map_err(|e| self.err(e))
        })
    }

    fn prune_requests(&self, before_ms: i64, limit: u64) -> StoreFuture<'_, u64> {
        Box::pin(async move {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let client = self.client().await?;
            let sql = PRUNE_REQUESTS.replace("?1", "$1").replace("?2", "$2");
            client
                .execute(sql.as_str(), &[&before_ms, &limit])
                .await
                .map_err(|e| self.err(e))
        })
    }

    fn recent_requests(&self, limit: usize) -> StoreFuture<'_, Vec<RequestRecord>> {
        Box::pin(async move {
            // LIMIT NULL is no limit.
            let limit = (limit > 0).then(|| i64::try_from(limit).unwrap_or(i64::MAX));
            let rows = self
                .rows(
                    &format!(
                        "SELECT {REQUEST_COLUMNS} FROM gateway_requests
                         ORDER BY started_ms DESC, id DESC LIMIT $1"
                    ),
                    &[&limit],
                )
                .await?;
            self.mapped(&rows, request_from_row)
        })
    }
}
