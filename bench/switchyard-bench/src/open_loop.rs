//! `switchyard-bench load --rate R`: the open loop of the gateway benchmark (issue 25).
//!
//! Request `i` is due at `start + i / R` seconds, whatever happened to the ones before it; its
//! time to the first text and to the last byte are counted from when it was due, not from when
//! it was sent, so time spent queueing — in the gateway, or in this generator waiting for a
//! connection — is in the figures (a closed loop hides it: a slow answer only delays the next
//! request). Each request takes an idle keep-alive connection from a shared pool or opens a new
//! one. At most [`MAX_IN_FLIGHT`] requests are outstanding; one due beyond that is not sent and
//! counts as an error ("over … in flight"), so an overloaded gateway shows as errors, never as
//! a quietly lower rate.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use tokio::task::JoinSet;

use crate::load::{Plan, Sample, Sender, connect, one, request_body, summary, timed_out};

/// The most requests outstanding at once (each holds a connection).
pub const MAX_IN_FLIGHT: usize = 4096;

/// Runs `plan` as an open loop at `rate` requests per second; its JSON line.
pub async fn open_loop(plan: Arc<Plan>, rate: f64) -> Result<Value, String> {
    if !(rate.is_finite() && rate > 0.0) {
        return Err(format!(
            "--rate is a number of requests per second above 0, not {rate}"
        ));
    }
    let uri: hyper::Uri = (plan.url.parse()).map_err(|e| format!("bad URL {}: {e}", plan.url))?;
    let body = Bytes::from(request_body(&plan).to_string());
    let pool: Arc<Mutex<Vec<Sender>>> = Arc::default();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    let mut failed = Vec::new();
    let start = Instant::now() + Duration::from_millis(5);
    for i in 0..plan.requests {
        let due = start + Duration::from_secs_f64(i as f64 / rate);
        tokio::time::sleep_until(due.into()).await;
        if in_flight.load(Ordering::Relaxed) >= MAX_IN_FLIGHT {
            failed.push(format!("not sent: over {MAX_IN_FLIGHT} in flight"));
            continue;
        }
        in_flight.fetch_add(1, Ordering::Relaxed);
        let (plan, uri, body) = (Arc::clone(&plan), uri.clone(), body.clone());
        let (pool, in_flight) = (Arc::clone(&pool), Arc::clone(&in_flight));
        tasks.spawn(async move {
            let answer = due_request(&plan, &uri, body, due, &pool).await;
            in_flight.fetch_sub(1, Ordering::Relaxed);
            answer
        });
    }
    let mut samples = Vec::new();
    while let Some(done) = tasks.join_next().await {
        match done.map_err(|e| format!("a request task panicked: {e}"))? {
            Ok(sample) => samples.push(sample),
            Err(e) => failed.push(e),
        }
    }
    Ok(summary(&plan, &samples, &failed, start.elapsed()))
}

/// One request due at `due`, on a pooled connection (returned to the pool after a complete
/// answer) or a new one.
async fn due_request(
    plan: &Plan,
    uri: &hyper::Uri,
    body: Bytes,
    due: Instant,
    pool: &Mutex<Vec<Sender>>,
) -> Result<Sample, String> {
    let pooled = {
        let mut idle = pool
            .lock()
            .map_err(|_| "the pool's lock is poisoned".to_owned())?;
        std::iter::from_fn(|| idle.pop()).find(|s| !s.is_closed())
    };
    let mut sender = match pooled {
        Some(s) => s,
        None => connect(uri).await?,
    };
    let left = plan.timeout.saturating_sub(due.elapsed());
    match tokio::time::timeout(left, one(plan, uri, &mut sender, body, due)).await {
        Ok(Ok(sample)) => {
            if let Ok(mut idle) = pool.lock() {
                idle.push(sender);
            }
            Ok(sample)
        }
        Ok(Err(e)) => Err(e),
        Err(_) => Err(timed_out(plan)),
    }
}
