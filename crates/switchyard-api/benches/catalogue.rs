//! What the model catalogue costs a run of `switchyard`: parsing the embedded data files
//! (about 530 models in 50 TOML files; a task parses only its provider's, once per process,
//! before the first request; `switchyard models` parses all) and finding a typed id's entry
//! (an exact id, a dated variant, an unknown id).
//!
//! Run: `cargo bench -p switchyard-api --bench catalogue`.

// A benchmark's setup failing is a panic with a message.
#![allow(clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use switchyard_api::model::Catalogue;
use switchyard_api::model::lookup::{find, suggest};

fn catalogue(c: &mut Criterion) {
    c.bench_function("catalogue/parse_builtin", |b| {
        b.iter(|| black_box(Catalogue::parse_builtin()))
    });
    // One provider's files: the largest table (vertex, 52 models in two files), a middle
    // one (openai-native, 33) and the local server's one-model file (openai).
    for provider in ["vertex", "openai-native", "openai"] {
        c.bench_function(
            &format!("catalogue/parse_builtin_provider/{provider}"),
            |b| b.iter(|| black_box(Catalogue::parse_builtin_provider(black_box(provider)))),
        );
    }
    let table = Catalogue::builtin()
        .table("openai-native", None)
        .expect("openai-native's table");
    for (name, id) in [
        ("exact", "gpt-5.1"),
        ("dated_variant", "gpt-5.2-2026-01-15"),
        ("unknown", "gpt-7-turbo-preview"),
    ] {
        c.bench_function(&format!("catalogue/find/{name}"), |b| {
            b.iter(|| black_box(find(table, black_box(id)).map(|f| f.key)))
        });
    }
    c.bench_function("catalogue/suggest/unknown", |b| {
        b.iter(|| black_box(suggest(table, black_box("gpt-7-turbo-preview"))))
    });
}

criterion_group!(benches, catalogue);
criterion_main!(benches);
