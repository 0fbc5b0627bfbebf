//! The durable store of tasks, limits and the gateway, on SQLite or PostgreSQL.
//! Spec: R10, R13.1.
//!
//! Each role is its own async trait, [`TaskStore`] having the others as supertraits. Every
//! backend passes `suite/`: a method is one transaction and processes share a store.

mod error;
mod gateway;
mod import;
#[cfg(feature = "postgres")]
mod postgres;
mod records;
mod rows;
mod sqlite;
#[cfg(test)]
pub(crate) mod suite;
mod task_store;

pub use error::{StoreError, StoreFuture};
pub use gateway::audit::{
    Actor, AuditEntry, AuditStore, KeyChange, KeyUpdate, key_diff, key_target, utc_text,
};
pub use gateway::budget::{Budget, BudgetWindow, civil_from_days, days_from_civil, parse_utc_date};
pub use gateway::edit_key::{
    KeyEdit, UserEdit, revoke_client_key, rotate_client_key, update_client_key, update_team,
    update_user,
};
pub use gateway::holds::{
    Asked, HoldOutcome, HoldRequest, HoldScope, HoldUse, decide_hold, settled_amount,
};
pub use gateway::key_store::KeyStore;
pub use gateway::keys::{
    ClientKey, KEY_PREFIX_LEN, KEY_SCHEME, NewSecret, Team, generate_key, generate_key_id, hash_key,
};
pub use gateway::leases::{
    LeaseGrant, LeaseScope, LeaseStore, LeaseWant, LeasedRecord, SlotLease, SlotLeaseRequest,
    decide_lease, decide_slot_lease,
};
pub use gateway::new_key::{
    CreateKeyError, CreatedKey, KEY_NAME_MAX, NewKeyRequest, create_client_key,
    create_client_key_by, create_team, create_team_by, read_budget,
};
pub use gateway::open::{OpenRequest, OpenStore};
pub use gateway::requests::{RequestLog, RequestOutcome, RequestRecord};
pub use gateway::responses::{RESPONSE_TTL_MS, ResponseStore, StoredResponse};
pub use gateway::totals::{TotalKey, TotalScope, TotalsCheck, TotalsDiff};
pub use gateway::usage::{UsageBucket, UsageBy, UsageQuery, UsageRow, UsageSlice};
pub use gateway::users::{Role, SignIn, User, UserUpdate, user_diff, user_id, user_target};
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use import::fuzz_read_reference_dir;
pub use import::{ImportError, UNKNOWN_MODEL, import_reference_dir};
#[cfg(feature = "postgres")]
pub use postgres::{PG_SCHEMA_VERSION, PgStore, RECONNECT_MS, is_postgres_url, redact_url};
pub(crate) use records::now_ms;
pub use records::{
    ContextEdit, ImportedEdit, ImportedEvent, NewTask, StoredEvent, TaskRecord, TaskUsage,
};
pub use sqlite::{BUSY_TIMEOUT_MS, DB_FILE, SCHEMA_VERSION, SqliteStore};
pub use task_store::TaskStore;
