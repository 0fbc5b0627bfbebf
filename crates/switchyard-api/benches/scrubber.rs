//! What scrubbing a streamed answer costs (SPEC R10.5): 1 MiB of text pushed through a
//! [`Scrubber`] in token-sized pieces (16 bytes, as models stream) and in 4 KiB pieces, with
//! three registered secrets, against the same text scrubbed whole; the figure is per MiB.
//!
//! Run: `cargo bench -p switchyard-api --bench scrubber`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use switchyard_api::secrets::{Scrubber, register, scrub};

fn scrubber(c: &mut Criterion) {
    for key in [
        "sk-bench-0123456789abcdef0123456789abcdef",
        "sk-ant-bench-fedcba9876543210fedcba9876543210",
        "AIzaBenchKey_0123456789abcdefghijklmn",
    ] {
        register(key);
    }
    // Prose with the letters secrets start with (s, k, A), so the automaton leaves its start.
    let line = "The answer asks for skills and keys; Alice sks about tasks. ";
    let text: String = line.repeat((1 << 20) / line.len() + 1)[..1 << 20].to_owned();
    let mut group = c.benchmark_group("scrubber");
    group.throughput(Throughput::Bytes(text.len() as u64));
    for piece in [16usize, 4096] {
        group.bench_function(format!("push_{piece}_byte_pieces_per_MiB"), |b| {
            b.iter(|| {
                let mut s = Scrubber::new();
                let mut shown = 0;
                for chunk in text.as_bytes().chunks(piece) {
                    let chunk = std::str::from_utf8(chunk).unwrap_or("");
                    shown += s.push(black_box(chunk)).len();
                }
                shown + s.finish().len()
            })
        });
    }
    group.bench_function("scrub_whole_MiB", |b| {
        b.iter(|| scrub(black_box(&text)).len())
    });
    group.finish();
}

criterion_group!(benches, scrubber);
criterion_main!(benches);
