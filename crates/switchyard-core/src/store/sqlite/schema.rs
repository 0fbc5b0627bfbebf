//! The SQLite schema and its forward migrations, versioned in `PRAGMA user_version`.
//! Spec: R10.1, R13.1.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::error::classify;
use crate::store::StoreError;
use crate::store::gateway::claims::recompute_sql;

/// The schema version this build writes. A file with a larger `user_version` is refused.
pub const SCHEMA_VERSION: i64 = 12;

/// `MIGRATIONS[v]` takes a database from version `v` to `v + 1`.
const MIGRATIONS: &[&str] = &[
    // 0 → 1: the first schema.
    "CREATE TABLE tasks (
        id TEXT PRIMARY KEY NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        cwd TEXT NOT NULL,
        mode TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        first_prompt TEXT NOT NULL,
        tokens_in INTEGER NOT NULL DEFAULT 0,
        tokens_out INTEGER NOT NULL DEFAULT 0,
        cache_writes INTEGER NOT NULL DEFAULT 0,
        cache_reads INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL NOT NULL DEFAULT 0,
        last_request_tokens INTEGER NOT NULL DEFAULT 0,
        deleted_range_start INTEGER,
        deleted_range_end INTEGER
    ) STRICT;
    CREATE INDEX tasks_by_created ON tasks (created_ms);
    CREATE TABLE messages (
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        ts_ms INTEGER NOT NULL,
        message TEXT NOT NULL,
        PRIMARY KEY (task_id, idx)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE ui_events (
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        ts_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        event TEXT NOT NULL,
        PRIMARY KEY (task_id, seq)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE context_edits (
        task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        ts_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL,
        PRIMARY KEY (task_id, seq)
    ) STRICT, WITHOUT ROWID;",
    // 1 → 2: requests of unknown cost, so a task's cost is unknown instead of a made-up $0.
    "ALTER TABLE tasks ADD COLUMN unpriced_requests INTEGER NOT NULL DEFAULT 0;",
    // 2 → 3: the limits state; spend rows outlive their task, which was paid for anyway.
    "CREATE TABLE cooldowns (
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        base_url TEXT NOT NULL,
        since_ms INTEGER NOT NULL,
        until_ms INTEGER NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY (provider, model, base_url)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE spend (
        ts_ms INTEGER NOT NULL,
        task_id TEXT NOT NULL,
        cost_usd REAL NOT NULL
    ) STRICT;
    CREATE INDEX spend_by_time ON spend (ts_ms);
    CREATE TABLE rate_slots (
        key TEXT NOT NULL,
        ts_ms INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX rate_slots_by_key ON rate_slots (key, ts_ms);
    CREATE TABLE rate_learnt (
        key TEXT PRIMARY KEY NOT NULL,
        observed_ms INTEGER NOT NULL,
        requests_remaining INTEGER,
        requests_reset_ms INTEGER,
        tokens_remaining INTEGER,
        tokens_reset_ms INTEGER
    ) STRICT, WITHOUT ROWID;",
    // 3 → 4: the gateway's request log.
    "CREATE TABLE gateway_requests (
        id TEXT PRIMARY KEY NOT NULL,
        started_ms INTEGER NOT NULL,
        route TEXT NOT NULL,
        dialect TEXT NOT NULL,
        stream INTEGER NOT NULL,
        provider TEXT,
        model TEXT,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cache_read_tokens INTEGER NOT NULL,
        cache_write_tokens INTEGER NOT NULL,
        cost_usd REAL,
        first_token_ms INTEGER,
        duration_ms INTEGER NOT NULL,
        status TEXT NOT NULL,
        error_kind TEXT
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX gateway_requests_by_start ON gateway_requests (started_ms);",
    // 4 → 5: the gateway's stored Responses.
    "CREATE TABLE gateway_responses (
        id TEXT PRIMARY KEY NOT NULL,
        created_ms INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL,
        route TEXT NOT NULL,
        system_prompt TEXT NOT NULL,
        messages TEXT NOT NULL,
        answer TEXT NOT NULL
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX gateway_responses_by_expiry ON gateway_responses (expires_ms);",
    // 5 → 6: client keys as hashes, teams and budget holds.
    "CREATE TABLE client_keys (
        id TEXT PRIMARY KEY NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        prefix TEXT NOT NULL,
        name TEXT NOT NULL,
        team TEXT,
        models TEXT NOT NULL,
        budget_usd REAL,
        budget_window TEXT,
        rpm INTEGER,
        tpm INTEGER,
        max_parallel INTEGER,
        expires_ms INTEGER,
        admin INTEGER NOT NULL,
        created_ms INTEGER NOT NULL,
        revoked_ms INTEGER
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE teams (
        name TEXT PRIMARY KEY NOT NULL,
        budget_usd REAL,
        budget_window TEXT,
        created_ms INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE budget_holds (
        id TEXT PRIMARY KEY NOT NULL,
        key_id TEXT NOT NULL,
        team TEXT,
        ts_ms INTEGER NOT NULL,
        reserved_usd REAL NOT NULL,
        expires_ms INTEGER NOT NULL,
        settled_usd REAL
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX budget_holds_by_key ON budget_holds (key_id, ts_ms);
    CREATE INDEX budget_holds_by_team ON budget_holds (team, ts_ms);
    CREATE INDEX budget_holds_open ON budget_holds (expires_ms) WHERE settled_usd IS NULL;
    ALTER TABLE gateway_requests ADD COLUMN key_id TEXT;
    ALTER TABLE gateway_requests ADD COLUMN team TEXT;",
    // 6 → 7: holds summed from covering indexes instead of row by row.
    "DROP INDEX budget_holds_by_key;
    DROP INDEX budget_holds_by_team;
    CREATE INDEX budget_holds_by_key
        ON budget_holds (key_id, ts_ms, settled_usd, expires_ms, reserved_usd);
    CREATE INDEX budget_holds_by_team
        ON budget_holds (team, ts_ms, settled_usd, expires_ms, reserved_usd);
    CREATE INDEX budget_holds_open_by_key ON budget_holds (key_id, expires_ms)
        WHERE settled_usd IS NULL;
    DROP INDEX spend_by_time;
    CREATE INDEX spend_by_time ON spend (ts_ms, cost_usd);",
    // 7 → 8: running totals filled from the ledger, leases, indexes of live holds only.
    "CREATE TABLE budget_totals (
        scope TEXT NOT NULL,
        id TEXT NOT NULL,
        span TEXT NOT NULL,
        bucket_ms INTEGER NOT NULL,
        settled_usd REAL NOT NULL,
        PRIMARY KEY (scope, id, span, bucket_ms)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE budget_leases (
        scope TEXT NOT NULL,
        id TEXT NOT NULL,
        holder TEXT NOT NULL,
        span TEXT NOT NULL,
        bucket_ms INTEGER NOT NULL,
        amount REAL NOT NULL,
        expires_ms INTEGER NOT NULL,
        PRIMARY KEY (scope, id, holder)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX budget_leases_by_holder ON budget_leases (holder);
    DROP INDEX budget_holds_open;
    DROP INDEX budget_holds_open_by_key;
    CREATE INDEX budget_holds_open ON budget_holds (expires_ms, reserved_usd)
        WHERE settled_usd IS NULL;
    CREATE INDEX budget_holds_open_by_key
        ON budget_holds (key_id, expires_ms, ts_ms, reserved_usd) WHERE settled_usd IS NULL;
    CREATE INDEX budget_holds_open_by_team
        ON budget_holds (team, expires_ms, ts_ms, reserved_usd) WHERE settled_usd IS NULL;
    ALTER TABLE rate_slots ADD COLUMN requests INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE rate_slots ADD COLUMN holder TEXT;
    CREATE INDEX rate_slots_by_holder ON rate_slots (holder, key, ts_ms)
        WHERE holder IS NOT NULL;",
    // 8 → 9: the audit log of changes to keys and teams and of dashboard sign-ins.
    "CREATE TABLE audit_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        ts_ms INTEGER NOT NULL,
        actor TEXT NOT NULL,
        origin TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        detail TEXT NOT NULL
    ) STRICT;
    CREATE INDEX audit_log_by_time ON audit_log (ts_ms);",
    // 9 → 10: users, the keys they own, and the owner each hold counts against.
    "CREATE TABLE users (
        id TEXT PRIMARY KEY NOT NULL,
        issuer TEXT NOT NULL,
        subject TEXT NOT NULL,
        email TEXT,
        name TEXT,
        role TEXT NOT NULL,
        team TEXT,
        models TEXT NOT NULL,
        budget_usd REAL,
        budget_window TEXT,
        created_ms INTEGER NOT NULL,
        signed_in_ms INTEGER NOT NULL,
        disabled_ms INTEGER,
        UNIQUE (issuer, subject)
    ) STRICT, WITHOUT ROWID;
    ALTER TABLE client_keys ADD COLUMN owner TEXT;
    CREATE INDEX client_keys_by_owner ON client_keys (owner) WHERE owner IS NOT NULL;
    ALTER TABLE budget_holds ADD COLUMN user_id TEXT;
    CREATE INDEX budget_holds_open_by_user
        ON budget_holds (user_id, expires_ms, ts_ms, reserved_usd) WHERE settled_usd IS NULL;",
    // 10 → 11: traces of admitted requests not yet recorded, charged if their process dies.
    "CREATE TABLE gateway_open (
        id TEXT PRIMARY KEY NOT NULL,
        holder TEXT NOT NULL,
        started_ms INTEGER NOT NULL,
        route TEXT NOT NULL,
        dialect TEXT NOT NULL,
        stream INTEGER NOT NULL,
        key_id TEXT NOT NULL,
        team TEXT,
        reserved_usd REAL NOT NULL,
        expires_ms INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX gateway_open_by_expiry ON gateway_open (expires_ms);
    CREATE INDEX gateway_open_by_holder ON gateway_open (holder);",
    // 11 → 12: what a held request asked for, so that its lost record names its route.
    "ALTER TABLE budget_holds ADD COLUMN route TEXT;
    ALTER TABLE budget_holds ADD COLUMN dialect TEXT;
    ALTER TABLE budget_holds ADD COLUMN stream INTEGER;",
];

/// The version whose tables the running totals are filled in, from the ledger.
const TOTALS_VERSION: i64 = 8;

/// [`StoreError::NewerSchema`] when `version` (the file's) is newer than [`SCHEMA_VERSION`].
pub(super) fn refuse_newer(path: &Path, version: i64) -> Result<(), StoreError> {
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            location: path.display().to_string(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// Brings the database to [`SCHEMA_VERSION`] in one immediate transaction.
pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| classify(path, e))?;
    let version: i64 = tx
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| classify(path, e))?;
    refuse_newer(path, version)?;
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    for sql in MIGRATIONS.iter().skip(version.max(0) as usize) {
        tx.execute_batch(sql).map_err(|e| classify(path, e))?;
    }
    // The totals are filled once every column the recomputation reads exists.
    if version < TOTALS_VERSION {
        let fill = format!(
            "INSERT INTO budget_totals (scope, id, span, bucket_ms, settled_usd) {}",
            recompute_sql(true)
        );
        tx.execute_batch(&fill).map_err(|e| classify(path, e))?;
    }
    tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
        .map_err(|e| classify(path, e))?;
    tx.commit().map_err(|e| classify(path, e))
}
