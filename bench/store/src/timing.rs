//! One call at a time: a hold, its settlement, a rate slot and a cooldown read, each timed.

use std::time::{Duration, Instant};

use switchyard_core::limits::{Cooldown, EntryKey, RateLimits, SlotRequest};
use switchyard_core::store::{
    Asked, BudgetWindow, ClientKey, HoldRequest, LeaseScope, LeaseWant, RequestOutcome,
    RequestRecord, SlotLeaseRequest, TaskStore,
};

use crate::seed::{Setup, now_ms};

/// One operation's figures.
pub(crate) struct Figure {
    pub(crate) op: &'static str,
    pub(crate) calls: usize,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
}

fn figure(op: &'static str, mut samples: Vec<Duration>) -> Figure {
    samples.sort_unstable();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e6)
    };
    Figure {
        op,
        calls: samples.len(),
        p50_us: at(0.5),
        p99_us: at(0.99),
    }
}

/// A hold of `key` (with its team) under the request id `id`, checked against a gateway cap.
pub(crate) fn hold(id: String, key: &ClientKey, setup: &Setup, cap: Option<f64>) -> HoldRequest {
    let team = (setup.teams.iter()).find(|t| Some(&t.name) == key.team.as_ref());
    let now = now_ms();
    HoldRequest {
        id,
        key: key.clone(),
        team: team.cloned(),
        user: None,
        amount_usd: 0.001,
        gateway_per_day: cap,
        now_ms: now,
        expires_ms: now + 60_000,
        // What a gateway's hold keeps, so the insert costs what it costs there.
        asked: Asked {
            route: "bench".to_owned(),
            dialect: "chat_completions".to_owned(),
            stream: true,
        },
    }
}

/// The record settling hold `id` of `key`.
pub(crate) fn record(id: String, key: &ClientKey) -> RequestRecord {
    RequestRecord {
        id,
        started_ms: now_ms(),
        route: "bench".into(),
        dialect: "chat_completions".into(),
        stream: false,
        provider: Some("openai".into()),
        model: Some("m".into()),
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost_usd: Some(0.0005),
        first_token_ms: Some(5),
        duration_ms: 10,
        outcome: RequestOutcome::Ok,
        key_id: Some(key.id.clone()),
        team: key.team.clone(),
    }
}

/// Times the four operations on `key_0`, at most `calls` of each and for at most `seconds`.
pub(crate) async fn run(
    store: &dyn TaskStore,
    setup: &Setup,
    calls: usize,
    seconds: u64,
) -> Vec<Figure> {
    let key = &setup.keys[0];
    let budget = Duration::from_secs(seconds);
    let (mut holds, mut settles, mut slots, mut reads) = (vec![], vec![], vec![], vec![]);
    let started = Instant::now();
    // Each hold is settled before the next, as a gateway's requests are: live holds stay as
    // few as the requests in flight, and the history grows as the run goes.
    for i in 0..calls {
        let id = format!("req_bench{i:08}");
        let req = hold(id.clone(), key, setup, Some(1e9));
        let t = Instant::now();
        store.hold(&req).await.expect("hold");
        holds.push(t.elapsed());
        let rec = record(id, key);
        let t = Instant::now();
        store.record_request(&rec).await.expect("settle");
        settles.push(t.elapsed());
        if started.elapsed() > budget && i >= 20 {
            break;
        }
    }
    let limits = RateLimits {
        requests_per_minute: Some(1_000_000),
        input_tokens_per_minute: Some(1_000_000_000),
    };
    for i in 0..calls {
        let slot = SlotRequest {
            key: "openai#bench".into(),
            now_ms: now_ms(),
            input_tokens: 100 + i as u64,
            limits,
        };
        let t = Instant::now();
        store.acquire_rate_slot(&slot).await.expect("slot");
        slots.push(t.elapsed());
    }
    cool_some(store).await;
    for _ in 0..calls {
        let t = Instant::now();
        store.cooldowns(now_ms()).await.expect("cooldowns");
        reads.push(t.elapsed());
    }
    let (leases, slot_leases) = leases(store, setup, calls).await;
    vec![
        figure("hold", holds),
        figure("settle", settles),
        figure("rate slot", slots),
        figure("cooldown read", reads),
        figure("lease key+team+gateway", leases),
        figure("slot lease + return", slot_leases),
    ]
}

/// A process's lease renewals of `key_0`'s, its team's and the gateway's budgets, and of 10
/// per-minute slots it then gives back.
async fn leases(
    store: &dyn TaskStore,
    setup: &Setup,
    calls: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let key = &setup.keys[0];
    let team = &setup.teams[0];
    let want = |scope, id: &str, limit: f64, window| LeaseWant {
        scope,
        id: id.to_owned(),
        limit,
        window,
        want: 0.05,
        need: 0.01,
    };
    let wants = [
        want(LeaseScope::Key, &key.id, 10_000.0, BudgetWindow::Month),
        want(
            LeaseScope::Team,
            &team.name,
            1_000_000.0,
            BudgetWindow::Month,
        ),
        want(LeaseScope::Gateway, "", 1e9, BudgetWindow::Day),
    ];
    let (mut leases, mut slots) = (Vec::new(), Vec::new());
    for _ in 0..calls {
        let now = now_ms();
        let t = Instant::now();
        store
            .lease("bench", now, now + 30_000, &wants)
            .await
            .expect("lease");
        leases.push(t.elapsed());
        let req = SlotLeaseRequest {
            key: "openai#lease".into(),
            holder: "bench".into(),
            limits: RateLimits {
                requests_per_minute: Some(1_000_000),
                input_tokens_per_minute: None,
            },
            now_ms: now,
            requests: 10,
            tokens: 0,
            valid_until_ms: now + 1_000,
        };
        let t = Instant::now();
        let got = store.lease_slots(&req).await.expect("slot lease");
        store
            .return_slots(&req.key, "bench", got)
            .await
            .expect("return");
        slots.push(t.elapsed());
    }
    store.release("bench").await.expect("release");
    (leases, slots)
}

/// Three entries cooling down for an hour.
async fn cool_some(store: &dyn TaskStore) {
    for model in ["a", "b", "c"] {
        let cooldown = Cooldown {
            entry: EntryKey {
                provider: "openai".into(),
                model: model.into(),
                base_url: String::new(),
            },
            since_ms: now_ms(),
            until_ms: now_ms() + 3_600_000,
            reason: "rate_limited".into(),
        };
        store.set_cooldown(&cooldown).await.expect("cooldown");
    }
}

/// Each operation's p50 and p99 at the largest history over those at none.
pub(crate) fn print_ratios(results: &[(&'static str, u64, Vec<Figure>)]) {
    println!();
    println!("| store | operation | p50 ratio (largest / none) | p99 ratio |");
    println!("|---|---|---|---|");
    for name in ["SQLite", "PostgreSQL"] {
        let of = |rows_pick: fn(u64, u64) -> bool| {
            (results.iter())
                .filter(|r| r.0 == name)
                .reduce(|a, b| if rows_pick(b.1, a.1) { b } else { a })
        };
        let (Some(small), Some(large)) = (of(|b, a| b < a), of(|b, a| b > a)) else {
            continue;
        };
        for (s, l) in small.2.iter().zip(&large.2) {
            println!(
                "| {name} | {} | {:.2} | {:.2} |",
                s.op,
                l.p50_us / s.p50_us,
                l.p99_us / s.p99_us
            );
        }
    }
}
