//! Dev-only test helper: a scripted HTTP/1.1 server on `127.0.0.1` that replays provider
//! responses byte for byte and injects faults.
//!
//! # Overview
//!
//! * [`HttpResponse`] is a raw response as it goes on the wire: the head (status line, headers,
//!   blank line) and the body bytes. Load one from `tests/fixtures` with
//!   [`HttpResponse::fixture`], from `tests/cases` with [`HttpResponse::case`], or build one
//!   with [`HttpResponse::new`], [`HttpResponse::json`] or [`HttpResponse::sse`].
//! * [`Reply`] wraps a response with a script: how the body is cut into socket writes
//!   ([`Split`]), delays, a stall, a [`Gate`] the test opens, a drop, and what happens after
//!   the last body byte ([`AfterBody`]).
//! * [`MockServer::start`] serves a list of replies: request 1 gets `replies[0]`, request 2
//!   `replies[1]`, and so on; the last reply repeats. Every request is recorded
//!   ([`RecordedRequest`]) before it is answered. [`MockServer::wait_for_requests`] and
//!   [`MockServer::wait_for_closed`] are readiness signals: a test waits for the server to have
//!   acted instead of sleeping and hoping it has.
//! * [`AgentUpstream`] is the request-aware model server of the agent-client tests: a closure
//!   decides each [`AgentTurn`] (text or a tool call) from the parsed [`AgentTurnRequest`], and
//!   the server writes it in the [`UpstreamDialect`] it was started as.
//! * [`case_replies`] turns a `tests/cases/{id}.meta.json` (or a lone `{id}.http`) into the
//!   reply list the case describes; [`case_expectations`] reads every `{id}.expected.json`.
//! * [`skip_or_fail`], [`require_program`], [`require_script`] and [`mcp_test_servers`]: a test
//!   whose program, server or file is missing fails in CI and is skipped visibly elsewhere
//!   (recorded for `scripts/test.sh`'s closing count).
//!
//! ```no_run
//! # async fn demo() {
//! use std::time::Duration;
//! use switchyard_testkit::{HttpResponse, MockServer, Reply, Split};
//!
//! let server = MockServer::start(vec![
//!     Reply::new(HttpResponse::fixture("anthropic_429")),
//!     Reply::new(HttpResponse::fixture("anthropic_text")).split(Split::Every(5)),
//! ])
//! .await;
//! let base_url = server.url(); // "http://127.0.0.1:PORT"
//! // ... point the client under test at base_url ...
//! assert_eq!(server.request_count(), 2);
//! # }
//! ```
//!
//! # Wire behaviour
//!
//! * Bytes are sent exactly as stored: the server never re-encodes a body and never adds or
//!   changes a header. EOF-framed bodies (`Connection: close`, no length) and truncated chunked
//!   bodies are sent as they are; the connection is then closed.
//! * Keep-alive: after a reply whose head has a correct `content-length` (or a complete chunked
//!   body), no `connection: close`, no `drop_at`, and [`AfterBody::Close`], the server reads the
//!   next request on the same connection. It also closes after the reply when the request said
//!   `connection: close` (or was HTTP/1.0 without `keep-alive`).
//! * Each connection runs in its own task; the reply index is taken atomically per request, so
//!   concurrent connections are fine.
//! * A request carrying `expect: 100-continue` gets an interim `HTTP/1.1 100 Continue` before its
//!   body is read; that is the only byte the server ever sends that is not in a reply.
//! * Dropping the [`MockServer`] aborts its accept loop and every connection task; open sockets
//!   are closed.
//!
//! # Resets
//!
//! [`AfterBody::Reset`] (and [`Reply::drop_at`] with `Reset`) closes with `SO_LINGER` 0, so the
//! peer gets a TCP RST. An abortive close discards every byte the peer has not acknowledged,
//! and a client that is not reading fills its receive window quickly when the body goes out in
//! tiny pieces (Linux sizes the window by per-segment overhead: with `Every(5)` a non-reading
//! client stalled the sender after about 160 body bytes). So before the RST the server waits
//! until the kernel reports no unacknowledged bytes (`tx_queue` in `/proc/net/tcp`, Linux
//! only), yielding and sleeping 1 ms (`tokio::time`) between checks, for at most 250 rounds.
//! The client therefore receives every byte, then `ECONNRESET` (Linux lets it read the data it
//! has buffered before it reports the reset). If the client stops reading for longer than that,
//! or on systems without `/proc/net/tcp`, the tail of the body may be lost.
//!
//! # Paused clocks
//!
//! All waiting (delays, write gaps, stalls, holds) uses `tokio::time`, so tests with
//! `#[tokio::test(start_paused = true)]` run instantly: a 600 s hold costs no real time (a
//! [`Gate`] waits for the test, not for time). Start the server inside the test so it runs on
//! the test's runtime (the paused clock exists only on the current-thread runtime, which is what
//! `start_paused` gives you). The calling crate needs tokio's `test-util` feature in its
//! dev-dependencies for `start_paused`.
//!
//! Caveats (`tests/paused_clock.rs` checks all but the fourth):
//!
//! * With a paused clock tokio jumps to the next timer as soon as no task is runnable, even if
//!   a task is waiting on a socket. Before it jumps it polls for I/O once without blocking, and
//!   does not jump if that woke a task. Over loopback a write reaches the peer's receive buffer
//!   before `write` returns, so a client waiting on this server is woken before its own timeout
//!   can fire: hundreds of round trips under a 30 s client timeout take zero virtual time. This
//!   relies on loopback delivering data synchronously, which tokio does not guarantee.
//! * Virtual time does advance whenever everything is idle, so a client timeout races the
//!   server's scripted waits in virtual time. A 2 s client idle timeout against
//!   [`AfterBody::HoldOpen`]`(600 s)` fires at exactly t+2 s, which is what stall tests want.
//! * A reset may cost a few virtual milliseconds: if the client is not reading, the wait
//!   described under *Resets* advances the clock in 1 ms steps, for at most about 250 ms.
//! * Work done on real time (another OS thread, `std::thread::sleep`, a blocking client) does
//!   not stop auto-advance, so virtual time can run past your timeouts while it is in progress.
//!   `spawn_blocking` tasks do stop auto-advance while they run. Keep the client under test
//!   async and on the same runtime.
//! * [`RecordedRequest::at`] is a `tokio::time::Instant`, which is virtual under a paused clock,
//!   so backoff gaps can be asserted exactly (e.g. `requests[1].at - requests[0].at == 2 s`).

