//! Conversation rows on SQLite: messages, UI events and context edits, and whole tasks.
//! Spec: R10.1, R10.2, R10.3.

use rusqlite::{OptionalExtension, params};
use switchyard_api::Message;

use super::Db;
use super::error::is_constraint;
use super::tasks::insert_context_edit;
use crate::store::rows::{JsonRow, from_json, range_columns, to_i64, to_json};
use crate::store::{
    ContextEdit, ImportedEdit, ImportedEvent, StoreError, StoredEvent, TaskRecord, now_ms,
};

/// Appends the message `json` as message `index` of task `id` with one insert.
pub(super) fn append_message(
    db: &Db,
    id: &str,
    index: usize,
    json: &str,
) -> Result<(), StoreError> {
    let conn = db.conn();
    match conn.execute(
        "INSERT INTO messages (task_id, idx, ts_ms, message) VALUES (?1, ?2, ?3, ?4)",
        params![id, index as i64, now_ms(), json],
    ) {
        Ok(_) => Ok(()),
        Err(e) if is_constraint(&e) => {
            let known: bool = conn
                .query_row("SELECT 1 FROM tasks WHERE id = ?1", [id], |_| Ok(true))
                .optional()
                .map_err(|e| db.err(e))?
                .unwrap_or(false);
            Err(if known {
                StoreError::Conflict { id: id.to_owned() }
            } else {
                StoreError::TaskNotFound { id: id.to_owned() }
            })
        }
        Err(e) => Err(db.err(e)),
    }
}

/// Replaces the stored message `index` with `json`.
pub(super) fn replace_message(
    db: &Db,
    id: &str,
    index: usize,
    json: &str,
) -> Result<(), StoreError> {
    let n = db
        .conn()
        .execute(
            "UPDATE messages SET message = ?3, ts_ms = ?4 WHERE task_id = ?1 AND idx = ?2",
            params![id, index as i64, json, now_ms()],
        )
        .map_err(|e| db.err(e))?;
    if n == 0 {
        return Err(StoreError::Conflict { id: id.to_owned() });
    }
    Ok(())
}

/// The task's API conversation history, in order.
pub(super) fn messages(db: &Db, id: &str) -> Result<Vec<Message>, StoreError> {
    let conn = db.conn();
    let mut stmt = conn
        .prepare("SELECT message FROM messages WHERE task_id = ?1 ORDER BY idx")
        .map_err(|e| db.err(e))?;
    let rows = stmt
        .query_map([id], |r| r.get::<_, String>(0))
        .map_err(|e| db.err(e))?;
    rows.map(|row| from_json(id, &row.map_err(|e| db.err(e))?))
        .collect()
}

/// Appends a UI event and returns its `seq`, with `synchronous = NORMAL` unless `durable_now`.
pub(super) fn append_event(
    db: &Db,
    id: &str,
    kind: &str,
    event: &str,
    durable_now: bool,
) -> Result<i64, StoreError> {
    let conn = db.conn();
    if !durable_now {
        conn.execute_batch("PRAGMA synchronous = NORMAL")
            .map_err(|e| db.err(e))?;
    }
    let result = conn.query_row(
        "INSERT INTO ui_events (task_id, seq, ts_ms, kind, event)
         VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM ui_events WHERE task_id = ?1), ?2, ?3, ?4)
         RETURNING seq",
        params![id, now_ms(), kind, event],
        |r| r.get::<_, i64>(0),
    );
    if !durable_now {
        conn.execute_batch("PRAGMA synchronous = FULL")
            .map_err(|e| db.err(e))?;
    }
    match result {
        Ok(seq) => Ok(seq),
        Err(e) if is_constraint(&e) => Err(StoreError::TaskNotFound { id: id.to_owned() }),
        Err(e) => Err(db.err(e)),
    }
}

/// The task's UI events with `seq >= from`, in order.
pub(super) fn events_from(db: &Db, id: &str, from: i64) -> Result<Vec<StoredEvent>, StoreError> {
    let rows = json_rows(
        db,
        "SELECT seq, ts_ms, kind, event FROM ui_events WHERE task_id = ?1 AND seq >= ?2 ORDER BY seq",
        params![id, from],
    )?;
    rows.into_iter().map(|row| row.event(id)).collect()
}

