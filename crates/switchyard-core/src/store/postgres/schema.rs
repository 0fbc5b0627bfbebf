//! The PostgreSQL schema and its forward migrations, versioned in table `switchyard_schema`.
//! Spec: R13.1.

use deadpool_postgres::Client;

use super::url::store_error;
use crate::store::StoreError;
use crate::store::gateway::claims::recompute_sql;

/// The schema version this build writes. A database with a larger version is refused.
pub const PG_SCHEMA_VERSION: i64 = 11;

/// The advisory lock migrations run under, so processes migrate a new database once.
const MIGRATION_LOCK: i64 = 0x5357_4954_4348_0001;

/// `MIGRATIONS[v]` takes a database from version `v` to `v + 1`; JSON is kept as text.
const MIGRATIONS: &[&str] = &[
    // 0 → 1: the first schema (the SQLite schema's version 2).
    "CREATE TABLE tasks (
        id TEXT PRIMARY KEY NOT NULL,
        created_ms BIGINT NOT NULL,
        updated_ms BIGINT NOT NULL,
        cwd TEXT NOT NULL,
        mode TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        first_prompt TEXT NOT NULL,
        tokens_in BIGINT NOT NULL DEFAULT 0,
        tokens_out BIGINT NOT NULL DEFAULT 0,
        cache_writes BIGINT NOT NULL DEFAULT 0,
        cache_reads BIGINT NOT NULL DEFAULT 0,
        cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
        last_request_tokens BIGINT NOT NULL DEFAULT 0,
        deleted_range_start BIGINT,
        deleted_range_end BIGINT,
        unpriced_requests BIGINT NOT NULL DEFAULT 0
    );
    CREATE INDEX tasks_by_created ON tasks (created_ms);
    CREATE TABLE messages (
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        idx BIGINT NOT NULL,
        ts_ms BIGINT NOT NULL,
        message TEXT NOT NULL,
        PRIMARY KEY (task_id, idx)
    );
    CREATE TABLE ui_events (
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        seq BIGINT NOT NULL,
        ts_ms BIGINT NOT NULL,
        kind TEXT NOT NULL,
        event TEXT NOT NULL,
        PRIMARY KEY (task_id, seq)
    );
    CREATE TABLE context_edits (
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        seq BIGINT NOT NULL,
        ts_ms BIGINT NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL,
        PRIMARY KEY (task_id, seq)
    );",
    // 1 → 2: the limits state; spend rows outlive their task, as on SQLite.
    "CREATE TABLE cooldowns (
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        base_url TEXT NOT NULL,
        since_ms BIGINT NOT NULL,
        until_ms BIGINT NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY (provider, model, base_url)
    );
    CREATE TABLE spend (
        ts_ms BIGINT NOT NULL,
        task_id TEXT NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX spend_by_time ON spend (ts_ms);
    CREATE TABLE rate_slots (
        key TEXT NOT NULL,
        ts_ms BIGINT NOT NULL,
        input_tokens BIGINT NOT NULL
    );
    CREATE INDEX rate_slots_by_key ON rate_slots (key, ts_ms);
    CREATE TABLE rate_learnt (
        key TEXT PRIMARY KEY NOT NULL,
        observed_ms BIGINT NOT NULL,
        requests_remaining BIGINT,
        requests_reset_ms BIGINT,
        tokens_remaining BIGINT,
        tokens_reset_ms BIGINT
    );",
    // 2 → 3: the gateway's request log, as SQLite's version 4.
    "CREATE TABLE gateway_requests (
        id TEXT PRIMARY KEY NOT NULL,
        started_ms BIGINT NOT NULL,
        route TEXT NOT NULL,
        dialect TEXT NOT NULL,
        stream BIGINT NOT NULL,
        provider TEXT,
        model TEXT,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cache_read_tokens BIGINT NOT NULL,
        cache_write_tokens BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION,
        first_token_ms BIGINT,
        duration_ms BIGINT NOT NULL,
        status TEXT NOT NULL,
        error_kind TEXT
    );
    CREATE INDEX gateway_requests_by_start ON gateway_requests (started_ms);",
    // 3 → 4: the gateway's stored Responses, as SQLite's version 5.
    "CREATE TABLE gateway_responses (
        id TEXT PRIMARY KEY NOT NULL,
        created_ms BIGINT NOT NULL,
        expires_ms BIGINT NOT NULL,
        route TEXT NOT NULL,
        system_prompt TEXT NOT NULL,
        messages TEXT NOT NULL,
        answer TEXT NOT NULL
    );
    CREATE INDEX gateway_responses_by_expiry ON gateway_responses (expires_ms);",
    // 4 → 5: client keys, teams and budget holds, as SQLite's version 6.
    "CREATE TABLE client_keys (
        id TEXT PRIMARY KEY NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,
        name TEXT NOT NULL,
        team TEXT,
        models TEXT NOT NULL,
        budget_usd DOUBLE PRECISION,
        budget_window TEXT,
        rpm BIGINT,
        tpm BIGINT,
        max_parallel BIGINT,
        expires_ms BIGINT,
        admin BIGINT NOT NULL,
        created_ms BIGINT NOT NULL,
        revoked_ms BIGINT
    );
    CREATE TABLE teams (
        name TEXT PRIMARY KEY NOT NULL,
        budget_usd DOUBLE PRECISION,
        budget_window TEXT,
        created_ms BIGINT NOT NULL
    );
    CREATE TABLE budget_holds (
        id TEXT PRIMARY KEY NOT NULL,
        key_id TEXT NOT NULL,
        team TEXT,
        ts_ms BIGINT NOT NULL,
        reserved_usd DOUBLE PRECISION NOT NULL,
        expires_ms BIGINT NOT NULL,
        settled_usd DOUBLE PRECISION
    );
    CREATE INDEX budget_holds_by_key ON budget_holds (key_id, ts_ms);
    CREATE INDEX budget_holds_by_team ON budget_holds (team, ts_ms);
    CREATE INDEX budget_holds_open ON budget_holds (expires_ms) WHERE settled_usd IS NULL;
    ALTER TABLE gateway_requests ADD COLUMN key_id TEXT;
    ALTER TABLE gateway_requests ADD COLUMN team TEXT;",
    // 5 → 6: a hold decided from the indexes alone, as SQLite's version 7.
    "DROP INDEX budget_holds_by_key;
    DROP INDEX budget_holds_by_team;
    CREATE INDEX budget_holds_by_key ON budget_holds (key_id, ts_ms)
        INCLUDE (settled_usd, expires_ms, reserved_usd);
    CREATE INDEX budget_holds_by_team ON budget_holds (team, ts_ms)
        INCLUDE (settled_usd, expires_ms, reserved_usd);
    CREATE INDEX budget_holds_open_by_key ON budget_holds (key_id, expires_ms)
        WHERE settled_usd IS NULL;
    DROP INDEX spend_by_time;
    CREATE INDEX spend_by_time ON spend (ts_ms) INCLUDE (cost_usd);",
    // 6 → 7: admission in constant time, as SQLite's version 8.
    "CREATE TABLE budget_totals (
        scope TEXT NOT NULL,
        id TEXT NOT NULL,
        span TEXT NOT NULL,
        bucket_ms BIGINT NOT NULL,
        settled_usd DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (scope, id, span, bucket_ms)
    );
    CREATE TABLE budget_leases (
        scope TEXT NOT NULL,
        id TEXT NOT NULL,
        holder TEXT NOT NULL,
        span TEXT NOT NULL,
        bucket_ms BIGINT NOT NULL,
        amount DOUBLE PRECISION NOT NULL,
        expires_ms BIGINT NOT NULL,
        PRIMARY KEY (scope, id, holder)
    );
    CREATE INDEX budget_leases_by_holder ON budget_leases (holder);
    DROP INDEX budget_holds_open;
    DROP INDEX budget_holds_open_by_key;
    CREATE INDEX budget_holds_open ON budget_holds (expires_ms) INCLUDE (reserved_usd)
        WHERE settled_usd IS NULL;
    CREATE INDEX budget_holds_open_by_key ON budget_holds (key_id, expires_ms)
        INCLUDE (ts_ms, reserved_usd) WHERE settled_usd IS NULL;
    CREATE INDEX budget_holds_open_by_team ON budget_holds (team, expires_ms)
        INCLUDE (ts_ms, reserved_usd) WHERE settled_usd IS NULL;
    ALTER TABLE rate_slots ADD COLUMN requests BIGINT NOT NULL DEFAULT 1;
    ALTER TABLE rate_slots ADD COLUMN holder TEXT;
    CREATE INDEX rate_slots_by_holder ON rate_slots (holder, key, ts_ms)
        WHERE holder IS NOT NULL;",
    // 7 → 8: the audit log of changes to keys and teams and of dashboard sign-ins.
    "CREATE TABLE audit_log (
        seq BIGSERIAL PRIMARY KEY,
        ts_ms BIGINT NOT NULL,
        actor TEXT NOT NULL,
        origin TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX audit_log_by_time ON audit_log (ts_ms);",
    // 8 → 9: users, the keys they own, and the owner each hold counts against.
    "CREATE TABLE users (
        id TEXT PRIMARY KEY NOT NULL,
        issuer TEXT NOT NULL,
        subject TEXT NOT NULL,
        email TEXT,
        name TEXT,
        role TEXT NOT NULL,
        team TEXT,
        models TEXT NOT NULL,
        budget_usd DOUBLE PRECISION,
        budget_window TEXT,
        created_ms BIGINT NOT NULL,
        signed_in_ms BIGINT NOT NULL,
        disabled_ms BIGINT,
        UNIQUE (issuer, subject)
    );
    ALTER TABLE client_keys ADD COLUMN owner TEXT;
    CREATE INDEX client_keys_by_owner ON client_keys (owner) WHERE owner IS NOT NULL;
    ALTER TABLE budget_holds ADD COLUMN user_id TEXT;
    CREATE INDEX budget_holds_open_by_user ON budget_holds (user_id, expires_ms)
        INCLUDE (ts_ms, reserved_usd) WHERE settled_usd IS NULL;",
    // 9 → 10: traces of admitted requests not yet recorded, charged if their process dies.
    "CREATE TABLE gateway_open (
        id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        started_ms BIGINT NOT NULL,
        route TEXT NOT NULL,
        dialect TEXT NOT NULL,
        stream BOOLEAN NOT NULL,
        key_id TEXT NOT NULL,
        team TEXT,
        reserved_usd DOUBLE PRECISION NOT NULL,
        expires_ms BIGINT NOT NULL
    );
    CREATE INDEX gateway_open_by_expiry ON gateway_open (expires_ms);
    CREATE INDEX gateway_open_by_holder ON gateway_open (holder);",
    // 10 → 11: what a held request asked for, so that its lost record names its route.
    "ALTER TABLE budget_holds ADD COLUMN route TEXT;
    ALTER TABLE budget_holds ADD COLUMN dialect TEXT;
    ALTER TABLE budget_holds ADD COLUMN stream BOOLEAN;",
];

