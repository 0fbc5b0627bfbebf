//! One run: N gateways, each an `Allocator` on its own store handle, and their clients.

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchyard_core::limits::admission::{Admission, AdmissionAsk, Allocator, AllocatorConfig};
use switchyard_core::store::{PgStore, RequestOutcome, RequestRecord, TaskStore};

use crate::setup::{Fleet, GATEWAY_PER_DAY, RESERVE_USD, now_ms};

/// What a run measured.
pub(crate) struct Figures {
    pub(crate) decisions: u64,
    pub(crate) admitted: u64,
    pub(crate) refused: u64,
    pub(crate) p50_us: u32,
    pub(crate) p99_us: u32,
    pub(crate) settled_usd: f64,
    pub(crate) seconds: f64,
}

/// One client loop's counts and admission times.
#[derive(Default)]
struct Tally {
    admitted: u64,
    refused: u64,
    settled_usd: f64,
    micros: Vec<u32>,
}

/// Runs `n` gateways of `clients` loops each for `seconds`, then shuts every gateway down.
pub(crate) async fn run(
    url: &str,
    fleet: &Fleet,
    (n, clients): (usize, usize),
    seconds: u64,
    config: &AllocatorConfig,
) -> Figures {
    let mut gateways = Vec::new();
    for _ in 0..n {
        let store: Arc<dyn TaskStore> = Arc::new(PgStore::connect(url).await.expect("connect"));
        let allocator = Allocator::start(store, config.clone()).expect("allocator");
        gateways.push(Arc::new(allocator));
    }
    let asks: Arc<Vec<AdmissionAsk>> = Arc::new(
        (fleet.keys.iter())
            .map(|k| AdmissionAsk {
                key: Some(k.clone()),
                team: fleet
                    .teams
                    .iter()
                    .find(|t| Some(&t.name) == k.team.as_ref())
                    .cloned(),
                user: None,
                gateway_per_day: Some(GATEWAY_PER_DAY),
                reserve_usd: RESERVE_USD,
                input_tokens: 200,
            })
            .collect(),
    );
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let mut loops = Vec::new();
    for (g, gateway) in gateways.iter().enumerate() {
        for c in 0..clients {
            let (gateway, asks) = (Arc::clone(gateway), Arc::clone(&asks));
            let tag = format!("n{n}g{g}c{c}");
            loops.push(tokio::spawn(client(gateway, asks, tag, end)));
        }
    }
    let mut all = Tally::default();
    for l in loops {
        let t = l.await.expect("client");
        all.admitted += t.admitted;
        all.refused += t.refused;
        all.settled_usd += t.settled_usd;
        all.micros.extend(t.micros);
    }
    let elapsed = start.elapsed().as_secs_f64();
    for gateway in gateways {
        let gateway = Arc::into_inner(gateway).expect("no client left");
        gateway.shutdown().await.expect("shutdown");
    }
    all.micros.sort_unstable();
    let at = |q: f64| {
        all.micros
            .get(((all.micros.len() as f64 - 1.0) * q) as usize)
            .copied()
    };
    Figures {
        decisions: all.admitted + all.refused,
        admitted: all.admitted,
        refused: all.refused,
        p50_us: at(0.5).unwrap_or(0),
        p99_us: at(0.99).unwrap_or(0),
        settled_usd: all.settled_usd,
        seconds: elapsed,
    }
}

/// Asks for random keys until `end`, settling each admitted request at once at 20 to 100%
/// of its reservation; a refused key is left alone until its retry time.
async fn client(
    gateway: Arc<Allocator>,
    asks: Arc<Vec<AdmissionAsk>>,
    tag: String,
    end: Instant,
) -> Tally {
    let mut seed = tag.bytes().fold(0x9e37_79b9_7f4a_7c15_u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut not_before = vec![0_i64; asks.len()];
    let (mut tally, mut blocked) = (Tally::default(), 0);
    while Instant::now() < end {
        let k = next(asks.len() as u64) as usize;
        let now = now_ms();
        if not_before[k] > now {
            // Every key this client knows of is out of budget: wait as a client would.
            blocked += 1;
            if blocked % 100 == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            continue;
        }
        let asked = Instant::now();
        let answer = gateway.admit(&asks[k]).await;
        tally
            .micros
            .push(asked.elapsed().as_micros().min(u32::MAX as u128) as u32);
        match answer {
            Admission::Admitted(admitted) => {
                let cost = RESERVE_USD * (0.2 + 0.8 * next(1000) as f64 / 1000.0);
                let id = format!("{tag}-{}", tally.admitted);
                let record = record(id, admitted.at_ms, cost);
                gateway.settle(admitted, record).await;
                tally.admitted += 1;
                tally.settled_usd += cost;
            }
            Admission::Refused(r) => {
                tally.refused += 1;
                not_before[k] = now + r.retry_after_ms.unwrap_or(86_400_000);
            }
        }
    }
    tally
}

fn record(id: String, at_ms: i64, cost: f64) -> RequestRecord {
    RequestRecord {
        id,
        started_ms: at_ms,
        route: "fleet".into(),
        dialect: "chat_completions".into(),
        stream: false,
        provider: Some("mock".into()),
        model: Some("mock".into()),
        input_tokens: 200,
        output_tokens: 50,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost_usd: Some(cost),
        first_token_ms: None,
        duration_ms: 1,
        outcome: RequestOutcome::Ok,
        key_id: None,
        team: None,
    }
}
