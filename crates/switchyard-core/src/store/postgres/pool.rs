//! The connection pool behind [`PgStore`] and the one-statement helpers the backend uses.
//! Spec: R13.1.

use std::str::FromStr;
use std::time::Duration;

use deadpool_postgres::{Client, Manager, ManagerConfig, Pool, PoolError, RecyclingMethod};
use tokio_postgres::error::SqlState;
use tokio_postgres::{NoTls, Row};

use super::schema::migrate;
use super::url::{describe, location_of, redact_url, store_error};
use crate::store::StoreError;

/// How long a call keeps trying a server that refuses connections, in milliseconds.
pub const RECONNECT_MS: u64 = 10_000;

/// Connections one [`PgStore`] keeps open at most.
const POOL_SIZE: usize = 4;

/// The task store on a PostgreSQL server. Cloning gives another handle on the same pool.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    /// The server and database without the password, for messages.
    pub(super) location: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.location)
            .finish()
    }
}

impl PgStore {
    /// Connects to the server `url`, without TLS, and migrates its schema forward.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let (store, _) = Self::connect_and_migrate(url).await?;
        Ok(store)
    }

    /// [`PgStore::connect`], also returning the schema version found before migrating.
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
        let found = migrate(&mut client, &store.location).await?;
        Ok((store, found))
    }

    /// The server and database, without the password.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// A pooled connection, retried for [`RECONNECT_MS`].
    pub(crate) async fn client(&self) -> Result<Client, StoreError> {
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

    /// `e` as a [`StoreError`], a full disk as [`StoreError::DiskFull`].
    pub(crate) fn err(&self, e: tokio_postgres::Error) -> StoreError {
        store_error(&self.location, e)
    }

    /// `e` as the error of task `id`, conflict or unknown task.
    pub(crate) fn task_err(&self, id: &str, e: tokio_postgres::Error) -> StoreError {
        match e.code() {
            Some(c) if *c == SqlState::UNIQUE_VIOLATION => StoreError::Conflict { id: id.into() },
            Some(c) if *c == SqlState::FOREIGN_KEY_VIOLATION => {
                StoreError::TaskNotFound { id: id.into() }
            }
            _ => self.err(e),
        }
    }

    /// Runs `sql` with `params` on a pooled connection and returns its rows.
    pub(crate) async fn rows(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(|e| self.err(e))?;
        client.query(&stmt, params).await.map_err(|e| self.err(e))
    }

    /// Runs `sql` and returns how many rows it changed; errors as those of task `id`.
    pub(crate) async fn exec(
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

    /// Every row of `rows` through `map` (one of `store::rows`' mappings).
    pub(crate) fn mapped<T>(
        &self,
        rows: &[tokio_postgres::Row],
        map: fn(&tokio_postgres::Row) -> Result<T, tokio_postgres::Error>,
    ) -> Result<Vec<T>, StoreError> {
        rows.iter()
            .map(|r| map(r).map_err(|e| self.err(e)))
            .collect()
    }
}