// This crate is a test helper: panicking with a clear message (a missing fixture, a malformed
// meta.json, a request body that is not JSON) is the intended way to fail the calling test.
#![allow(clippy::expect_used)]
#![warn(missing_docs)]

mod agent_upstream;
mod expectations;
mod postgres;
mod prerequisites;
mod reply;
mod response;
mod server;

use std::path::PathBuf;

pub use agent_upstream::{
    AgentExchange, AgentTurn, AgentTurnRequest, AgentUpstream,
    BODY_LIMIT as AGENT_UPSTREAM_BODY_LIMIT, UpstreamDialect,
};
pub use expectations::case_expectations;
pub use postgres::{POSTGRES_URL_ENV, fresh_postgres_database, postgres_server_url};
pub use prerequisites::{
    SKIPS_FILE_ENV, in_ci, mcp_test_servers, require_program, require_script, skip_or_fail,
};
pub use reply::{AfterBody, Gate, Reply, Split, case_replies};
pub use response::HttpResponse;
pub use server::{MockServer, RecordedRequest, Route};

/// The repository's test data: `<workspace root>/tests`, holding `fixtures/` (recorded wire
/// responses), `cases/` (failure cases from public bug reports) and `reference/` (the
/// reference's model and provider tables as JSON). Found from this crate's
/// `CARGO_MANIFEST_DIR`, so a fresh clone runs its tests with nothing beside it.
pub fn test_data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .join("tests")
}

/// The text a fixture's stream holds: its `tests/fixtures/{name}.expected.json` text chunks,
/// joined in order.
///
/// # Panics
///
/// When the file is missing or is not a JSON array of chunks.
pub fn fixture_text(name: &str) -> String {
    let path = test_data_dir().join(format!("fixtures/{name}.expected.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let chunks: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    chunks
        .as_array()
        .expect("an .expected.json file is a JSON array of chunks")
        .iter()
        .filter(|c| c["type"] == "text")
        .filter_map(|c| c["text"].as_str())
        .collect()
}
