//! [`PgStore`]: the task store on a PostgreSQL server (SPEC R13.1, R13.2, R10.2), for teams whose
//! agents run on many machines against one store (`store = "postgres://…"` or
//! `SWITCHYARD_STORE`).
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
//! The same four tables as [`crate::store::SqliteStore`]'s (`tasks`, `messages`, `ui_events`,
//! `context_edits`), JSON kept as text. Migrations run on first use, in one transaction under
//! an advisory lock, so many processes starting at once migrate a new database once.
//!
//! # Durability (R10.2)
//!
//! Every method is one statement or one transaction, committed with the server's
//! `synchronous_commit` (on by default: the WAL is flushed before the commit returns).
//! [`crate::store::TaskStore::append_event`] with `durable_now = false` commits with
//! `SET LOCAL synchronous_commit = off`: the row is on the server the moment the call returns
//! (so killing the client loses nothing), and reaches the server's disk within the WAL
//! writer's delay or with the next durable commit.
//!
//! # Connections lost
//!
//! When the server cannot be reached, a call retries the connection for
//! [`RECONNECT_MS`] and then fails with [`crate::store::StoreError::Unreachable`]; a statement cut off by
//! the server going away fails with [`crate::store::StoreError::Backend`], and nothing half-done is kept
//! (the server rolls back an unfinished transaction).

//!
//! # Where each piece lives
//!
//! `pool.rs` (the connection pool and the one-statement helpers), `url.rs` (store URLs shown
//! without secrets), `schema.rs`, `task_store.rs` (tasks and their conversation rows),
//! `limits.rs` (the R12 state), `requests.rs` (the gateway's request log, R14.4).

mod keys;
mod limits;
mod pool;
mod requests;
mod responses;
mod schema;
mod task_store;
#[cfg(test)]
mod tests;
mod url;

pub use pool::{PgStore, RECONNECT_MS};
pub use schema::PG_SCHEMA_VERSION;
pub use url::{is_postgres_url, redact_url};
