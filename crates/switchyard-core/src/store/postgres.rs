//! [`PgStore`]: the task store on a PostgreSQL server (SPEC R13.1), for teams whose agents run
//! on many machines against one store (`store = "postgres://…"` or `SWITCHYARD_STORE`).
//!
//! # Client
//!
//! [`tokio_postgres`] (the rust-postgres project's async client: no blocking thread per round
//! trip, prepared statements, pipelining) behind a small [`deadpool_postgres`] pool, so the
//! tasks of one process use a few connections and a connection the server closed (a restart,
//! an idle timeout) is dropped and replaced on the next call instead of failing every later
//! one. Statements are prepared once per connection (`prepare_cached`).
//!
//! # Layout (schema version [`PG_SCHEMA_VERSION`], in table `switchyard_schema`)
//!
//! The same four tables as [`super::SqliteStore`]'s (`tasks`, `messages`, `ui_events`,
//! `context_edits`), JSON kept as text. Migrations run on first use, in one transaction under
//! an advisory lock, so many processes starting at once migrate a new database once.
//!
//! # Durability (R10.2)
//!
//! Every method is one statement or one transaction, committed with the server's
//! `synchronous_commit` (on by default: the WAL is flushed before the commit returns).
//! [`TaskStore::append_event`] with `durable_now = false` commits with
//! `SET LOCAL synchronous_commit = off`: the row is on the server the moment the call returns
//! (so killing the client loses nothing), and reaches the server's disk within the WAL
//! writer's delay or with the next durable commit.
//!
//! # Connections lost
//!
//! When the server cannot be reached, a call retries the connection for
//! [`RECONNECT_MS`] and then fails with [`StoreError::Unreachable`]; a statement cut off by
//! the server going away fails with [`StoreError::Backend`], and nothing half-done is kept
//! (the server rolls back an unfinished transaction).

mod limits;
mod schema;
#[cfg(test)]
mod tests;

use std::str::FromStr;
use std::time::Duration;

use deadpool_postgres::{Client, Manager, ManagerConfig, Pool, PoolError, RecyclingMethod};
use serde_json::Value;
use switchyard_api::Message;
use tokio_postgres::error::SqlState;
use tokio_postgres::{NoTls, Row};

use super::{
    ContextEdit, ImportedEdit, ImportedEvent, NewTask, StoreError, StoreFuture, StoredEvent,
    TaskRecord, TaskStore, TaskUsage, now_ms,
};
use crate::context::DeletedRange;

pub use schema::PG_SCHEMA_VERSION;

/// How long a call keeps trying to reach a server that refuses connections (a restart), in
/// milliseconds, before [`StoreError::Unreachable`].
pub const RECONNECT_MS: u64 = 10_000;

/// Connections one [`PgStore`] keeps open at most.
const POOL_SIZE: usize = 4;

/// The task store on a PostgreSQL server. Cloning gives another handle on the same pool.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    /// The server and database without the password, for messages.
    location: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.location)
            .finish()
    }
}

