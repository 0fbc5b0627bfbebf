//! Codex over the Responses WebSocket against HTTP: sessions of Codex-shaped turns, alternating
//! between the two, through an in-process gateway translating to a loopback Messages upstream
//! that answers at once. Prints each turn's median time from its send to its first output item,
//! and the bytes a client sends a session. The figures are in bench/README.md.

// A benchmark stops at the first thing that does not work, saying what.
#![allow(clippy::expect_used)]

mod codex;
mod session;

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use switchyard_api::ApiConfiguration;
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{AgentUpstream, UpstreamDialect};
use tokio_util::sync::CancellationToken;

/// The upstream's key, read by the gateway's configuration; the upstream checks none.
const UPSTREAM_KEY: &str = "sk-bench-upstream";

#[derive(Parser)]
#[command(about = "Codex over the Responses WebSocket against HTTP, per turn")]
struct Args {
    /// Sessions each way, alternating.
    #[arg(long, default_value_t = 20)]
    sessions: usize,
    /// Turns a session (each a tool call, the last one text).
    #[arg(long, default_value_t = 20)]
    turns: usize,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = Args::parse();
    let turns = args.turns.max(1);
    let upstream =
        AgentUpstream::start(UpstreamDialect::Messages, move |r| codex::model(r, turns)).await;
    let (base, stop) = serve_gateway(&upstream.base_url()).await;
    let (mut socket, mut http) = (vec![Vec::new(); turns], vec![Vec::new(); turns]);
    let mut sent = (0, 0);
    for _ in 0..args.sessions.max(1) {
        let (times, bytes) = session::over_socket(&base, turns).await;
        sent.0 = bytes;
        times
            .into_iter()
            .enumerate()
            .for_each(|(t, d)| socket[t].push(d));
        let (times, bytes) = session::over_http(&base, turns).await;
        sent.1 = bytes;
        times
            .into_iter()
            .enumerate()
            .for_each(|(t, d)| http[t].push(d));
    }
    report(&mut socket, &mut http, sent);
    stop.cancel();
}

/// A gateway routing every model to Anthropic's `claude-sonnet-4-5` at `url`, on 127.0.0.1:0.
async fn serve_gateway(url: &str) -> (String, CancellationToken) {
    let text = format!(
        "[serve.routes.\"*\"]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{url}\"\n"
    );
    let config = ApiConfiguration::from_toml(&text, "serve.toml", |_| Some(UPSTREAM_KEY.into()));
    let gateway = Gateway::new(config.expect("the route parses")).expect("the gateway builds");
    let listener = (tokio::net::TcpListener::bind("127.0.0.1:0").await).expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("an address"));
    let shutdown = CancellationToken::new();
    let limits = ServerLimits::default();
    tokio::spawn(serve(listener, Arc::new(gateway), limits, shutdown.clone()));
    (base, shutdown)
}

/// The medians of a few turns, of all turns and their 90th percentile, and the bytes sent.
fn report(socket: &mut [Vec<Duration>], http: &mut [Vec<Duration>], sent: (usize, usize)) {
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        ms(v[v.len() / 2])
    };
    println!("turn | socket median ms | HTTP median ms");
    let last = socket.len() - 1;
    let mut shown: Vec<usize> = [0, 1, 4, 9, 14, last]
        .into_iter()
        .filter(|t| *t <= last)
        .collect();
    shown.dedup();
    for turn in shown {
        let (s, h) = (median(&mut socket[turn]), median(&mut http[turn]));
        println!("{:>4} | {s:>16.2} | {h:>14.2}", turn + 1);
    }
    let (mut all_s, mut all_h) = (socket.concat(), http.concat());
    println!(
        "all  | {:>16.2} | {:>14.2}",
        median(&mut all_s),
        median(&mut all_h)
    );
    let p90 = |v: &[Duration]| ms(v[v.len() * 9 / 10]);
    println!("p90  | {:>16.2} | {:>14.2}", p90(&all_s), p90(&all_h));
    println!("client bytes a session: socket {} HTTP {}", sent.0, sent.1);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
