//! The admission allocator (issue 41) across processes: several `Allocator`s, each with its
//! own store handle as separate gateway processes would have, on one SQLite file and on one
//! PostgreSQL database (`scripts/postgres.sh start`, `SWITCHYARD_TEST_POSTGRES_URL`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use switchyard_core::limits::admission::{
    Admission, AdmissionAsk, AdmissionClock, Allocator, AllocatorConfig, Refusal,
};
use switchyard_core::store::{
    Actor, Budget, BudgetWindow, ClientKey, KeyChange, KeyUpdate, LeaseScope, LeaseWant,
    RequestOutcome, RequestRecord, SqliteStore, TaskStore, Team, hash_key,
};

/// Where the shared store lives.
enum Place {
    Sqlite(PathBuf),
    #[cfg(feature = "postgres")]
    Postgres(String),
}

impl Place {
    fn sqlite(dir: &tempfile::TempDir) -> Self {
        Self::Sqlite(dir.path().to_owned())
    }

    #[cfg(feature = "postgres")]
    fn postgres(label: &str) -> Option<Self> {
        switchyard_testkit::fresh_postgres_database(label).map(Self::Postgres)
    }

    /// A new handle with its own connections.
    async fn open(&self) -> Arc<dyn TaskStore> {
        match self {
            Self::Sqlite(dir) => Arc::new(SqliteStore::open(dir).unwrap()),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => {
                Arc::new(switchyard_core::store::PgStore::connect(url).await.unwrap())
            }
        }
    }
}

fn client_key(id: &str, budget: Option<Budget>, rpm: Option<u64>) -> ClientKey {
    ClientKey {
        id: id.into(),
        prefix: "sk-sy-abcdef".into(),
        name: id.into(),
        team: Some("team_a".into()),
        models: Vec::new(),
        budget,
        rpm,
        tpm: None,
        max_parallel: None,
        expires_ms: None,
        admin: false,
        created_ms: 1,
        revoked_ms: None,
        owner: None,
    }
}

fn team(usd: f64) -> Team {
    Team {
        name: "team_a".into(),
        budget: Some(Budget {
            usd,
            window: BudgetWindow::Total,
        }),
        created_ms: 1,
    }
}

async fn stored(store: &dyn TaskStore, key: &ClientKey, team_usd: f64) {
    store.create_team(&team(team_usd)).await.unwrap();
    store.create_key(key, &hash_key(&key.id)).await.unwrap();
}

fn ask(key: &ClientKey, team_usd: f64, usd: f64) -> AdmissionAsk {
    AdmissionAsk {
        key: Some(key.clone()),
        team: Some(team(team_usd)),
        gateway_per_day: Some(100.0),
        reserve_usd: usd,
        input_tokens: 100,
    }
}