/// Whether `s` names a PostgreSQL store (`postgres://…` or `postgresql://…`).
pub fn is_postgres_url(s: &str) -> bool {
    let lower = s.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// `url` without its password (and without any query string, which may hold one), for
/// messages: `postgres://user@host:port/dbname`.
pub fn redact_url(url: &str) -> String {
    let Ok(config) = tokio_postgres::Config::from_str(url) else {
        // Not parseable: keep the scheme only, anything after it may hold a secret.
        return url.split("://").next().unwrap_or("postgres").to_owned() + "://…";
    };
    location_of(&config)
}

fn location_of(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(h) => h.clone(),
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{host}:{port}/{db}")
}

impl PgStore {
    /// Connects to the server `url` (`postgres://user:password@host:port/dbname`, libpq's URL
    /// form; TLS is not supported: use a local server or a tunnel), checks the schema and
    /// migrates it forward.
    ///
    /// Errors: a URL that does not parse ([`StoreError::Backend`]), a server that cannot be
    /// reached within [`RECONNECT_MS`] ([`StoreError::Unreachable`]), a schema newer than
    /// [`PG_SCHEMA_VERSION`] ([`StoreError::NewerSchema`], nothing written).
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let (store, _) = Self::connect_and_migrate(url).await?;
        Ok(store)
    }

    /// [`PgStore::connect`], also returning the schema version found before migrating (0 for
    /// a new database), for `switchyard store migrate`.
    pub async fn connect_and_migrate(url: &str) -> Result<(Self, i64), StoreError> {
        let mut config =
            tokio_postgres::Config::from_str(url).map_err(|e| StoreError::Backend {
                location: redact_url(url),
                source: describe(&e).into(),
            })?;
        config.connect_timeout(Duration::from_secs(10));
        if config.get_application_name().is_none() {
            config.application_name("switchyard");
        }
        let location = location_of(&config);
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .build()
            .map_err(|e| StoreError::Backend {
                location: location.clone(),
                source: describe(&e).into(),
            })?;
        let store = Self { pool, location };
        let mut client = store.client().await?;
        let found = store.migrate(&mut client).await?;
        Ok((store, found))
    }

    /// The server and database, without the password.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// A pooled connection; a server that refuses connections is retried for
    /// [`RECONNECT_MS`].
    async fn client(&self) -> Result<Client, StoreError> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(RECONNECT_MS);
        loop {
            match self.pool.get().await {
                Ok(client) => return Ok(client),
                Err(PoolError::Backend(e)) if tokio::time::Instant::now() < deadline => {
                    tracing::debug!(location = %self.location, error = %e, "task store unreachable, retrying");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(PoolError::Backend(e)) => {
                    return Err(StoreError::Unreachable {
                        location: self.location.clone(),
                        source: describe(&e).into(),
                    });
                }
                Err(e) => {
                    return Err(StoreError::Backend {
                        location: self.location.clone(),
                        source: describe(&e).into(),
                    });
                }
            }
        }
    }

    fn err(&self, e: tokio_postgres::Error) -> StoreError {
        StoreError::Backend {
            location: self.location.clone(),
            source: describe(&e).into(),
        }
    }

    /// `e` as the error of task `id`: a unique violation is [`StoreError::Conflict`], a
    /// foreign key violation [`StoreError::TaskNotFound`].
    fn task_err(&self, id: &str, e: tokio_postgres::Error) -> StoreError {
        match e.code() {
            Some(c) if *c == SqlState::UNIQUE_VIOLATION => StoreError::Conflict { id: id.into() },
            Some(c) if *c == SqlState::FOREIGN_KEY_VIOLATION => {
                StoreError::TaskNotFound { id: id.into() }
            }
            _ => self.err(e),
        }
    }

    /// Runs `sql` with `params` on a pooled connection (prepared once per connection) and
    /// returns its rows.
    async fn rows(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(|e| self.err(e))?;
        client.query(&stmt, params).await.map_err(|e| self.err(e))
    }

    /// Runs the statement `sql` and returns how many rows it changed; errors as
    /// [`PgStore::task_err`] of `id`.
    async fn exec(
        &self,
        id: &str,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(|e| self.err(e))?;
        client
            .execute(&stmt, params)
            .await
            .map_err(|e| self.task_err(id, e))
    }
}

const TASK_COLUMNS: &str = "id, created_ms, updated_ms, cwd, mode, provider, model, first_prompt,
    tokens_in, tokens_out, cache_writes, cache_reads, cost_usd, last_request_tokens,
    deleted_range_start, deleted_range_end,
    (SELECT count(*) FROM messages m WHERE m.task_id = tasks.id), unpriced_requests";

