//! [`PgStore`]: the store on a PostgreSQL server, for agents on many machines sharing one.
//! Spec: R13.1, R13.2, R10.2.

pub(crate) mod limits;
mod pool;
mod schema;
mod task_store;
#[cfg(test)]
mod tests;
mod url;

pub use pool::{PgStore, RECONNECT_MS};
pub use schema::PG_SCHEMA_VERSION;
pub use url::{is_postgres_url, redact_url};
