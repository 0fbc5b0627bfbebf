//! The gateway's request log on PostgreSQL ([`crate::store::RequestLog`], SPEC R14.4, R14.9,
//! R13.2): a row per relayed request and, in the same transaction, its cost as a `spend` row
//! (R12.2), so every gateway and task on the server counts it toward the daily cap.

use super::PgStore;
use crate::store::rows::{REQUEST_COLUMNS, request_counts, request_from_row, request_spent_ms};
use crate::store::{RequestLog, RequestRecord, StoreFuture};

impl RequestLog for PgStore {
    fn record_request<'a>(&'a self, r: &'a RequestRecord) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(|e| self.err(e))?;
            let [stream, input, output, cache_read, cache_write] = request_counts(r);
            let insert = tx
                .prepare_cached(&format!(
                    "INSERT INTO gateway_requests ({REQUEST_COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)"
                ))
                .await
                .map_err(|e| self.err(e))?;
            tx.execute(
                &insert,
                &[
                    &r.id,
                    &r.started_ms,
                    &r.route,
                    &r.dialect,
                    &stream,
                    &r.provider,
                    &r.model,
                    &input,
                    &output,
                    &cache_read,
                    &cache_write,
                    &r.cost_usd,
                    &r.first_token_ms,
                    &r.duration_ms,
                    &r.outcome.status(),
                    &r.outcome.error_kind(),
                    &r.key_id,
                    &r.team,
                ],
            )
            .await
            .map_err(|e| self.task_err(&r.id, e))?;
            // A keyed request's hold is settled here (SPEC R14.7): its spend is what it
            // settles at.
            let spent = self.settle_hold(&tx, r).await?;
            if let Some(cost) = spent.or(r.cost_usd).filter(|c| *c != 0.0) {
                tx.execute(
                    "INSERT INTO spend (ts_ms, task_id, cost_usd) VALUES ($1, $2, $3)",
                    &[&request_spent_ms(r), &r.id, &cost],
                )
                .await
                .map_err(|e| self.err(e))?;
            }
            tx.commit().await.map_err(|e| self.err(e))
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
