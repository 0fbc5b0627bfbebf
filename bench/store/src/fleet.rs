//! Many connections at once: each worker has its own store handle, holds for the 100 keys in
//! turn and settles its holds in batches of 16, as a gateway's record batches do.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use switchyard_core::store::{HoldOutcome, Team};

use crate::Place;
use crate::seed::Setup;
use crate::timing::{hold, record};

/// Holds per second from `connections` workers for `seconds`, with and without a gateway cap,
/// on each backend's smallest and largest history.
pub(crate) async fn print(places: &[(u64, Place)], rows: &[u64], connections: usize, seconds: u64) {
    println!();
    println!("| store | earlier requests | gateway daily cap | connections | holds/s | refused |");
    println!("|---|---|---|---|---|---|");
    let (lo, hi) = (rows.iter().min(), rows.iter().max());
    let mut round = 0;
    for (n, place) in places {
        if Some(n) != lo && Some(n) != hi {
            continue;
        }
        for cap in [None, Some(1e9)] {
            round += 1;
            let (rate, refused) = run(place, connections, seconds, cap, round).await;
            println!(
                "| {} | {n} | {} | {connections} | {rate:.0} | {refused} |",
                place.name(),
                if cap.is_some() { "yes" } else { "no" },
            );
        }
    }
}

/// One run: the workers' holds per second and how many were refused.
async fn run(
    place: &Place,
    connections: usize,
    seconds: u64,
    cap: Option<f64>,
    round: usize,
) -> (f64, u64) {
    let setup = Arc::new(read_setup(place).await);
    let (held, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut stores = Vec::new();
    for _ in 0..connections {
        stores.push(place.open().await);
    }
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut workers = Vec::new();
    for (w, store) in stores.into_iter().enumerate() {
        let (setup, held, refused) = (Arc::clone(&setup), Arc::clone(&held), Arc::clone(&refused));
        workers.push(tokio::spawn(async move {
            let mut batch = Vec::new();
            let mut j = 0usize;
            while Instant::now() < deadline {
                let key = &setup.keys[(w * 37 + j) % setup.keys.len()];
                let id = format!("req_f{round}w{w:02}n{j:08}");
                j += 1;
                match store.hold(&hold(id.clone(), key, &setup, cap)).await {
                    Ok(HoldOutcome::Held) => {
                        held.fetch_add(1, Ordering::Relaxed);
                        batch.push(record(id, key));
                    }
                    Ok(_) => _ = refused.fetch_add(1, Ordering::Relaxed),
                    Err(e) => panic!("hold: {e}"),
                }
                if batch.len() >= 16 {
                    store.record_requests(&batch).await.expect("settle");
                    batch.clear();
                }
            }
            store.record_requests(&batch).await.expect("settle");
        }));
    }
    for w in workers {
        w.await.expect("worker");
    }
    let secs = started.elapsed().as_secs_f64();
    (
        held.load(Ordering::Relaxed) as f64 / secs,
        refused.load(Ordering::Relaxed),
    )
}

/// The keys and teams already made in `place`.
async fn read_setup(place: &Place) -> Setup {
    let store = place.open().await;
    let keys = store.client_keys().await.expect("keys");
    let teams: Vec<Team> = store.teams().await.expect("teams");
    Setup { keys, teams }
}
