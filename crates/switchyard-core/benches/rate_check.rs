//! The shared rate-limit check (SPEC R12.3, R13.2): `LimitsStore::acquire_rate_slot` calls per
//! second with 1, 10 and 100 concurrent callers, each with its own connection (its own store
//! handle; tasks of one process, not separate processes), all on one provider key with
//! `requests_per_minute = 60`. The first 60 checks of a window are granted (a slot row is
//! inserted), the rest are told to wait (the 60 slots are read and nothing is written): the
//! steady state of a team over its limit, which is when the check runs hardest.
//!
//! - `rate_check/postgres/C`: [`PgStore`] on the server in `SWITCHYARD_TEST_POSTGRES_URL`
//!   (`scripts/postgres.sh start`), a fresh database; the transaction takes the key's advisory
//!   lock, so callers of one key queue on the server.
//! - `rate_check/sqlite/C`: [`SqliteStore`], C connections on one file (`BEGIN IMMEDIATE`: one
//!   writer at a time, the others wait on the busy timeout).
//!
//! Criterion's throughput line is the figure: checks per second over all callers.
//!
//! Run: `SWITCHYARD_TEST_POSTGRES_URL="$(scripts/postgres.sh start)" cargo bench -p
//! switchyard-core --features postgres --bench rate_check`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use switchyard_core::limits::{RateLimits, SlotRequest};
use switchyard_core::store::{PgStore, SqliteStore, TaskStore};

/// Checks each caller makes per measured iteration.
const PER_CALLER: usize = 20;

fn request() -> SlotRequest {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    SlotRequest {
        key: "anthropic#team".into(),
        now_ms,
        input_tokens: 1_000,
        limits: RateLimits {
            requests_per_minute: Some(60),
            input_tokens_per_minute: None,
        },
    }
}

fn run(rt: &tokio::runtime::Runtime, stores: &[Arc<dyn TaskStore>], iters: u64) -> Duration {
    rt.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            let callers: Vec<_> = stores
                .iter()
                .map(|store| {
                    let store = Arc::clone(store);
                    tokio::spawn(async move {
                        for _ in 0..PER_CALLER {
                            store.acquire_rate_slot(&request()).await.unwrap();
                        }
                    })
                })
                .collect();
            for caller in callers {
                caller.await.unwrap();
            }
        }
        start.elapsed()
    })
}

fn rate_check(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("rate_check");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for callers in [1usize, 10, 100] {
        group.throughput(Throughput::Elements((callers * PER_CALLER) as u64));
        if std::env::var_os(switchyard_testkit::POSTGRES_URL_ENV).is_some() {
            let url = switchyard_testkit::fresh_postgres_database("limits_bench").unwrap();
            let stores: Vec<Arc<dyn TaskStore>> = (0..callers)
                .map(|_| {
                    Arc::new(rt.block_on(PgStore::connect(&url)).unwrap()) as Arc<dyn TaskStore>
                })
                .collect();
            group.bench_with_input(BenchmarkId::new("postgres", callers), &callers, |b, _| {
                b.iter_custom(|iters| run(&rt, &stores, iters));
            });
        } else {
            eprintln!(
                "rate_check/postgres: set {} (scripts/postgres.sh start) to measure PostgreSQL",
                switchyard_testkit::POSTGRES_URL_ENV
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let stores: Vec<Arc<dyn TaskStore>> = (0..callers)
            .map(|_| Arc::new(SqliteStore::open(dir.path()).unwrap()) as Arc<dyn TaskStore>)
            .collect();
        group.bench_with_input(BenchmarkId::new("sqlite", callers), &callers, |b, _| {
            b.iter_custom(|iters| run(&rt, &stores, iters));
        });
    }
    group.finish();
}

criterion_group!(benches, rate_check);
criterion_main!(benches);
