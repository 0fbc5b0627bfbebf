//! [`TaskStore`] on PostgreSQL, each method one statement or one transaction.
//! Spec: R10.1, R10.2, R10.3, R13.1.

use serde_json::Value;
use switchyard_api::Message;

use super::PgStore;
use crate::context::DeletedRange;
use crate::store::gateway::postgres::totals::add_totals;
use crate::store::gateway::totals::Deltas;
use crate::store::rows::{
    JsonRow, TASK_COLUMNS, from_json, range_columns, task_from_row, to_i64, to_json,
};
use crate::store::{
    ContextEdit, ImportedEdit, ImportedEvent, NewTask, StoreError, StoreFuture, StoredEvent,
    TaskRecord, TaskStore, TaskUsage, now_ms,
};

/// Appends a context edit, numbered after the task's last.
const INSERT_EDIT: &str = "INSERT INTO context_edits (task_id, seq, ts_ms, kind, detail)
     VALUES ($1, (SELECT coalesce(max(seq), 0) + 1 FROM context_edits WHERE task_id = $1), $2, $3, $4)";

impl TaskStore for PgStore {
    fn create_task<'a>(&'a self, new: &'a NewTask) -> StoreFuture<'a, TaskRecord> {
        Box::pin(async move {
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
                    return self.task(&id).await;
                }
                candidate += 1;
            }
        })
    }

    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, TaskRecord> {
        Box::pin(async move {
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
        })
    }

    fn list_tasks(&self) -> StoreFuture<'_, Vec<TaskRecord>> {
        Box::pin(async move {
            let rows = self
                .rows(
                    &format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_ms, id"),
                    &[],
                )
                .await?;
            self.mapped(&rows, task_from_row)
        })
    }

    /// The task's totals, its spend row and the day's total, in one transaction.
    fn add_usage<'a>(&'a self, id: &'a str, usage: &'a TaskUsage) -> StoreFuture<'a, ()> {
        Box::pin(async move {
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
                let mut deltas = Deltas::default();
                deltas.spend(now, usage.cost_usd);
                add_totals(self, &tx, &deltas).await?;
            }
            tx.commit().await.map_err(|e| self.err(e))
        })
    }

    fn set_task_model<'a>(
        &'a self,
        id: &'a str,
        mode: &'a str,
        provider: &'a str,
        model: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            update_task(
                self,
                id,
                "UPDATE tasks SET mode = $2, provider = $3, model = $4, updated_ms = $5 WHERE id = $1",
                &[&id, &mode, &provider, &model, &now_ms()],
            )
            .await
        })
    }

    fn set_deleted_range<'a>(
        &'a self,
        id: &'a str,
        range: Option<DeletedRange>,
        detail: &'a Value,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
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
        })
    }

    fn append_message<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        message: &'a Message,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = to_json(id, message)?;
            self.append_message_json(id, index, json).await
        })
    }

    fn append_message_json<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        json: String,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.exec(
                id,
                "INSERT INTO messages (task_id, idx, ts_ms, message) VALUES ($1, $2, $3, $4)",
                &[&id, &(index as i64), &now_ms(), &json],
            )
            .await
            .map(drop)
        })
    }

    fn replace_message<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        message: &'a Message,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = to_json(id, message)?;
            let n = self
                .exec(
                    id,
                    "UPDATE messages SET message = $3, ts_ms = $4 WHERE task_id = $1 AND idx = $2",
                    &[&id, &(index as i64), &json, &now_ms()],
                )
                .await?;
            if n == 0 {
                return Err(StoreError::Conflict { id: id.to_owned() });
            }
            Ok(())
        })
    }

    fn messages<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>> {
        Box::pin(async move {
            let rows = self
                .rows(
                    "SELECT message FROM messages WHERE task_id = $1 ORDER BY idx",
                    &[&id],
                )
                .await?;
            rows.iter()
                .map(|r| from_json(id, r.try_get(0).map_err(|e| self.err(e))?))
                .collect()
        })
    }

    fn append_event<'a>(
        &'a self,
        id: &'a str,
        kind: &'a str,
        event: &'a Value,
        durable_now: bool,
    ) -> StoreFuture<'a, i64> {
        Box::pin(async move {
            // An unknown task inserts nothing; two racing writers collide on the key.
            const SQL: &str = "INSERT INTO ui_events (task_id, seq, ts_ms, kind, event)
                 SELECT t.id, (SELECT coalesce(max(seq), 0) + 1 FROM ui_events WHERE task_id = $1), $2, $3, $4
                 FROM tasks t WHERE t.id = $1
                 RETURNING seq";
            let event = event.to_string();
            let mut client = self.client().await?;
            let rows = if durable_now {
                let stmt = client.prepare_cached(SQL).await.map_err(|e| self.err(e))?;
                client
                    .query(&stmt, &[&id, &now_ms(), &kind, &event])
                    .await
                    .map_err(|e| self.task_err(id, e))?
            } else {
                let tx = client.transaction().await.map_err(|e| self.err(e))?;
                tx.batch_execute("SET LOCAL synchronous_commit = off")
                    .await
                    .map_err(|e| self.err(e))?;
                let stmt = tx.prepare_cached(SQL).await.map_err(|e| self.err(e))?;
                let rows = tx
                    .query(&stmt, &[&id, &now_ms(), &kind, &event])
                    .await
                    .map_err(|e| self.task_err(id, e))?;
                tx.commit().await.map_err(|e| self.err(e))?;
                rows
            };
            rows.first()
                .map(|r| r.get(0))
                .ok_or_else(|| StoreError::TaskNotFound { id: id.to_owned() })
        })
    }

    fn events_from<'a>(&'a self, id: &'a str, from: i64) -> StoreFuture<'a, Vec<StoredEvent>> {
        Box::pin(async move {
            let rows = json_rows(
                self,
                    "SELECT seq, ts_ms, kind, event FROM ui_events WHERE task_id = $1 AND seq >= $2 ORDER BY seq",
                    &[&id, &from],
                )
                .await?;
            rows.into_iter().map(|row| row.event(id)).collect()
        })
    }

    fn last_event_of_kind<'a>(
        &'a self,
        id: &'a str,
        kind: &'a str,
    ) -> StoreFuture<'a, Option<i64>> {
        Box::pin(async move {
            let rows = self
                .rows(
                    "SELECT seq FROM ui_events WHERE task_id = $1 AND kind = $2 ORDER BY seq DESC LIMIT 1",
                    &[&id, &kind],
                )
                .await?;
            Ok(rows.first().map(|r| r.get(0)))
        })
    }

    fn delete_event<'a>(&'a self, id: &'a str, seq: i64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.exec(
                id,
                "DELETE FROM ui_events WHERE task_id = $1 AND seq = $2",
                &[&id, &seq],
            )
            .await
            .map(drop)
        })
    }

    fn max_request_index<'a>(&'a self, id: &'a str) -> StoreFuture<'a, u32> {
        Box::pin(async move {
            // Only whole numbers count, as SQLite compares them; anything else is skipped.
            let rows = self
                .rows(
                    "SELECT max((event::jsonb ->> 'request_index')::bigint) FROM ui_events
                     WHERE task_id = $1 AND kind = 'api_req_started'
                       AND jsonb_typeof(event::jsonb -> 'request_index') = 'number'
                       AND (event::jsonb ->> 'request_index') ~ '^-?[0-9]+$'",
                    &[&id],
                )
                .await?;
            let max: Option<i64> = rows.first().and_then(|r| r.get(0));
            Ok(max.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32)
        })
    }

    fn add_context_edit<'a>(
        &'a self,
        id: &'a str,
        kind: &'a str,
        detail: &'a Value,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.exec(
                id,
                INSERT_EDIT,
                &[&id, &now_ms(), &kind, &detail.to_string()],
            )
            .await
            .map(drop)
        })
    }

    fn context_edits<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<ContextEdit>> {
        Box::pin(async move {
            let rows = json_rows(
                self,
                    "SELECT seq, ts_ms, kind, detail FROM context_edits WHERE task_id = $1 ORDER BY seq",
                    &[&id],
                )
                .await?;
            rows.into_iter().map(|row| row.edit(id)).collect()
        })
    }

    fn import_task<'a>(
        &'a self,
        task: &'a TaskRecord,
        messages: &'a [Message],
        events: &'a [ImportedEvent],
        edits: &'a [ImportedEdit],
    ) -> StoreFuture<'a, TaskRecord> {
        Box::pin(async move {
            let id = task.id.as_str();
            {
                let mut client = self.client().await?;
                let tx = client.transaction().await.map_err(|e| self.err(e))?;
                let (start, end) = range_columns(task.conversation_history_deleted_range);
                tx.execute(
                    "INSERT INTO tasks (id, created_ms, updated_ms, cwd, mode, provider, model, first_prompt,
                     tokens_in, tokens_out, cache_writes, cache_reads, cost_usd, last_request_tokens,
                     deleted_range_start, deleted_range_end, unpriced_requests)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
                    &[
                        &id,
                        &task.created_ms,
                        &task.updated_ms,
                        &task.cwd,
                        &task.mode,
                        &task.provider,
                        &task.model,
                        &task.first_prompt,
                        &to_i64(task.usage.tokens_in),
                        &to_i64(task.usage.tokens_out),
                        &to_i64(task.usage.cache_writes),
                        &to_i64(task.usage.cache_reads),
                        &task.usage.cost_usd,
                        &to_i64(task.last_request_tokens),
                        &start,
                        &end,
                        &to_i64(task.usage.unpriced_requests),
                    ],
                )
                .await
                .map_err(|e| self.task_err(id, e))?;
                let insert_message = tx
                    .prepare(
                        "INSERT INTO messages (task_id, idx, ts_ms, message) VALUES ($1, $2, $3, $4)",
                    )
                    .await
                    .map_err(|e| self.err(e))?;
                for (i, m) in messages.iter().enumerate() {
                    let json = to_json(id, m)?;
                    tx.execute(
                        &insert_message,
                        &[&id, &(i as i64), &task.created_ms, &json],
                    )
                    .await
                    .map_err(|e| self.err(e))?;
                }
                let insert_event = tx
                    .prepare("INSERT INTO ui_events (task_id, seq, ts_ms, kind, event) VALUES ($1, $2, $3, $4, $5)")
                    .await
                    .map_err(|e| self.err(e))?;
                for (i, (ts, kind, event)) in events.iter().enumerate() {
                    tx.execute(
                        &insert_event,
                        &[&id, &(i as i64 + 1), ts, kind, &event.to_string()],
                    )
                    .await
                    .map_err(|e| self.err(e))?;
                }
                for (kind, detail) in edits {
                    tx.execute(INSERT_EDIT, &[&id, &now_ms(), kind, &detail.to_string()])
                        .await
                        .map_err(|e| self.err(e))?;
                }
                tx.commit().await.map_err(|e| self.err(e))?;
            }
            self.task(id).await
        })
    }
}

/// Runs the update `sql` of task `id`; no row changed is an unknown task.
async fn update_task(
    store: &PgStore,
    id: &str,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<(), StoreError> {
    if store.exec(id, sql, params).await? == 0 {
        return Err(StoreError::TaskNotFound { id: id.to_owned() });
    }
    Ok(())
}

/// The [`JsonRow`]s `sql` selects (UI events and context edits share this shape).
async fn json_rows(
    store: &PgStore,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<JsonRow>, StoreError> {
    let rows = store.rows(sql, params).await?;
    store.mapped(&rows, JsonRow::read)
}
