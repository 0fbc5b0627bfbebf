//! Conversation rows on PostgreSQL: API messages, UI events and context edits, and a whole task
//! stored at once (SPEC R10.1–R10.3).

use serde_json::Value;
use switchyard_api::Message;

use super::PgStore;
use crate::store::rows::{JsonRow, from_json, range_columns, to_i64, to_json};
use crate::store::{
    ContextEdit, ImportedEdit, ImportedEvent, StoreError, StoredEvent, TaskRecord, now_ms,
};

/// Appends a context edit, numbered after the task's last.
pub(super) const INSERT_EDIT: &str = "INSERT INTO context_edits (task_id, seq, ts_ms, kind, detail)
     VALUES ($1, (SELECT coalesce(max(seq), 0) + 1 FROM context_edits WHERE task_id = $1), $2, $3, $4)";

impl PgStore {
    pub(super) async fn do_append_message(
        &self,
        id: &str,
        index: usize,
        message: &Message,
    ) -> Result<(), StoreError> {
        let json = to_json(id, message)?;
        self.exec(
            id,
            "INSERT INTO messages (task_id, idx, ts_ms, message) VALUES ($1, $2, $3, $4)",
            &[&id, &(index as i64), &now_ms(), &json],
        )
        .await
        .map(drop)
    }

    pub(super) async fn do_replace_message(
        &self,
        id: &str,
        index: usize,
        message: &Message,
    ) -> Result<(), StoreError> {
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
    }

    pub(super) async fn do_messages(&self, id: &str) -> Result<Vec<Message>, StoreError> {
        let rows = self
            .rows(
                "SELECT message FROM messages WHERE task_id = $1 ORDER BY idx",
                &[&id],
            )
            .await?;
        rows.iter()
            .map(|r| from_json(id, r.try_get(0).map_err(|e| self.err(e))?))
            .collect()
    }

    pub(super) async fn do_append_event(
        &self,
        id: &str,
        kind: &str,
        event: &Value,
        durable_now: bool,
    ) -> Result<i64, StoreError> {
        // The task must exist (selected from `tasks`, so an unknown id inserts nothing); the
        // seq follows the task's last. Two writers racing on one task collide on the key:
        // Conflict, never a lost row.
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
    }

    /// The [`JsonRow`]s `sql` selects (UI events and context edits share this shape).
    async fn json_rows(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<JsonRow>, StoreError> {
        let rows = self.rows(sql, params).await?;
        self.mapped(&rows, JsonRow::read)
    }

    pub(super) async fn do_events_from(
        &self,
        id: &str,
        from: i64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = self
            .json_rows(
                "SELECT seq, ts_ms, kind, event FROM ui_events WHERE task_id = $1 AND seq >= $2 ORDER BY seq",
                &[&id, &from],
            )
            .await?;
        rows.into_iter().map(|row| row.event(id)).collect()
    }

    pub(super) async fn do_last_event_of_kind(
        &self,
        id: &str,
        kind: &str,
    ) -> Result<Option<i64>, StoreError> {
        let rows = self
            .rows(
                "SELECT seq FROM ui_events WHERE task_id = $1 AND kind = $2 ORDER BY seq DESC LIMIT 1",
                &[&id, &kind],
            )
            .await?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    pub(super) async fn do_delete_event(&self, id: &str, seq: i64) -> Result<(), StoreError> {
        self.exec(
            id,
            "DELETE FROM ui_events WHERE task_id = $1 AND seq = $2",
            &[&id, &seq],
        )
        .await
        .map(drop)
    }

    pub(super) async fn do_max_request_index(&self, id: &str) -> Result<u32, StoreError> {
        // Only rows whose request_index is a whole number count (as SQLite's json_extract
        // compares them); anything else is skipped rather than failing the cast.
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
    }

    pub(super) async fn do_add_context_edit(
        &self,
        id: &str,
        kind: &str,
        detail: &Value,
    ) -> Result<(), StoreError> {
        self.exec(
            id,
            INSERT_EDIT,
            &[&id, &now_ms(), &kind, &detail.to_string()],
        )
        .await
        .map(drop)
    }

    pub(super) async fn do_context_edits(&self, id: &str) -> Result<Vec<ContextEdit>, StoreError> {
        let rows = self
            .json_rows(
                "SELECT seq, ts_ms, kind, detail FROM context_edits WHERE task_id = $1 ORDER BY seq",
                &[&id],
            )
            .await?;
        rows.into_iter().map(|row| row.edit(id)).collect()
    }

    pub(super) async fn do_import_task(
        &self,
        task: &TaskRecord,
        messages: &[Message],
        events: &[ImportedEvent],
        edits: &[ImportedEdit],
    ) -> Result<TaskRecord, StoreError> {
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
        self.do_task(id).await
    }
}