/// The version whose tables the running totals are filled in, from the ledger.
const TOTALS_VERSION: i64 = 7;

/// Brings the database to [`PG_SCHEMA_VERSION`]; returns the version found.
pub(super) async fn migrate(client: &mut Client, location: &str) -> Result<i64, StoreError> {
    let err = |e| store_error(location, e);
    let tx = client.transaction().await.map_err(err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(err)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS switchyard_schema (
             one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
             version BIGINT NOT NULL
         )",
    )
    .await
    .map_err(err)?;
    let found: i64 = tx
        .query_opt("SELECT version FROM switchyard_schema", &[])
        .await
        .map_err(err)?
        .map(|r| r.get(0))
        .unwrap_or(0);
    if found > PG_SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            location: location.to_owned(),
            found,
            supported: PG_SCHEMA_VERSION,
        });
    }
    if found == PG_SCHEMA_VERSION {
        // Nothing to change: the transaction only created what already existed.
        tx.rollback().await.map_err(err)?;
        return Ok(found);
    }
    for sql in MIGRATIONS.iter().skip(found.max(0) as usize) {
        tx.batch_execute(sql).await.map_err(err)?;
    }
    // The totals are filled once every column the recomputation reads exists.
    if found < TOTALS_VERSION {
        let fill = format!(
            "INSERT INTO budget_totals (scope, id, span, bucket_ms, settled_usd) {}",
            recompute_sql(false)
        );
        tx.batch_execute(&fill).await.map_err(err)?;
    }
    tx.execute(
        "INSERT INTO switchyard_schema (version) VALUES ($1)
         ON CONFLICT (one) DO UPDATE SET version = excluded.version",
        &[&PG_SCHEMA_VERSION],
    )
    .await
    .map_err(err)?;
    tx.commit().await.map_err(err)?;
    Ok(found)
}
