//! What SPEC R12 adds to a request (issue 15, "Measure").
//!
//! - `failover/direct`: one task turn answered by the first entry (a local mock server).
//! - `failover/after_429`: the same turn when the first entry answers 429 (`retry-after: 30`)
//!   and the fallback answers: the 429's round trip, the cooldown written to the store, the
//!   `fallback` event, and the fallback's request. The cooldown is cleared between iterations
//!   (untimed) so every iteration fails over.
//! - `failover/429_round_trip`: the 429 alone through a handler (no task, no store), so the
//!   added time of a failover is `after_429 − direct − 429_round_trip`.
//! - `bookkeeping/*`: the store calls R12 adds to every request on SQLite: reading the
//!   cooldowns (choosing the entry), taking a rate-limit slot (one `BEGIN IMMEDIATE`
//!   transaction; each iteration's clock is 1.2 s after the last, so the window holds a steady
//!   50 slots, as at 50 requests per minute), recording what the response's headers said, and
//!   the three together.
//!
//! The task database is on `/dev/shm` where there is one (a RAM disk: commits still go
//! through SQLite's WAL and `fsync`, which returns at once), so the figures show Switchyard's
//! own work and not the disk's latency, which is the same for both sides of the comparison.
//!
//! Run: `cargo bench -p switchyard-core --bench limits`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::StreamExt;
use switchyard_api::{
    ApiConfiguration, CancellationToken, Message, Mode, RequestOptions, build_api_handler,
};
use switchyard_core::Task;
use switchyard_core::limits::{
    EntryKey, LearntLimits, LimitsStore, RateLimits, SlotGrant, SlotRequest,
};
use switchyard_core::store::SqliteStore;
use switchyard_testkit::{HttpResponse, MockServer, Reply};
use tokio::runtime::Runtime;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A directory for the task database: on `/dev/shm` when the machine has it.
fn data_dir() -> tempfile::TempDir {
    match std::path::Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    }
}

fn limited() -> Reply {
    Reply::new(HttpResponse::new(
        429,
        &[("content-type", "application/json"), ("retry-after", "30")],
        r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#,
    ))
}

fn ok() -> Reply {
    Reply::new(HttpResponse::fixture("openai_chat_text"))
}

fn config(primary: &MockServer, backup: &MockServer) -> ApiConfiguration {
    let toml = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"primary-model\"\n\
         fallbacks = [ {{ provider = \"openai\", model = \"backup-model\", base_url = \"{}/v1\" }} ]\n\
         [providers.openai]\nbase_url = \"{}/v1\"\n",
        backup.url(),
        primary.url()
    );
    ApiConfiguration::from_toml(&toml, "bench.toml", |_| Some("sk-bench".into())).unwrap()
}

/// Times `iters` task turns on `config`, clearing `primary`'s cooldown before each (untimed).
async fn turns(
    config: &ApiConfiguration,
    store: &Arc<SqliteStore>,
    primary: &EntryKey,
    iters: u64,
) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        store.clear_cooldown(primary).await.unwrap();
        let mut task = Task::builder(config, Mode::Act, store.clone())
            .unwrap()
            .cwd(dir.path())
            .global_rules_dir(None)
            .create("hello")
            .await
            .unwrap();
        let started = Instant::now();
        let outcome = task
            .run_turn(None, &CancellationToken::new(), &mut |_| {})
            .await
            .unwrap();
        total += started.elapsed();
        assert!(outcome.cost_usd.is_none() || outcome.usage.output_tokens > 0);
    }
    total
}

fn failover(c: &mut Criterion) {
    let rt = runtime();
    let (direct_primary, failing_primary, backup) = rt.block_on(async {
        (
            MockServer::start(vec![ok()]).await,
            MockServer::start(vec![limited()]).await,
            MockServer::start(vec![ok()]).await,
        )
    });
    let data = data_dir();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let direct = config(&direct_primary, &backup);
    let failing = config(&failing_primary, &backup);
    let key = |server: &MockServer| EntryKey {
        provider: "openai".into(),
        model: "primary-model".into(),
        base_url: format!("{}/v1", server.url()),
    };
    let mut group = c.benchmark_group("failover");
    group.sample_size(60);
    group.bench_function("direct", |b| {
        b.iter_custom(|iters| rt.block_on(turns(&direct, &store, &key(&direct_primary), iters)))
    });
    group.bench_function("after_429", |b| {
        b.iter_custom(|iters| rt.block_on(turns(&failing, &store, &key(&failing_primary), iters)))
    });
    let handler = build_api_handler(&failing, Mode::Act).unwrap();
    group.bench_function("429_round_trip", |b| {
        b.iter(|| {
            rt.block_on(async {
                let options = RequestOptions {
                    fail_fast: true,
                    ..RequestOptions::default()
                };
                let items: Vec<_> = handler
                    .create_message("s", &[Message::user_text("hello")], &[], options)
                    .collect()
                    .await;
                assert!(items[0].is_err());
            })
        })
    });
    group.finish();
}

fn bookkeeping(c: &mut Criterion) {
    let rt = runtime();
    let data = data_dir();
    let store = SqliteStore::open(data.path()).unwrap();
    let now = || switchyard_core::limits::Clock::system().now_ms();
    let request = |now_ms| SlotRequest {
        key: "openai@http://127.0.0.1/v1#0123456789ab".into(),
        now_ms,
        input_tokens: 1_000,
        limits: RateLimits {
            requests_per_minute: Some(1_000_000),
            input_tokens_per_minute: Some(u64::MAX / 2),
        },
    };
    // A virtual clock 1.2 s further at each slot: 50 slots in every 60 s window.
    let tick = std::cell::Cell::new(now());
    let next = || {
        tick.set(tick.get() + 1_200);
        tick.get()
    };
    rt.block_on(async {
        for _ in 0..50 {
            assert_eq!(
                store.acquire_rate_slot(&request(next())).await.unwrap(),
                SlotGrant::Granted
            );
        }
    });
    let learnt = LearntLimits {
        observed_ms: now(),
        requests_remaining: Some(4_999),
        requests_reset_ms: Some(now() + 12),
        tokens_remaining: Some(3_998_751),
        tokens_reset_ms: Some(now() + 18),
    };
    let mut group = c.benchmark_group("bookkeeping");
    group.bench_function("cooldowns", |b| {
        b.iter(|| rt.block_on(store.cooldowns(now())).unwrap())
    });
    group.bench_function("acquire_rate_slot", |b| {
        b.iter(|| {
            rt.block_on(store.acquire_rate_slot(&request(next())))
                .unwrap()
        })
    });
    group.bench_function("record_learnt_limits", |b| {
        b.iter(|| {
            rt.block_on(store.record_learnt_limits(&request(0).key, &learnt))
                .unwrap()
        })
    });
    group.bench_function("per_request", |b| {
        b.iter(|| {
            rt.block_on(async {
                store.cooldowns(now()).await.unwrap();
                store.acquire_rate_slot(&request(next())).await.unwrap();
                store
                    .record_learnt_limits(&request(0).key, &learnt)
                    .await
                    .unwrap();
            })
        })
    });
    group.finish();
}

criterion_group!(benches, failover, bookkeeping);
criterion_main!(benches);
