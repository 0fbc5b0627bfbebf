//! Task rows on SQLite: creation, listing, totals and the deleted range (SPEC R10.1, R8.4;
//! the spend row of R12.2).

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::Db;
use crate::context::DeletedRange;
use crate::store::rows::{TASK_COLUMNS, range_columns, task_from_row, to_i64};
use crate::store::{NewTask, StoreError, TaskRecord, TaskUsage, now_ms};

/// Inserts the row of a new task and returns its id: the current Unix time in milliseconds,
/// plus one until no task has it.
fn insert_task(conn: &Connection, new: &NewTask) -> rusqlite::Result<String> {
    let now = now_ms();
    let mut candidate = now;
    loop {
        let inserted = conn.execute(
            "INSERT OR IGNORE INTO tasks (id, created_ms, updated_ms, cwd, mode, provider, model, first_prompt)
             VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                candidate.to_string(),
                now,
                new.cwd,
                new.mode,
                new.provider,
                new.model,
                new.first_prompt
            ],
        )?;
        if inserted == 1 {
            return Ok(candidate.to_string());
        }
        candidate += 1;
    }
}

impl Db {
    /// Creates a task and returns it. Its id is the current Unix time in milliseconds (the
    /// reference's task id form), made unique if another task already has it.
    pub(super) fn create_task(&self, new: &NewTask) -> Result<TaskRecord, StoreError> {
        let id = insert_task(&self.conn(), new).map_err(|e| self.err(e))?;
        self.task(&id)
    }

    /// Creates a task whose message 0 is `first_json` (a message as JSON) and returns it: both
    /// rows in one transaction, so one commit (one `fsync`) where two calls would take two.
    pub(super) fn create_task_with_message(
        &self,
        new: &NewTask,
        first_json: &str,
    ) -> Result<TaskRecord, StoreError> {
        let id = {
            let mut conn = self.conn();
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| self.err(e))?;
            let id = insert_task(&tx, new).map_err(|e| self.err(e))?;
            tx.execute(
                "INSERT INTO messages (task_id, idx, ts_ms, message) VALUES (?1, 0, ?2, ?3)",
                params![id, now_ms(), first_json],
            )
            .map_err(|e| self.err(e))?;
            tx.commit().map_err(|e| self.err(e))?;
            id
        };
        self.task(&id)
    }

    /// The task `id`, or [`StoreError::TaskNotFound`].
    pub(super) fn task(&self, id: &str) -> Result<TaskRecord, StoreError> {
        let conn = self.conn();
        conn.query_row(
            &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"),
            [id],
            |r| task_from_row(r),
        )
        .optional()
        .map_err(|e| self.err(e))?
        .ok_or_else(|| StoreError::TaskNotFound { id: id.to_owned() })
    }

    /// Every task, oldest first.
    pub(super) fn list_tasks(&self) -> Result<Vec<TaskRecord>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_ms, id"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| task_from_row(r))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Adds one request's usage to the task's totals and records its total tokens as the last
    /// request's (tokens; cost in USD), and its cost with the time in `spend`, in one
    /// transaction.
    pub(super) fn add_usage(&self, id: &str, usage: &TaskUsage) -> Result<(), StoreError> {
        let now = now_ms();
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let n = tx
            .execute(
                "UPDATE tasks SET tokens_in = tokens_in + ?2, tokens_out = tokens_out + ?3,
                 cache_writes = cache_writes + ?4, cache_reads = cache_reads + ?5,
                 cost_usd = cost_usd + ?6, last_request_tokens = ?7, updated_ms = ?8,
                 unpriced_requests = unpriced_requests + ?9
                 WHERE id = ?1",
                params![
                    id,
                    to_i64(usage.tokens_in),
                    to_i64(usage.tokens_out),
                    to_i64(usage.cache_writes),
                    to_i64(usage.cache_reads),
                    usage.cost_usd,
                    to_i64(usage.total_tokens()),
                    now,
                    to_i64(usage.unpriced_requests)
                ],
            )
            .map_err(|e| self.err(e))?;
        if n == 0 {
            return Err(StoreError::TaskNotFound { id: id.to_owned() });
        }
        if usage.cost_usd != 0.0 {
            tx.execute(
                "INSERT INTO spend (ts_ms, task_id, cost_usd) VALUES (?1, ?2, ?3)",
                params![now, id, usage.cost_usd],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// Records the mode, provider and model the task now runs with (a resume with other
    /// flags), so `switchyard tasks` shows what the task last used. One statement.
    pub(super) fn set_task_model(
        &self,
        id: &str,
        mode: &str,
        provider: &str,
        model: &str,
    ) -> Result<(), StoreError> {
        self.update_task(
            id,
            "UPDATE tasks SET mode = ?2, provider = ?3, model = ?4, updated_ms = ?5 WHERE id = ?1",
            params![id, mode, provider, model, now_ms()],
        )
    }

    /// Runs the one-statement update `sql` of task `id`; no row changed:
    /// [`StoreError::TaskNotFound`].
    fn update_task(
        &self,
        id: &str,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<(), StoreError> {
        let n = self.conn().execute(sql, params).map_err(|e| self.err(e))?;
        if n == 0 {
            return Err(StoreError::TaskNotFound { id: id.to_owned() });
        }
        Ok(())
    }

    /// Sets the task's `conversation_history_deleted_range` and records the change as a
    /// `truncation` context edit, in one transaction (SPEC R6.3: called before the request).
    pub(super) fn set_deleted_range(
        &self,
        id: &str,
        range: Option<DeletedRange>,
        detail: &str,
    ) -> Result<(), StoreError> {
        let (start, end) = range_columns(range);
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let n = tx
            .execute(
                "UPDATE tasks SET deleted_range_start = ?2, deleted_range_end = ?3, updated_ms = ?4 WHERE id = ?1",
                params![id, start, end, now_ms()],
            )
            .map_err(|e| self.err(e))?;
        if n == 0 {
            return Err(StoreError::TaskNotFound { id: id.to_owned() });
        }
        super::history::insert_context_edit(&tx, id, "truncation", detail)
            .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }
}