fn task_from_row(r: &Row) -> TaskRecord {
    let start: Option<i64> = r.get(14);
    let end: Option<i64> = r.get(15);
    let n = |i: usize| r.get::<_, i64>(i).max(0) as u64;
    TaskRecord {
        id: r.get(0),
        created_ms: r.get(1),
        updated_ms: r.get(2),
        cwd: r.get(3),
        mode: r.get(4),
        provider: r.get(5),
        model: r.get(6),
        first_prompt: r.get(7),
        usage: TaskUsage {
            tokens_in: n(8),
            tokens_out: n(9),
            cache_writes: n(10),
            cache_reads: n(11),
            cost_usd: r.get(12),
            unpriced_requests: n(17),
        },
        last_request_tokens: n(13),
        conversation_history_deleted_range: match (start, end) {
            (Some(s), Some(e)) => Some((s.max(0) as usize, e.max(0) as usize)),
            _ => None,
        },
        message_count: n(16) as usize,
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

const INSERT_EDIT: &str = "INSERT INTO context_edits (task_id, seq, ts_ms, kind, detail)
     VALUES ($1, (SELECT coalesce(max(seq), 0) + 1 FROM context_edits WHERE task_id = $1), $2, $3, $4)";

impl PgStore {
    async fn do_create_task(&self, new: &NewTask) -> Result<TaskRecord, StoreError> {
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

    async fn do_task(&self, id: &str) -> Result<TaskRecord, StoreError> {
        let rows = self
            .rows(
                &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1"),
                &[&id],
            )
            .await?;
        rows.first()
            .map(task_from_row)
            .ok_or_else(|| StoreError::TaskNotFound { id: id.to_owned() })
    }

    async fn do_list_tasks(&self) -> Result<Vec<TaskRecord>, StoreError> {
        let rows = self
            .rows(
                &format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_ms, id"),
                &[],
            )
            .await?;
        Ok(rows.iter().map(task_from_row).collect())
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
    async fn do_add_usage(&self, id: &str, usage: &TaskUsage) -> Result<(), StoreError> {
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

    async fn do_set_deleted_range(
        &self,
        id: &str,
        range: Option<DeletedRange>,
        detail: &Value,
    ) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.err(e))?;
        let (start, end) = (range.map(|r| r.0 as i64), range.map(|r| r.1 as i64));
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

    async fn do_append_message(
        &self,
        id: &str,
        index: usize,
        message: &Message,
    ) -> Result<(), StoreError> {
        let json = json_text(id, message)?;
        self.exec(
            id,
            "INSERT INTO messages (task_id, idx, ts_ms, message) VALUES ($1, $2, $3, $4)",
            &[&id, &(index as i64), &now_ms(), &json],
        )
        .await
        .map(drop)
    }

    async fn do_replace_message(
        &self,
        id: &str,
        index: usize,
        message: &Message,
    ) -> Result<(), StoreError> {
        let json = json_text(id, message)?;
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

    async fn do_messages(&self, id: &str) -> Result<Vec<Message>, StoreError> {
        let rows = self
            .rows(
                "SELECT message FROM messages WHERE task_id = $1 ORDER BY idx",
                &[&id],
            )
            .await?;
        rows.iter()
            .map(|r| {
                serde_json::from_str(r.get::<_, &str>(0)).map_err(|source| StoreError::Json {
                    id: id.to_owned(),
                    source,
                })
            })
            .collect()
    }

    async fn do_append_event(
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

    /// Rows of `(seq, ts_ms, kind, JSON text)` from `sql`, the JSON parsed.
    async fn json_rows(
        &self,
        id: &str,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<(i64, i64, String, Value)>, StoreError> {
        let rows = self.rows(sql, params).await?;
        rows.iter()
            .map(|r| {
                let value = serde_json::from_str(r.get::<_, &str>(3)).map_err(|source| {
                    StoreError::Json {
                        id: id.to_owned(),
                        source,
                    }
                })?;
                Ok((r.get(0), r.get(1), r.get(2), value))
            })
            .collect()
    }

    async fn do_events_from(&self, id: &str, from: i64) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = self
            .json_rows(
                id,
                "SELECT seq, ts_ms, kind, event FROM ui_events WHERE task_id = $1 AND seq >= $2 ORDER BY seq",
                &[&id, &from],
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|(seq, ts_ms, kind, event)| StoredEvent {
                seq,
                ts_ms,
                kind,
                event,
            })
            .collect())
    }

    async fn do_last_event_of_kind(&self, id: &str, kind: &str) -> Result<Option<i64>, StoreError> {
        let rows = self
            .rows(
                "SELECT seq FROM ui_events WHERE task_id = $1 AND kind = $2 ORDER BY seq DESC LIMIT 1",
                &[&id, &kind],
            )
            .await?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    async fn do_delete_event(&self, id: &str, seq: i64) -> Result<(), StoreError> {
        self.exec(
            id,
            "DELETE FROM ui_events WHERE task_id = $1 AND seq = $2",
            &[&id, &seq],
        )
        .await
        .map(drop)
    }

    async fn do_max_request_index(&self, id: &str) -> Result<u32, StoreError> {
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

    async fn do_add_context_edit(
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

    async fn do_context_edits(&self, id: &str) -> Result<Vec<ContextEdit>, StoreError> {
        let rows = self
            .json_rows(
                id,
                "SELECT seq, ts_ms, kind, detail FROM context_edits WHERE task_id = $1 ORDER BY seq",
                &[&id],
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|(seq, ts_ms, kind, detail)| ContextEdit {
                seq,
                ts_ms,
                kind,
                detail,
            })
            .collect())
    }

    async fn do_import_task(
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
            let range = task.conversation_history_deleted_range;
            let (start, end) = (range.map(|r| r.0 as i64), range.map(|r| r.1 as i64));
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
                let json = json_text(id, m)?;
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

/// `e` and its causes in one line: tokio-postgres's own `Display` says only "db error" or
/// "error connecting to server", the server's message and the OS error are its sources.
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(err) = next {
        let text = err.to_string().replace('\n', "; ");
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = err.source();
    }
    parts.join(": ")
}

fn json_text(id: &str, message: &Message) -> Result<String, StoreError> {
    serde_json::to_string(message).map_err(|source| StoreError::Json {
        id: id.to_owned(),
        source,
    })
}

impl TaskStore for PgStore {
    fn create_task<'a>(&'a self, new: &'a NewTask) -> StoreFuture<'a, TaskRecord> {
        Box::pin(self.do_create_task(new))
    }

    fn task<'a>(&'a self, id: &'a str) -> StoreFuture<'a, TaskRecord> {
        Box::pin(self.do_task(id))
    }

    fn list_tasks(&self) -> StoreFuture<'_, Vec<TaskRecord>> {
        Box::pin(self.do_list_tasks())
    }

    fn add_usage<'a>(&'a self, id: &'a str, usage: &'a TaskUsage) -> StoreFuture<'a, ()> {
        Box::pin(self.do_add_usage(id, usage))
    }

    fn set_task_model<'a>(
        &'a self,
        id: &'a str,
        mode: &'a str,
        provider: &'a str,
        model: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.update_task(
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
        Box::pin(self.do_set_deleted_range(id, range, detail))
    }

    fn append_message<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        message: &'a Message,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.do_append_message(id, index, message))
    }

    fn replace_message<'a>(
        &'a self,
        id: &'a str,
        index: usize,
        message: &'a Message,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.do_replace_message(id, index, message))
    }

    fn messages<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<Message>> {
        Box::pin(self.do_messages(id))
    }

    fn append_event<'a>(
        &'a self,
        id: &'a str,
        kind: &'a str,
        event: &'a Value,
        durable_now: bool,
    ) -> StoreFuture<'a, i64> {
        Box::pin(self.do_append_event(id, kind, event, durable_now))
    }

    fn events_from<'a>(&'a self, id: &'a str, from: i64) -> StoreFuture<'a, Vec<StoredEvent>> {
        Box::pin(self.do_events_from(id, from))
    }

    fn last_event_of_kind<'a>(
        &'a self,
        id: &'a str,
        kind: &'a str,
    ) -> StoreFuture<'a, Option<i64>> {
        Box::pin(self.do_last_event_of_kind(id, kind))
    }

    fn delete_event<'a>(&'a self, id: &'a str, seq: i64) -> StoreFuture<'a, ()> {
        Box::pin(self.do_delete_event(id, seq))
    }

    fn max_request_index<'a>(&'a self, id: &'a str) -> StoreFuture<'a, u32> {
        Box::pin(self.do_max_request_index(id))
    }

    fn add_context_edit<'a>(
        &'a self,
        id: &'a str,
        kind: &'a str,
        detail: &'a Value,
    ) -> StoreFuture<'a, ()> {
        Box::pin(self.do_add_context_edit(id, kind, detail))
    }

    fn context_edits<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<ContextEdit>> {
        Box::pin(self.do_context_edits(id))
    }

    fn import_task<'a>(
        &'a self,
        task: &'a TaskRecord,
        messages: &'a [Message],
        events: &'a [ImportedEvent],
        edits: &'a [ImportedEdit],
    ) -> StoreFuture<'a, TaskRecord> {
        Box::pin(self.do_import_task(task, messages, events, edits))
    }
}
