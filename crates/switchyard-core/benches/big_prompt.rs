//! A prompt of megabytes through one task turn (issue 26, item 6: "the request path stays
//! linear and fast for a multi-MB prompt"): the task created with the prompt (stored), the
//! request built and sent to a local mock server, its short answer consumed and stored.
//!
//! - `big_prompt/MB`: one whole turn for a prompt of 1, 2 and 4 MiB; the time per MiB should
//!   stay flat as the prompt grows (no step is quadratic).
//!
//! The model is described with a 100,000,000-token window so that R8.2's pre-send check lets
//! the prompt through. The task database is on `/dev/shm` when there is one, so the figures
//! show Switchyard's work and not the disk's.
//!
//! Run: `cargo bench -p switchyard-core --bench big_prompt`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use switchyard_api::{ApiConfiguration, CancellationToken, Mode};
use switchyard_core::Task;
use switchyard_core::store::SqliteStore;
use switchyard_testkit::{HttpResponse, MockServer, Reply};

fn data_dir() -> tempfile::TempDir {
    match std::path::Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    }
}

/// `mib` MiB of text that looks like code: words, punctuation, newlines and quotes (which
/// JSON escapes).
fn prompt(mib: usize) -> String {
    let line = "    let value = compute(\"input\", 42); // a line of code\n";
    line.repeat(mib * 1024 * 1024 / line.len())
}

fn big_prompt(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "openai_chat_text",
    ))]));
    let toml = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"big\"\n[act.model_info]\ncontext_window = 100000000\n\
         [providers.openai]\nbase_url = \"{}/v1\"\n",
        server.url()
    );
    let config =
        ApiConfiguration::from_toml(&toml, "bench.toml", |_| Some("sk-bench".into())).unwrap();
    let (data, cwd) = (data_dir(), tempfile::tempdir().unwrap());
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let mut group = c.benchmark_group("big_prompt");
    group.sample_size(10);
    for mib in [1, 2, 4] {
        let text = prompt(mib);
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{mib}MiB")),
            &text,
            |b, text| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            let started = Instant::now();
                            let mut task = Task::builder(&config, Mode::Act, store.clone())
                                .unwrap()
                                .cwd(cwd.path())
                                .global_rules_dir(None)
                                .create(text)
                                .await
                                .unwrap();
                            task.run_turn(None, &CancellationToken::new(), &mut |_| {})
                                .await
                                .unwrap();
                            total += started.elapsed();
                        }
                        total
                    })
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, big_prompt);
criterion_main!(benches);
