//! Task rows on SQLite: creation, listing, totals and the deleted range.
//! Spec: R10.1, R8.4.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::Db;
use crate::context::DeletedRange;
use crate::store::gateway::sqlite::totals::add_totals;
use crate::store::gateway::totals::Deltas;
use crate::store::rows::{TASK_COLUMNS, range_columns, task_from_row, to_i64};
use crate::store::{NewTask, StoreError, TaskRecord, TaskUsage, now_ms};

/// Inserts a new task's row and returns its id: now in Unix ms, plus one until it is free.
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

/// Creates a task and returns it.
pub(super) fn create_task(db: &Db, new: &NewTask) -> Result<TaskRecord, StoreError> {
    let id = insert_task(&db.conn(), new).map_err(|e| db.err(e))?;
    task(db, &id)
}

/// Creates a task whose message 0 is `first_json` in one transaction and returns it.
pub(super) fn create_task_with_message(
    db: &Db,
    new: &NewTask,
    first_json: &str,
) -> Result<TaskRecord, StoreError> {
    let id = {
        let mut conn = db.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| db.err(e))?;
        let id = insert_task(&tx, new).map_err(|e| db.err(e))?;
        tx.execute(
            "INSERT INTO messages (task_id, idx, ts_ms, message) VALUES (?1, 0, ?2, ?3)",
            params![id, now_ms(), first_json],
        )
        .map_err(|e| db.err(e))?;
        tx.commit().map_err(|e| db.err(e))?;
        id
    };
    task(db, &id)
}

/// The task `id`, or [`StoreError::TaskNotFound`].
pub(super) fn task(db: &Db, id: &str) -> Result<TaskRecord, StoreError> {
    let conn = db.conn();
    conn.query_row(
        &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"),
        [id],
        |r| task_from_row(r),
    )
    .optional()
    .map_err(|e| db.err(e))?
    .ok_or_else(|| StoreError::TaskNotFound { id: id.to_owned() })
}

/// Every task, oldest first.
pub(super) fn list_tasks(db: &Db) -> Result<Vec<TaskRecord>, StoreError> {
    let conn = db.conn();
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_ms, id"
        ))
        .map_err(|e| db.err(e))?;
    let rows = stmt
        .query_map([], |r| task_from_row(r))
        .map_err(|e| db.err(e))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(|e| db.err(e))
}

/// Adds one request's usage to the task's totals, its spend and the gateway's day total.
pub(super) fn add_usage(db: &Db, id: &str, usage: &TaskUsage) -> Result<(), StoreError> {
    let now = now_ms();
    let mut conn = db.conn();
    let tx = conn.transaction().map_err(|e| db.err(e))?;
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
        .map_err(|e| db.err(e))?;
    if n == 0 {
        return Err(StoreError::TaskNotFound { id: id.to_owned() });
    }
    if usage.cost_usd != 0.0 {
        tx.execute(
            "INSERT INTO spend (ts_ms, task_id, cost_usd) VALUES (?1, ?2, ?3)",
            params![now, id, usage.cost_usd],
        )
        .map_err(|e| db.err(e))?;
        let mut deltas = Deltas::default();
        deltas.spend(now, usage.cost_usd);
        add_totals(&tx, &deltas).map_err(|e| db.err(e))?;
    }
    tx.commit().map_err(|e| db.err(e))
}

/// Records the mode, provider and model the task now runs with.
pub(super) fn set_task_model(
    db: &Db,
    id: &str,
    mode: &str,
    provider: &str,
    model: &str,
) -> Result<(), StoreError> {
    update_task(
        db,
        id,
        "UPDATE tasks SET mode = ?2, provider = ?3, model = ?4, updated_ms = ?5 WHERE id = ?1",
        params![id, mode, provider, model, now_ms()],
    )
}

/// Runs the update `sql` of task `id`; no row changed is an unknown task.
fn update_task(
    db: &Db,
    id: &str,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<(), StoreError> {
    let n = db.conn().execute(sql, params).map_err(|e| db.err(e))?;
    if n == 0 {
        return Err(StoreError::TaskNotFound { id: id.to_owned() });
    }
    Ok(())
}

/// Sets the task's deleted range and records a `truncation` edit, in one transaction.
pub(super) fn set_deleted_range(
    db: &Db,
    id: &str,
    range: Option<DeletedRange>,
    detail: &str,
) -> Result<(), StoreError> {
    let (start, end) = range_columns(range);
    let mut conn = db.conn();
    let tx = conn.transaction().map_err(|e| db.err(e))?;
    let n = tx
        .execute(
            "UPDATE tasks SET deleted_range_start = ?2, deleted_range_end = ?3, updated_ms = ?4 WHERE id = ?1",
            params![id, start, end, now_ms()],
        )
        .map_err(|e| db.err(e))?;
    if n == 0 {
        return Err(StoreError::TaskNotFound { id: id.to_owned() });
    }
    insert_context_edit(&tx, id, "truncation", detail).map_err(|e| db.err(e))?;
    tx.commit().map_err(|e| db.err(e))
}

/// Appends a context edit of `kind`, numbered after the task's last.
pub(super) fn insert_context_edit(
    tx: &Transaction<'_>,
    id: &str,
    kind: &str,
    detail: &str,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO context_edits (task_id, seq, ts_ms, kind, detail)
         VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM context_edits WHERE task_id = ?1), ?2, ?3, ?4)",
        params![id, now_ms(), kind, detail],
    )?;
    Ok(())
}
