//! The measured store: 100 keys in 10 teams, and `key_0`'s and `team_0`'s earlier requests this
//! month written straight into the ledger with SQL (one statement per table), as a month of
//! traffic leaves it.

use std::str::FromStr;

use switchyard_core::store::{
    Budget, ClientKey, TaskStore, Team, civil_from_days, days_from_civil, hash_key,
};

use crate::Place;

/// The keys and teams of one measured store.
pub(crate) struct Setup {
    pub(crate) keys: Vec<ClientKey>,
    pub(crate) teams: Vec<Team>,
}

/// Now, Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as i64)
}

/// An empty database `name` on the server of `admin_url`, dropped first if an earlier run left
/// it; returns its URL.
pub(crate) async fn fresh_database(admin_url: &str, name: &str) -> String {
    let config = tokio_postgres::Config::from_str(admin_url).expect("a PostgreSQL URL");
    let (client, conn) = config
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    for sql in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        client.batch_execute(&sql).await.expect("create database");
    }
    let mut config = config;
    config.dbname(name);
    let user = config.get_user().unwrap_or("postgres");
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("postgres://{user}@{host}:{port}/{name}")
}

/// Makes the keys and teams and seeds `rows` earlier requests of `key_0` and `team_0`;
/// `key_0` gets `rpm` as its per-minute limit.
pub(crate) async fn setup(
    store: &dyn TaskStore,
    place: &Place,
    rows: u64,
    rpm: Option<u64>,
) -> Setup {
    let mut teams = Vec::new();
    for t in 0..10 {
        let team = Team {
            name: format!("team_{t}"),
            budget: Budget::parse("1000000/month"),
            created_ms: 1,
        };
        store.create_team(&team).await.expect("team");
        teams.push(team);
    }
    let mut keys = Vec::new();
    for k in 0..100 {
        let key = ClientKey {
            id: format!("key_{k}"),
            prefix: format!("sk-sy-{k:06}"),
            name: format!("agent {k}"),
            team: Some(format!("team_{}", k % 10)),
            models: Vec::new(),
            budget: Budget::parse("10000/month"),
            rpm: if k == 0 { rpm } else { None },
            tpm: None,
            max_parallel: None,
            expires_ms: None,
            admin: false,
            created_ms: 1,
            revoked_ms: None,
            owner: None,
        };
        store
            .create_key(&key, &hash_key(&key.id))
            .await
            .expect("key");
        keys.push(key);
    }
    if rows > 0 {
        let started = std::time::Instant::now();
        match place {
            Place::Sqlite(path) => seed_sqlite(path, rows),
            Place::Postgres(url) => seed_postgres(url, rows).await,
        }
        eprintln!(
            "seeded {rows} requests into {} in {:.1} s",
            place.name(),
            started.elapsed().as_secs_f64()
        );
        // The running totals of the seeded ledger, as the schema migration fills them.
        let started = std::time::Instant::now();
        let check = store.check_totals(true).await.expect("totals");
        eprintln!(
            "filled {} running totals ({} written) in {:.1} s",
            check.checked,
            check.differences.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Setup { keys, teams }
}

/// The seeded rows' times: holds spread over this month until a minute ago, spend rows over
/// today until a minute ago.
fn spans() -> (i64, i64, i64, i64) {
    let now = now_ms() - 60_000;
    let day = now.div_euclid(86_400_000) * 86_400_000;
    let (y, m, _) = civil_from_days(now.div_euclid(86_400_000));
    let month = days_from_civil(y, m, 1) * 86_400_000;
    (month, now - month, day, now - day)
}

/// The three tables' seeding statements, with `$N` the row count, `$I` a row's number and
/// `$FROM` the source of the numbers, so both backends share them.
fn seed_sql() -> [String; 3] {
    [
        "INSERT INTO budget_holds (id, key_id, team, ts_ms, reserved_usd, expires_ms, settled_usd)
         SELECT 'req_seed' || $I, 'key_0', 'team_0', $MONTH + $I * $MSPAN / $N, 0.001,
           $MONTH + $I * $MSPAN / $N + 60000, 0.0005 FROM $FROM"
            .to_owned(),
        "INSERT INTO spend (ts_ms, task_id, cost_usd)
         SELECT $DAY + $I * $DSPAN / $N, 'req_seed' || $I, 0.0005 FROM $FROM"
            .to_owned(),
        "INSERT INTO gateway_requests (id, started_ms, route, dialect, stream, provider, model,
           input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
           first_token_ms, duration_ms, status, error_kind, key_id, team)
         SELECT 'req_seed' || $I, $MONTH + $I * $MSPAN / $N, 'bench', 'chat_completions', 0,
           'openai', 'm', 10, 5, 0, 0, 0.0005, 5, 10, 'ok', NULL, 'key_0', 'team_0' FROM $FROM"
            .to_owned(),
    ]
}

/// `sql` with the spans and the row count filled in.
fn filled(sql: &str, rows: u64, i: &str, from: &str) -> String {
    let (month, mspan, day, dspan) = spans();
    sql.replace("$FROM", from)
        .replace("$I", i)
        .replace("$MONTH", &month.to_string())
        .replace("$MSPAN", &mspan.to_string())
        .replace("$DAY", &day.to_string())
        .replace("$DSPAN", &dspan.to_string())
        .replace("$N", &rows.to_string())
}

fn seed_sqlite(path: &std::path::Path, rows: u64) {
    let mut conn = rusqlite::Connection::open(path).expect("open for seeding");
    conn.execute_batch("PRAGMA synchronous = OFF")
        .expect("pragma");
    let tx = conn.transaction().expect("begin");
    let from = format!(
        "(WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {rows})
          SELECT i FROM n)"
    );
    for sql in seed_sql() {
        tx.execute_batch(&filled(&sql, rows, "i", &from))
            .expect("seed SQLite");
    }
    tx.commit().expect("commit");
    // A month of traffic leaves the WAL checkpointed as it goes; one seeding transaction
    // leaves it holding every row, which slows every read until it is checkpointed.
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .expect("checkpoint");
}

async fn seed_postgres(url: &str, rows: u64) {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect for seeding");
    tokio::spawn(conn);
    let from = format!("generate_series(0::bigint, {rows} - 1) AS s(i)");
    for sql in seed_sql() {
        let sql = filled(&sql, rows, "i", &from);
        client.batch_execute(&sql).await.expect("seed PostgreSQL");
    }
    // Autovacuum would have analysed a month-old table.
    client.batch_execute("ANALYZE").await.expect("analyze");
}
