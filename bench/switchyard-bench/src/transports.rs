//! `transports`: issue 17's read-buffer experiment. N streams at once over raw HTTP/1.1, with
//! no provider and no `ApiHandler`, through one of the transport choices for bounding the
//! memory a stream holds, so that each choice is measured on its own:
//!
//! - `reqwest`: the client Switchyard's transport uses (hyper's HTTP/1 read buffer left at
//!   its defaults: it starts at 8 KiB and doubles, up to about 408 KiB, whenever a read fills
//!   it);
//! - `hyper`: hyper's own HTTP/1 connection (`hyper::client::conn::http1`) with
//!   `max_buf_size` (the cap on that buffer; hyper's minimum is 8 KiB) and, optionally,
//!   `read_buf_exact_size` (every read the same size, no adaptive growth).
//!
//! Each stream POSTs to the URL, waits for its first body bytes, then for all the other streams
//! (a barrier, as `consume --streams` does), then reads to the end, feeding every piece to
//! Switchyard's SSE decoder (`SseDecoder::feed_with`) and counting the events. One JSON line:
//! errors, events per stream, wall time, RSS before and at peak.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::json;
use switchyard_api::wire::sse::SseDecoder;
use tokio::sync::Barrier;

/// The request body: what the streams' server ignores, the shape a client sends.
const BODY: &str = r#"{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Benchmark request: stream the whole answer."}]}"#;

/// Which transport carries the streams.
#[derive(Debug, Clone, Copy)]
pub enum Choice {
    /// reqwest with Switchyard's settings (hyper's defaults underneath).
    Reqwest,
    /// hyper's HTTP/1 connection with this `max_buf_size` and, when set, this
    /// `read_buf_exact_size` (bytes).
    Hyper {
        max_buf: usize,
        exact: Option<usize>,
    },
}

/// Runs `streams` streams of `url` at once and prints one JSON line.
pub fn run(url: &str, streams: usize, choice: Choice) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    let report = runtime.block_on(many(url, streams, choice))?;
    println!("{report}");
    Ok(())
}

async fn many(url: &str, n: usize, choice: Choice) -> Result<serde_json::Value, String> {
    let uri: hyper::Uri = url.parse().map_err(|e| format!("bad URL {url}: {e}"))?;
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .no_proxy()
        .build()
        .map_err(|e| format!("cannot build the reqwest client: {e}"))?;
    let baseline_rss_kb = proc_status_kb("VmRSS").unwrap_or(0);
    let barrier = Arc::new(Barrier::new(n));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for _ in 0..n {
        let (barrier, uri, client) = (Arc::clone(&barrier), uri.clone(), client.clone());
        tasks.push(tokio::spawn(async move {
            match choice {
                Choice::Reqwest => via_reqwest(&client, &uri, &barrier).await,
                Choice::Hyper { max_buf, exact } => via_hyper(&uri, max_buf, exact, &barrier).await,
            }
        }));
    }
    let (mut errors, mut first_error, mut events) = (0u64, None, Vec::new());
    for task in tasks {
        match task.await {
            Ok(Ok(count)) => events.push(count),
            Ok(Err(e)) => {
                errors += 1;
                first_error.get_or_insert(e);
            }
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(format!("task failed: {e}"));
            }
        }
    }
    events.sort_unstable();
    events.dedup();
    Ok(json!({
        "choice": format!("{choice:?}"),
        "streams": n,
        "errors": errors,
        "first_error": first_error,
        "events_per_stream": events,
        "stream_ms": started.elapsed().as_secs_f64() * 1000.0,
        "baseline_rss_kb": baseline_rss_kb,
        "peak_rss_kb": proc_status_kb("VmHWM").unwrap_or(0),
    }))
}

/// Feeds `bytes` to `decoder`, counting events.
fn feed(decoder: &mut SseDecoder, bytes: &[u8], events: &mut u64) -> Result<(), String> {
    decoder
        .feed_with(bytes, |_| *events += 1)
        .map_err(|e| e.to_string())
}

async fn via_reqwest(
    client: &reqwest::Client,
    uri: &hyper::Uri,
    barrier: &Barrier,
) -> Result<u64, String> {
    let mut response = client
        .post(uri.to_string())
        .header("content-type", "application/json")
        .body(BODY)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("the server answered {}", response.status()));
    }
    let (mut decoder, mut events) = (SseDecoder::new(), 0);
    let first = response.chunk().await.map_err(|e| e.to_string())?;
    barrier.wait().await;
    if let Some(bytes) = first {
        feed(&mut decoder, &bytes, &mut events)?;
        while let Some(bytes) = response.chunk().await.map_err(|e| e.to_string())? {
            feed(&mut decoder, &bytes, &mut events)?;
        }
    }
    Ok(events)
}

async fn via_hyper(
    uri: &hyper::Uri,
    max_buf: usize,
    exact: Option<usize>,
    barrier: &Barrier,
) -> Result<u64, String> {
    let authority = uri.authority().ok_or("the URL has no host")?.clone();
    let tcp = tokio::net::TcpStream::connect(authority.as_str())
        .await
        .map_err(|e| e.to_string())?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut builder = hyper::client::conn::http1::Builder::new();
    builder.max_buf_size(max_buf);
    if exact.is_some() {
        builder.read_buf_exact_size(exact);
    }
    let (mut sender, connection) = builder
        .handshake::<_, Full<Bytes>>(TokioIo::new(tcp))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    // Origin form (`POST /path HTTP/1.1` and a Host header), as a client sends it.
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let request = hyper::Request::post(path)
        .header("host", authority.as_str())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(BODY.as_bytes())))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("the server answered {}", response.status()));
    }
    let mut body = response.into_body();
    let (mut decoder, mut events, mut waited) = (SseDecoder::new(), 0, false);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| e.to_string())?;
        if !waited {
            barrier.wait().await;
            waited = true;
        }
        if let Some(bytes) = frame.data_ref() {
            feed(&mut decoder, bytes, &mut events)?;
        }
    }
    if !waited {
        barrier.wait().await;
    }
    Ok(events)
}

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`), Linux only.
fn proc_status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
