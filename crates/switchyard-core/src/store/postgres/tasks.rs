//! Task rows on PostgreSQL: creation, listing, totals with the spend row of R12.2, the model a
//! resumed task runs with and the deleted range (SPEC R10.1, R8.4).

use serde_json::Value;

use super::PgStore;
use super::history::INSERT_EDIT;
use crate::context::DeletedRange;
use crate::store::rows::{TASK_COLUMNS, range_columns, task_from_row, to_i64};
use crate::store::{NewTask, StoreError, TaskRecord, TaskUsage, now_ms};

impl PgStore {
    pub(super) async fn do_create_task(&self, new: &NewTask) -> Result<TaskRecord, StoreError> {
        let now = now_ms();
        let mut candidate = now;
        loop {
            let id = candidate.to_string();
            let n = self
                .exec(
                    &id,
                    "INSERT INTO tasks (id, created_ms, updated_ms, cwd, mode, provider, model, first_prompt)
                     VALUES ($1, $2, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
                    &[
                        &id,
                        &now,
                        &new.cwd,
                        &new.mode,
                        &new.provider,
                        &new.model,
                        &new.first_prompt,
                    ],
                )
                .await?;
            if n == 1 {
                return self.do_task(&id).await;
            }
            candidate += 1;
        }
    }

    pub(super) async fn do_task(&self, id: &str) -> Result<TaskRecord, StoreError> {
        let rows = self
            .rows(
                &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1"),
                &[&id],
            )
            .await?;
        let row = rows
            .first()
            .ok_or_else(|| StoreError::TaskNotFound { id: id.to_owned() })?;
        task_from_row(row).map_err(|e| self.err(e))
    }

    pub(super) async fn do_list_tasks(&self) -> Result<Vec<TaskRecord>, StoreError> {
        let rows = self
            .rows(
                &format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_ms, id"),
                &[],
            )
            .await?;
        self.mapped(&rows, task_from_row)
    }

    /// Runs the one-statement update `sql` of task `id`; no row changed:
    /// [`StoreError::TaskNotFound`].
    async fn update_task(
        &self,
        id: &str,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<(), StoreError> {
        if self.exec(id, sql, params).await? == 0 {
            return Err(StoreError::TaskNotFound { id: id.to_owned() });
        }
        Ok(())
    }

    /// The task's totals and, when the request cost something, a spend row with the time
    /// (for [`crate::limits::LimitsStore::spend_between`]), in one transaction.
    pub(super) async fn do_add_usage(&self, id: &str, usage: &TaskUsage) -> Result<(), StoreError> {
        let now = now_ms();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let update = tx
            .prepare_cached(
                "UPDATE tasks SET tokens_in = tokens_in + $2, tokens_out = tokens_out + $3,
                 cache_writes = cache_writes + $4, cache_reads = cache_reads + $5,
                 cost_usd = cost_usd + $6, last_request_tokens = $7, updated_ms = $8,
                 unpriced_requests = unpriced_requests + $9
                 WHERE id = $1",
            )
            .await
            .map_err(|e| self.err(e))?;
        let n = tx
            .execute(
                &update,
                &[
                    &id,
                    &to_i64(usage.tokens_in),
                    &to_i64(usage.tokens_out),
                    &to_i64(usage.cache_writes),
                    &to_i64(usage.cache_reads),
                    &usage.cost_usd,
                    &to_i64(usage.total_tokens()),
                    &now,
                    &to_i64(usage.unpriced_requests),
                ],
            )
            .await
            .map_err(|e| self.task_err(id, e))?;
        if n == 0 {
            return Err(StoreError::TaskNotFound { id: id.to_owned() });
        }
        if usage.cost_usd != 0.0 {
            tx.execute(
                "INSERT INTO spend (ts_ms, task_id, cost_usd) VALUES ($1, $2, $3)",
                &[&now, &id, &usage.cost_usd],
            )
            .await
            .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))
    }

    pub(super) async fn do_set_deleted_range(
        &self,
        id: &str,
        range: Option<DeletedRange>,
        detail: &Value,
    ) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let (start, end) = range_columns(range);
        let n = tx
            .execute(
                "UPDATE tasks SET deleted_range_start = $2, deleted_range_end = $3, updated_ms = $4 WHERE id = $1",
                &[&id, &start, &end, &now_ms()],
            )
            .await
            .map_err(|e| self.task_err(id, e))?;
        if n == 0 {
            return Err(StoreError::TaskNotFound { id: id.to_owned() });
        }
        tx.execute(
            INSERT_EDIT,
            &[&id, &now_ms(), &"truncation", &detail.to_string()],
        )
        .await
        .map_err(|e| self.task_err(id, e))?;
        tx.commit().await.map_err(|e| self.err(e))
    }

    pub(super) async fn do_set_task_model(
        &self,
        id: &str,
        mode: &str,
        provider: &str,
        model: &str,
    ) -> Result<(), StoreError> {
        self.update_task(
            id,
            "UPDATE tasks SET mode = $2, provider = $3, model = $4, updated_ms = $5 WHERE id = $1",
            &[&id, &mode, &provider, &model, &now_ms()],
        )
        .await
    }
}
