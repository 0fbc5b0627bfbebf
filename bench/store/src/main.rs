//! `switchyard-store-bench`: what admission costs against a store's history (bench/store/README.md).
//!
//! For each backend and each history size it seeds one key's and its team's earlier requests
//! this month, then times a budget hold, a settlement, a rate slot and a cooldown read one
//! call at a time, and holds per second from many connections at once over 100 keys.

#![allow(clippy::expect_used)]

mod fleet;
mod seed;
mod timing;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use switchyard_core::store::{PgStore, SqliteStore, TaskStore};

#[derive(Parser)]
#[command(
    name = "switchyard-store-bench",
    about = "Admission cost against the store's history"
)]
struct Args {
    /// History sizes: earlier requests this month of the measured key and team.
    #[arg(long, value_delimiter = ',', default_value = "0,100000,1000000")]
    rows: Vec<u64>,
    /// Calls timed per operation.
    #[arg(long, default_value_t = 3000)]
    calls: usize,
    /// The most seconds one operation is timed for; fewer calls are made past it.
    #[arg(long, default_value_t = 60)]
    op_seconds: u64,
    /// A PostgreSQL server to measure too, e.g. the URL `scripts/postgres.sh url` prints.
    #[arg(long)]
    postgres: Option<String>,
    /// Measure PostgreSQL only.
    #[arg(long)]
    no_sqlite: bool,
    /// Where the SQLite files go (default: a temporary folder).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Connections of the concurrency run (0: skip it).
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Seconds of each concurrency run.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Seed the stores and stop, keeping them (SQLite files in `--dir`), with `key_0` limited
    /// to 1,000,000 requests a minute; prints each as `ROWS STORE`. Its key's secret is `key_0`.
    /// `bench/gateway_keys/history.sh` runs `serve` on them.
    #[arg(long)]
    seed_only: bool,
}

/// Where one measured store lives.
#[derive(Clone)]
pub(crate) enum Place {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database URL.
    Postgres(String),
}

impl Place {
    /// A new handle with its own connection.
    pub(crate) async fn open(&self) -> Arc<dyn TaskStore> {
        match self {
            Self::Sqlite(path) => Arc::new(SqliteStore::open_file(path).expect("open SQLite")),
            Self::Postgres(url) => Arc::new(PgStore::connect(url).await.expect("connect")),
        }
    }

    /// The store's address as `SWITCHYARD_STORE` takes it.
    fn url(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite:{}", path.display()),
            Self::Postgres(url) => url.clone(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "SQLite",
            Self::Postgres(_) => "PostgreSQL",
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = Args::parse();
    let temp = tempfile::tempdir().expect("temporary folder");
    let dir = args.dir.clone().unwrap_or_else(|| temp.path().to_owned());
    let mut places: Vec<(u64, Place)> = Vec::new();
    for &rows in &args.rows {
        if !args.no_sqlite {
            let path = dir.join(format!("bench-{rows}.db"));
            let _ = std::fs::remove_file(&path);
            places.push((rows, Place::Sqlite(path)));
        }
        if let Some(url) = &args.postgres {
            let db = seed::fresh_database(url, &format!("store_bench_{rows}")).await;
            places.push((rows, Place::Postgres(db)));
        }
    }
    if args.seed_only {
        for (rows, place) in &places {
            let store = place.open().await;
            seed::setup(&*store, place, *rows, Some(1_000_000)).await;
            println!("{rows} {}", place.url());
        }
        return ExitCode::SUCCESS;
    }
    println!("| store | earlier requests | operation | calls | p50 µs | p99 µs |");
    println!("|---|---|---|---|---|---|");
    let mut results = Vec::new();
    for (rows, place) in &places {
        let store = place.open().await;
        let setup = seed::setup(&*store, place, *rows, None).await;
        let figures = timing::run(&*store, &setup, args.calls, args.op_seconds).await;
        for f in &figures {
            println!(
                "| {} | {rows} | {} | {} | {:.0} | {:.0} |",
                place.name(),
                f.op,
                f.calls,
                f.p50_us,
                f.p99_us
            );
        }
        results.push((place.name(), *rows, figures));
    }
    timing::print_ratios(&results);
    if args.connections > 0 {
        fleet::print(&places, &args.rows, args.connections, args.seconds).await;
    }
    ExitCode::SUCCESS
}
