//! The gateway's stored Responses on PostgreSQL, seen by every gateway on the server.

use crate::store::gateway::responses::{ResponseStore, StoredResponse};
use crate::store::gateway::rows::{RESPONSE_COLUMNS, ResponseRow, response_json};
use crate::store::{PgStore, StoreFuture};

impl ResponseStore for PgStore {
    fn store_response<'a>(&'a self, r: &'a StoredResponse) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (messages, answer) = response_json(r)?;
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(|e| self.err(e))?;
            tx.execute(
                "DELETE FROM gateway_responses WHERE expires_ms <= $1",
                &[&r.created_ms],
            )
            .await
            .map_err(|e| self.err(e))?;
            tx.execute(
                &format!(
                    "INSERT INTO gateway_responses ({RESPONSE_COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, $7)"
                ),
                &[
                    &r.id,
                    &r.created_ms,
                    &r.expires_ms,
                    &r.route,
                    &r.system_prompt,
                    &messages,
                    &answer,
                ],
            )
            .await
            .map_err(|e| self.task_err(&r.id, e))?;
            tx.commit().await.map_err(|e| self.err(e))
        })
    }

    fn stored_response<'a>(
        &'a self,
        id: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<StoredResponse>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT {RESPONSE_COLUMNS} FROM gateway_responses WHERE id = $1 AND expires_ms > $2"
            );
            let rows = self.rows(&sql, &[&id, &now_ms]).await?;
            let Some(row) = rows.first() else {
                return Ok(None);
            };
            let row = ResponseRow::read(row).map_err(|e| self.err(e))?;
            row.response().map(Some)
        })
    }
}
