//! `switchyard-fleet-bench`: N in-process gateways, each an `Allocator` with its own store
//! handle, admitting requests of 100 keys in 10 teams against one PostgreSQL
//! (bench/fleet/README.md).
//!
//! Each gateway runs `--clients` loops that pick a key, ask, and settle at once at a part of
//! the reservation; a client told to retry later leaves that key alone until then, as a
//! client obeying `retry-after` would. At the end every gateway shuts down and every budget
//! is read back from the store: settled spend against it, and the most any passed it by.

// A bench stops at the first failure, with what failed.
#![allow(clippy::expect_used)]

mod fleet;
mod setup;

use std::process::ExitCode;

use clap::Parser;
use switchyard_core::limits::admission::AllocatorConfig;

#[derive(Parser)]
#[command(
    name = "switchyard-fleet-bench",
    about = "Admissions per second of a simulated fleet"
)]
struct Args {
    /// The PostgreSQL server, e.g. the URL `scripts/postgres.sh url` prints.
    #[arg(long, env = "SWITCHYARD_TEST_POSTGRES_URL")]
    postgres: String,
    /// Gateway counts to run, one fresh database each.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
    gateways: Vec<usize>,
    /// Client loops per gateway.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Seconds of each run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// How long each gateway's batcher waits to fill a batch of records, ms.
    #[arg(long, default_value_t = 100)]
    batch_wait_ms: u64,
    /// Tokio worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(run(args))
}

async fn run(args: Args) -> ExitCode {
    println!(
        "| gateways | decisions/s | admitted/s | refused | admit p50 µs | admit p99 µs | settled USD | most over a budget, USD |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut over = false;
    for &n in &args.gateways {
        let db = setup::fresh_database(&args.postgres, &format!("fleet_bench_{n}")).await;
        let fleet = setup::setup(&db).await;
        let config = AllocatorConfig {
            batch_wait_ms: args.batch_wait_ms,
            ..AllocatorConfig::default()
        };
        let figures = fleet::run(&db, &fleet, (n, args.clients), args.seconds, &config).await;
        let checked = setup::check(&db, &fleet, figures.settled_usd).await;
        println!(
            "| {n} | {:.0} | {:.0} | {} | {} | {} | {:.4} | {:.6} |",
            figures.decisions as f64 / figures.seconds,
            figures.admitted as f64 / figures.seconds,
            figures.refused,
            figures.p50_us,
            figures.p99_us,
            figures.settled_usd,
            checked.most_over,
        );
        over |= checked.most_over > 1e-9 || !checked.ledger_matches;
        if !checked.ledger_matches {
            println!(
                "the store's spend {:.6} differs from what was settled",
                checked.stored_usd
            );
        }
    }
    if over {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
