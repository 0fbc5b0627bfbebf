//! What a fresh handler's first request costs before any byte goes out, by base URL scheme
//! (issue 13: "no certificate loading for http:// URLs").
//!
//! Each iteration builds a handler from configuration, polls its first request to the end and
//! drops it, so the HTTP client (shared only while a handler holds it) is built anew each
//! time. The request goes to a closed port on 127.0.0.1 and fails at once with "connection
//! refused", so what is measured is the client setup plus one refused connect:
//!
//! - `http`: `http://127.0.0.1:PORT/v1`: a client with an empty root store, no certificate read;
//! - `https`: `https://127.0.0.1:PORT/v1`: a client with the platform's root certificates
//!   (rustls-platform-verifier reads and parses the system's CA bundle, about 150 certificates
//!   on Debian), what every client cost before.
//!
//! Run: `cargo bench -p switchyard-api --bench client_setup`.

// A benchmark's setup failing (no local port, a bad configuration) is a panic with a message.
#![allow(clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::StreamExt;
use switchyard_api::{
    ApiConfiguration, ErrorKind, Message, Mode, RequestOptions, build_api_handler,
};

/// A port on 127.0.0.1 with nothing listening (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
    listener.local_addr().expect("its address").port()
}

fn config(base_url: &str) -> ApiConfiguration {
    let text = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"m\"\n[providers.openai]\nbase_url = \"{base_url}\"\n"
    );
    ApiConfiguration::from_toml(&text, "bench.toml", |_| None).expect("a valid configuration")
}

/// Builds a handler for `config` and runs one request to its (refused) end.
async fn first_request(config: &ApiConfiguration) {
    let handler = build_api_handler(config, Mode::Act).expect("a handler");
    let items: Vec<_> = handler
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    assert!(
        matches!(items.as_slice(), [Err(e)] if e.kind == ErrorKind::Network),
        "{items:?}"
    );
    black_box(items);
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let port = closed_port();
    let mut group = c.benchmark_group("fresh_handler_first_request");
    for scheme in ["http", "https"] {
        let config = config(&format!("{scheme}://127.0.0.1:{port}/v1"));
        group.bench_function(scheme, |b| {
            b.iter(|| runtime.block_on(first_request(&config)));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
