//! The durable task store (SPEC R10, R13.1): the [`TaskStore`] trait, [`SqliteStore`], its
//! default implementation on one SQLite file, and `PgStore` (Cargo feature `postgres`) on a
//! PostgreSQL server shared by a team's machines.
//!
//! The reference rewrites whole JSON files (`api_conversation_history.json`,
//! `ui_messages.json`) on every change, so a long task costs more per message the longer it
//! gets, and a crash in the middle of a write can lose the file. A store instead makes each
//! change one small transaction that touches only its own rows: appending a message inserts
//! one row, a usage report updates one task row, a streamed text chunk inserts one event row.
//! Nothing is ever rewritten whole.
//!
//! # What a store holds (SPEC R10.1)
//!
//! - tasks: id, creation time, cwd, mode, provider, model, first prompt, totals (tokens in/out,
//!   cache writes/reads, cost in USD), the previous request's total tokens (for R8.2 after a
//!   resume) and `conversation_history_deleted_range` (R8.4) — a [`TaskRecord`];
//! - the API conversation history, one row per message in the Anthropic shape
//!   (`{"role", "content": [blocks]}`);
//! - the UI events, the task's [`crate::task::TaskEvent`]s in order (the reference's
//!   `ui_messages.json`) — [`StoredEvent`]s;
//! - the context edits: what context management did (truncation ranges, file-read dedupe) —
//!   [`ContextEdit`]s.
//!
//! # Why the trait is async and object-safe
//!
//! A store is shared as `Arc<dyn TaskStore>`: a [`crate::Task`] holds one, several tasks in
//! one process share one, and the backend is chosen at run time from the configuration (SQLite
//! by default, PostgreSQL for teams, R13.1), so the trait must be object-safe. Its methods
//! return boxed futures ([`StoreFuture`]) rather than blocking, because the next backend talks
//! to a server over the network with an async client: a blocking trait would tie a runtime
//! thread to every round trip. [`SqliteStore`] runs each statement on tokio's blocking pool, so
//! a commit's `fsync` never stalls the tasks sharing a runtime thread.
//!
//! # Contract every implementation keeps (the suite in `store/suite/` checks it)
//!
//! - Each method is one transaction: done entirely or not at all. A method that returns `Ok`
//!   has made its change durable (survives a crash of the process and of the machine), except
//!   [`TaskStore::append_event`] with `durable_now = false`, which survives the process being
//!   killed and reaches the disk with the next durable commit (used for streamed text chunks,
//!   so a SIGKILL loses at most the chunk being received, R10.2).
//! - Several processes may share one store: writers wait for each other instead of failing, and
//!   two processes appending to the same task at the same index get
//!   [`StoreError::Conflict`], never a lost row.
//! - Data it must not touch (damaged, read-only, written by a newer Switchyard) is refused with
//!   a [`StoreError`] before anything is written.
//!
//! # Limits state
//!
//! The failover cooldowns, spend and rate-limit state of SPEC R12 live in the same store so
//! every process on it shares them (R13.2). They are their own trait,
//! [`crate::limits::LimitsStore`], a supertrait of this one: every backend implements both on
//! the same connection, with the same rules (async, one atomic transaction per update,
//! versioned schema), so a task keeps one `Arc<dyn TaskStore>` and this trait stays about
//! tasks. [`TaskStore::add_usage`] also records the request's cost with its time, which
//! [`crate::limits::LimitsStore::spend_between`] sums for the daily cap.
//!
//! # Where each piece lives
//!
//! - `error.rs`: [`StoreError`] and [`StoreFuture`];
//! - `records.rs`: what is stored ([`TaskRecord`], [`TaskUsage`], [`StoredEvent`],
//!   [`ContextEdit`]);
//! - `task_store.rs`: the [`TaskStore`] trait;
//! - `requests.rs`: the gateway's request log, [`RequestRecord`] and the [`RequestLog`] trait
//!   (a supertrait of [`TaskStore`], SPEC R14.4), whose costs count toward the daily cap;
//! - `keys.rs`: client keys, teams and budget holds ([`ClientKey`], [`Team`], the
//!   [`KeyStore`] trait, a supertrait of [`TaskStore`], SPEC R14.6, R14.7); `key_rows.rs`
//!   their rows on both backends;
//! - `new_key.rs`: [`create_client_key`] and [`create_team`], the one rule making a key or a
//!   team (`keys create`, `teams create` and the dashboard, SPEC R14.6, R14.11);
//! - `responses.rs`: the gateway's stored Responses, [`StoredResponse`] and the
//!   [`ResponseStore`] trait (a supertrait of [`TaskStore`], SPEC R14.1);
//! - `rows.rs`: how both backends map their rows to records (each keeps its own SQL);
//! - `sqlite.rs`, `postgres.rs` (and their folders): the backends;
//! - `import.rs`: [`import_reference_dir`], a reference (Cline) task directory as a task;
//! - `suite/`: the tests every backend passes.

mod error;
mod import;
mod key_rows;
mod keys;
mod new_key;
#[cfg(feature = "postgres")]
mod postgres;
mod records;
mod requests;
mod responses;
mod rows;
mod sqlite;
#[cfg(test)]
pub(crate) mod suite;
mod task_store;

pub use error::{StoreError, StoreFuture};
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use import::fuzz_read_reference_dir;
pub use import::{ImportError, UNKNOWN_MODEL, import_reference_dir};
pub use keys::{
    Budget, BudgetWindow, ClientKey, HoldOutcome, HoldRequest, HoldScope, HoldUse, KEY_PREFIX_LEN,
    KEY_SCHEME, KeyStore, NewSecret, Team, UsageBucket, UsageBy, UsageQuery, UsageRow, UsageSlice,
    civil_from_days, days_from_civil, decide_hold, generate_key, generate_key_id, hash_key,
    parse_utc_date, settled_amount,
};
pub use new_key::{
    CreateKeyError, CreatedKey, KEY_NAME_MAX, NewKeyRequest, create_client_key, create_team,
    read_budget,
};
#[cfg(feature = "postgres")]
pub use postgres::{PG_SCHEMA_VERSION, PgStore, RECONNECT_MS, is_postgres_url, redact_url};
pub(crate) use records::now_ms;
pub use records::{
    ContextEdit, ImportedEdit, ImportedEvent, NewTask, StoredEvent, TaskRecord, TaskUsage,
};
pub use requests::{RequestLog, RequestOutcome, RequestRecord};
pub use responses::{RESPONSE_TTL_MS, ResponseStore, StoredResponse};
pub use sqlite::{BUSY_TIMEOUT_MS, DB_FILE, SCHEMA_VERSION, SqliteStore};
pub use task_store::TaskStore;