/// The [`JsonRow`]s `sql` selects (UI events and context edits share this shape).
fn json_rows(
    db: &Db,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<JsonRow>, StoreError> {
    let conn = db.conn();
    let mut stmt = conn.prepare(sql).map_err(|e| db.err(e))?;
    let rows = stmt
        .query_map(params, |r| JsonRow::read(r))
        .map_err(|e| db.err(e))?;
    rows.collect::<Result<_, _>>().map_err(|e| db.err(e))
}

/// The `seq` of the task's last event of kind `kind`.
pub(super) fn last_event_of_kind(db: &Db, id: &str, kind: &str) -> Result<Option<i64>, StoreError> {
    let conn = db.conn();
    conn.query_row(
        "SELECT seq FROM ui_events WHERE task_id = ?1 AND kind = ?2 ORDER BY seq DESC LIMIT 1",
        params![id, kind],
        |r| r.get(0),
    )
    .optional()
    .map_err(|e| db.err(e))
}

/// Deletes one UI event (SPEC R10.3 drops a trailing `api_req_started`).
pub(super) fn delete_event(db: &Db, id: &str, seq: i64) -> Result<(), StoreError> {
    let conn = db.conn();
    conn.execute(
        "DELETE FROM ui_events WHERE task_id = ?1 AND seq = ?2",
        params![id, seq],
    )
    .map_err(|e| db.err(e))?;
    Ok(())
}

/// Records a context edit of `kind` (one insert, one transaction).
pub(super) fn add_context_edit(
    db: &Db,
    id: &str,
    kind: &str,
    detail: &str,
) -> Result<(), StoreError> {
    let mut conn = db.conn();
    let tx = conn.transaction().map_err(|e| db.err(e))?;
    insert_context_edit(&tx, id, kind, detail).map_err(|e| {
        if is_constraint(&e) {
            StoreError::TaskNotFound { id: id.to_owned() }
        } else {
            db.err(e)
        }
    })?;
    tx.commit().map_err(|e| db.err(e))
}

/// The task's context edits in order.
pub(super) fn context_edits(db: &Db, id: &str) -> Result<Vec<ContextEdit>, StoreError> {
    let rows = json_rows(
        db,
        "SELECT seq, ts_ms, kind, detail FROM context_edits WHERE task_id = ?1 ORDER BY seq",
        [id],
    )?;
    rows.into_iter().map(|row| row.edit(id)).collect()
}

/// Stores a whole task in one transaction and returns it.
pub(super) fn import_task(
    db: &Db,
    task: &TaskRecord,
    messages: &[Message],
    events: &[ImportedEvent],
    edits: &[ImportedEdit],
) -> Result<TaskRecord, StoreError> {
    let (start, end) = range_columns(task.conversation_history_deleted_range);
    {
        let mut conn = db.conn();
        let tx = conn.transaction().map_err(|e| db.err(e))?;
        tx.execute(
            "INSERT INTO tasks (id, created_ms, updated_ms, cwd, mode, provider, model, first_prompt,
             tokens_in, tokens_out, cache_writes, cache_reads, cost_usd, last_request_tokens,
             deleted_range_start, deleted_range_end, unpriced_requests)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            params![
                task.id,
                task.created_ms,
                task.updated_ms,
                task.cwd,
                task.mode,
                task.provider,
                task.model,
                task.first_prompt,
                to_i64(task.usage.tokens_in),
                to_i64(task.usage.tokens_out),
                to_i64(task.usage.cache_writes),
                to_i64(task.usage.cache_reads),
                task.usage.cost_usd,
                to_i64(task.last_request_tokens),
                start,
                end,
                to_i64(task.usage.unpriced_requests)
            ],
        )
        .map_err(|e| {
            if is_constraint(&e) {
                StoreError::Conflict { id: task.id.clone() }
            } else {
                db.err(e)
            }
        })?;
        for (i, m) in messages.iter().enumerate() {
            let json = to_json(&task.id, m)?;
            tx.execute(
                "INSERT INTO messages (task_id, idx, ts_ms, message) VALUES (?1, ?2, ?3, ?4)",
                params![task.id, i as i64, task.created_ms, json],
            )
            .map_err(|e| db.err(e))?;
        }
        for (i, (ts, kind, event)) in events.iter().enumerate() {
            tx.execute(
                "INSERT INTO ui_events (task_id, seq, ts_ms, kind, event) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![task.id, i as i64 + 1, ts, kind, event.to_string()],
            )
            .map_err(|e| db.err(e))?;
        }
        for (kind, detail) in edits {
            insert_context_edit(&tx, &task.id, kind, &detail.to_string()).map_err(|e| db.err(e))?;
        }
        tx.commit().map_err(|e| db.err(e))?;
    }
    super::tasks::task(db, &task.id)
}

/// The largest `request_index` of the task's `api_req_started` events, or 0.
pub(super) fn max_request_index(db: &Db, id: &str) -> Result<u32, StoreError> {
    let conn = db.conn();
    let max: Option<i64> = conn
        .query_row(
            "SELECT max(json_extract(event, '$.request_index')) FROM ui_events
             WHERE task_id = ?1 AND kind = 'api_req_started'",
            [id],
            |r| r.get(0),
        )
        .map_err(|e| db.err(e))?;
    Ok(max.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32)
}