fn record(id: String, at_ms: i64, cost: f64) -> RequestRecord {
    RequestRecord {
        id,
        started_ms: at_ms,
        route: "m".into(),
        dialect: "chat_completions".into(),
        stream: false,
        provider: Some("p".into()),
        model: Some("m".into()),
        input_tokens: 100,
        output_tokens: 10,
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

fn total(usd: f64) -> Option<Budget> {
    Some(Budget {
        usd,
        window: BudgetWindow::Total,
    })
}

async fn allocators(place: &Place, n: usize, config: &AllocatorConfig) -> Vec<Arc<Allocator>> {
    let mut out = Vec::new();
    for _ in 0..n {
        let store = place.open().await;
        out.push(Arc::new(Allocator::start(store, config.clone()).unwrap()));
    }
    out
}

/// 60 requests at once over 3 allocators on a $0.05 key (each reserving $0.015, costing
/// $0.005): what is settled never passes the budget, and afterwards what is left is
/// admitted by each allocator in turn well within one lease, not stranded in another's slice.
async fn budget_race(place: Place) {
    let key = client_key("key_race", total(0.05), None);
    stored(&*place.open().await, &key, 1.0).await;
    let config = AllocatorConfig {
        lease_ms: 3_000,
        tick_ms: 200,
        max_share: 0.5,
        ..AllocatorConfig::default()
    };
    let alloc = allocators(&place, 3, &config).await;
    let mut calls = Vec::new();
    for i in 0..60 {
        let (a, ask) = (Arc::clone(&alloc[i % 3]), ask(&key, 1.0, 0.015));
        calls.push(tokio::spawn(async move {
            match a.admit(&ask).await {
                Admission::Admitted(admitted) => {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    let at = admitted.at_ms;
                    a.settle(admitted, record(format!("race{i}"), at, 0.005))
                        .await;
                    0.005
                }
                Admission::Refused(r) => {
                    assert!(matches!(r.reason, Refusal::Budget { .. }), "{r:?}");
                    0.0
                }
            }
        }));
    }
    let mut settled = 0.0;
    for c in calls {
        settled += c.await.unwrap();
    }
    for a in &alloc {
        a.flush().await;
    }
    let store = place.open().await;
    let spent = store
        .used_since(Some("key_race"), None, i64::MIN, now())
        .await
        .unwrap();
    assert!(
        (spent - settled).abs() < 1e-9,
        "store {spent}, settled {settled}"
    );
    assert!(
        (0.015 - 1e-9..=0.05 + 1e-9).contains(&spent),
        "spent {spent} of $0.05"
    );
    let left = 0.05 - spent;
    for (i, a) in alloc.iter().enumerate() {
        let started = Instant::now();
        let admitted = loop {
            if let Admission::Admitted(ad) = a.admit(&ask(&key, 1.0, left * 0.95)).await {
                break ad;
            }
            assert!(
                started.elapsed() < Duration::from_millis(3_000),
                "stranded for a lease"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let at = admitted.at_ms;
        a.settle(admitted, record(format!("last{i}"), at, 0.0))
            .await;
        eprintln!(
            "allocator {i}: the last ${left:.4} admitted after {:?}",
            started.elapsed()
        );
    }
    for a in alloc {
        Arc::into_inner(a).unwrap().shutdown().await.unwrap();
    }
    let spent = store
        .used_since(Some("key_race"), None, i64::MIN, now())
        .await
        .unwrap();
    assert!(spent <= 0.05 + 1e-9);
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// An allocator dropped without shutdown, as a killed process, holding a slice and a request
/// in flight: another allocator is refused what the slice holds until the lease expires, then
/// admitted, within the lease and a tick.
async fn killed_allocator(place: Place) {
    let key = client_key("key_killed", total(1.0), None);
    stored(&*place.open().await, &key, 10.0).await;
    let config = AllocatorConfig {
        lease_ms: 1_500,
        tick_ms: 100,
        max_share: 0.5,
        ..AllocatorConfig::default()
    };
    let mut alloc = allocators(&place, 2, &config).await;
    let b = alloc.pop().unwrap();
    let a = Arc::into_inner(alloc.pop().unwrap()).unwrap();
    let Admission::Admitted(in_flight) = a.admit(&ask(&key, 10.0, 0.3)).await else {
        panic!("the first request fits");
    };
    drop(in_flight);
    drop(a);
    let killed = Instant::now();
    let Admission::Refused(r) = b.admit(&ask(&key, 10.0, 0.5)).await else {
        panic!("the killed process's slice still counts");
    };
    assert!(matches!(r.reason, Refusal::Budget { .. }), "{r:?}");
    let admitted = loop {
        if let Admission::Admitted(ad) = b.admit(&ask(&key, 10.0, 0.5)).await {
            break ad;
        }
        assert!(
            killed.elapsed() < Duration::from_millis(2_500),
            "the slice never came back"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let back = killed.elapsed();
    assert!(
        back >= Duration::from_millis(500),
        "came back after {back:?}, before expiry"
    );
    let at = admitted.at_ms;
    b.settle(admitted, record("killed_b".into(), at, 0.5)).await;
    Arc::into_inner(b).unwrap().shutdown().await.unwrap();
    let spent = (place.open().await)
        .used_since(Some("key_killed"), None, i64::MIN, now())
        .await
        .unwrap();
    assert!((spent - 0.5).abs() < 1e-9, "{spent}");
}

/// Three allocators on a key of 10 requests a minute, on one clock moved by hand through
/// three minutes of attempts: no sliding minute holds more than 10 admitted requests, and
/// most of the limit is used.
async fn rpm_across_three(place: Place) {
    let start = 40 * 86_400_000;
    let clock = AdmissionClock::manual(start);
    let key = client_key("key_rpm", None, Some(10));
    stored(&*place.open().await, &key, 10.0).await;
    let config = AllocatorConfig {
        tick_ms: 3_600_000,
        clock: clock.clone(),
        ..AllocatorConfig::default()
    };
    let alloc = allocators(&place, 3, &config).await;
    let (mut now, mut seed, mut admitted) = (start, 0x9e37_79b9_7f4a_7c15_u64, Vec::new());
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut renewed = start;
    while now < start + 180_000 {
        now += 100 + next(600) as i64;
        clock.set(now);
        let a = &alloc[next(3) as usize];
        if let Admission::Admitted(ad) = a.admit(&ask(&key, 10.0, 0.0)).await {
            admitted.push(ad.at_ms);
            let at = ad.at_ms;
            a.settle(ad, record(format!("rpm{}", admitted.len()), at, 0.0))
                .await;
        }
        if now - renewed >= 1_000 {
            renewed = now;
            for a in &alloc {
                a.renew_now().await;
            }
        }
    }
    for (i, t) in admitted.iter().enumerate() {
        let in_minute = admitted[..=i].iter().filter(|u| **u > t - 60_000).count();
        assert!(
            in_minute <= 10,
            "{in_minute} requests in the minute ending {t}"
        );
    }
    assert!(
        admitted.len() >= 24,
        "only {} of 30 admitted",
        admitted.len()
    );
    for a in alloc {
        Arc::into_inner(a).unwrap().shutdown().await.unwrap();
    }
}

/// A key revoked in the store is refused by an allocator holding its slice within a second,
/// on the background tick alone, and its slice is given back.
async fn revoked_within_a_second(place: Place) {
    let key = client_key("key_revoked", total(1.0), None);
    let store = place.open().await;
    stored(&*store, &key, 10.0).await;
    let a = Allocator::start(place.open().await, AllocatorConfig::default()).unwrap();
    let ad = match a.admit(&ask(&key, 10.0, 0.1)).await {
        Admission::Admitted(ad) => ad,
        Admission::Refused(r) => panic!("fits: {r:?}"),
    };
    let at = ad.at_ms;
    a.settle(ad, record("rev1".into(), at, 0.1)).await;
    a.flush().await;
    store.revoke_key("key_revoked", now()).await.unwrap();
    let revoked = Instant::now();
    loop {
        match a.admit(&ask(&key, 10.0, 0.1)).await {
            Admission::Refused(r) if r.reason == Refusal::Revoked => break,
            Admission::Admitted(ad) => {
                let at = ad.at_ms;
                a.settle(ad, record(format!("rev{at}"), at, 0.0)).await;
            }
            Admission::Refused(r) => panic!("{r:?}"),
        }
        assert!(
            revoked.elapsed() < Duration::from_millis(1_100),
            "still admitted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The tick that found it revoked shrank the key's slice to nothing.
    let probe = LeaseWant {
        scope: LeaseScope::Key,
        id: "key_revoked".into(),
        limit: 1.0,
        window: BudgetWindow::Total,
        want: 0.9,
        need: 0.9,
    };
    let t = now();
    let g = store.lease("probe", t, t + 1_000, &[probe]).await.unwrap()[0];
    assert!(g.full, "{g:?}");
    a.shutdown().await.unwrap();
}

/// A budget lowered in the store while two allocators hold slices of it leased under the old
/// limit binds them at their next request: what they settle after never passes the new limit.
async fn lowered_budget_binds_leased_slices(place: Place) {
    let key = client_key("key_lowered", total(10.0), None);
    let store = place.open().await;
    stored(&*store, &key, 100.0).await;
    let config = AllocatorConfig::default();
    let alloc = allocators(&place, 2, &config).await;
    let mut n = 0;
    let mut run = async |a: &Allocator, key: &ClientKey, times: usize| -> usize {
        let mut admitted = 0;
        for _ in 0..times {
            if let Admission::Admitted(ad) = a.admit(&ask(key, 100.0, 0.1)).await {
                let at = ad.at_ms;
                n += 1;
                a.settle(ad, record(format!("low{n}"), at, 0.1)).await;
                admitted += 1;
            }
        }
        a.flush().await;
        admitted
    };
    for a in &alloc {
        assert_eq!(run(a, &key, 3).await, 3);
    }
    let by = Actor {
        who: "test".into(),
        origin: "test".into(),
    };
    let lower = KeyChange::Update(KeyUpdate {
        budget: Some(total(0.8)),
        ..KeyUpdate::default()
    });
    let (_, lowered) = (store.change_key("key_lowered", &lower, &by, now()).await)
        .unwrap()
        .unwrap();
    let mut after = 0;
    for a in &alloc {
        after += run(a, &lowered, 5).await;
    }
    let spent = (store.used_since(Some("key_lowered"), None, i64::MIN, now()))
        .await
        .unwrap();
    assert!(spent <= 0.8 + 1e-9, "spent ${spent} past the lowered $0.8");
    assert!(
        after >= 1,
        "what was left of the lowered budget was never admitted"
    );
    for a in alloc {
        Arc::into_inner(a).unwrap().shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_lowered_budget_binds_leased_slices() {
    let dir = tempfile::tempdir().unwrap();
    lowered_budget_binds_leased_slices(Place::sqlite(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_budget_race() {
    let dir = tempfile::tempdir().unwrap();
    budget_race(Place::sqlite(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_killed_allocator() {
    let dir = tempfile::tempdir().unwrap();
    killed_allocator(Place::sqlite(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_rpm_across_three() {
    let dir = tempfile::tempdir().unwrap();
    rpm_across_three(Place::sqlite(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_revoked_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    revoked_within_a_second(Place::sqlite(&dir)).await;
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_lowered_budget_binds_leased_slices() {
        if let Some(place) = Place::postgres("alloc_lowered") {
            lowered_budget_binds_leased_slices(place).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_budget_race() {
        if let Some(place) = Place::postgres("alloc_race") {
            budget_race(place).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_killed_allocator() {
        if let Some(place) = Place::postgres("alloc_killed") {
            killed_allocator(place).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_rpm_across_three() {
        if let Some(place) = Place::postgres("alloc_rpm") {
            rpm_across_three(place).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_revoked_within_a_second() {
        if let Some(place) = Place::postgres("alloc_revoked") {
            revoked_within_a_second(place).await;
        }
    }
}
