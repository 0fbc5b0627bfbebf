//! The fleet's database, keys and teams, and the check of every budget after a run.

use std::str::FromStr;

use switchyard_core::limits::LimitsStore;
use switchyard_core::store::{Budget, BudgetWindow, ClientKey, KeyStore, PgStore, Team, hash_key};

/// The gateway-wide daily cap every admission also takes from.
pub(crate) const GATEWAY_PER_DAY: f64 = 10_000.0;

/// Each request's reservation, USD.
pub(crate) const RESERVE_USD: f64 = 0.001;

/// The keys and teams of one run.
pub(crate) struct Fleet {
    pub(crate) keys: Vec<ClientKey>,
    pub(crate) teams: Vec<Team>,
}

/// What the store says after a run.
pub(crate) struct Checked {
    pub(crate) most_over: f64,
    pub(crate) stored_usd: f64,
    pub(crate) ledger_matches: bool,
}

/// Now, Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as i64)
}

/// An empty database `name` on the server of `admin_url`; returns its URL.
pub(crate) async fn fresh_database(admin_url: &str, name: &str) -> String {
    let mut config = tokio_postgres::Config::from_str(admin_url).expect("a PostgreSQL URL");
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
    config.dbname(name);
    let user = config.get_user().unwrap_or("postgres");
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("postgres://{user}@{host}:{port}/{name}")
}

/// 10 teams and 100 keys, ten to a team: team 0 has $4 a day and every tenth key $0.50, so
/// they run out during a run; the others ($400 a team, $50 a key) do not.
pub(crate) async fn setup(url: &str) -> Fleet {
    let store = PgStore::connect(url).await.expect("connect");
    let day = |usd| {
        Some(Budget {
            usd,
            window: BudgetWindow::Day,
        })
    };
    let mut teams = Vec::new();
    for t in 0..10 {
        let team = Team {
            name: format!("team_{t}"),
            budget: day(if t == 0 { 4.0 } else { 400.0 }),
            created_ms: 1,
        };
        store.create_team(&team).await.expect("team");
        teams.push(team);
    }
    let mut keys = Vec::new();
    for k in 0..100 {
        let key = ClientKey {
            id: format!("key_{k:03}"),
            prefix: "sk-sy-000000".into(),
            name: format!("agent {k}"),
            team: Some(format!("team_{}", k % 10)),
            models: Vec::new(),
            budget: day(if k % 10 == 0 { 0.5 } else { 50.0 }),
            rpm: None,
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
    Fleet { keys, teams }
}

/// Every budget read back: the most any key, team or the gateway cap passed its limit by,
/// and whether the store's spend equals what the gateways settled.
pub(crate) async fn check(url: &str, fleet: &Fleet, settled: f64) -> Checked {
    let store = PgStore::connect(url).await.expect("connect");
    let now = now_ms();
    let from = BudgetWindow::Day.start_ms(now);
    let mut most_over: f64 = 0.0;
    for key in &fleet.keys {
        let used = store
            .used_since(Some(&key.id), None, from, now)
            .await
            .expect("used");
        let over = used - key.budget.map_or(f64::MAX, |b| b.usd);
        if over > 1e-9 {
            println!("{} used {used:.6} of {:?}", key.id, key.budget);
        }
        most_over = most_over.max(over);
    }
    for team in &fleet.teams {
        let used = store
            .used_since(None, Some(&team.name), from, now)
            .await
            .expect("used");
        let over = used - team.budget.map_or(f64::MAX, |b| b.usd);
        if over > 1e-9 {
            println!("{} used {used:.6} of {:?}", team.name, team.budget);
        }
        most_over = most_over.max(over);
    }
    let day_end = BudgetWindow::Day.end_ms(now).unwrap_or(i64::MAX);
    let stored = store.spend_between(from, day_end).await.expect("spend");
    most_over = most_over.max(stored - GATEWAY_PER_DAY);
    Checked {
        most_over,
        stored_usd: stored,
        ledger_matches: (stored - settled).abs() < 1e-6,
    }
}
