//! The suite's tests of client keys, teams and budget holds (SPEC R14.6, R14.7): every backend
//! keeps a key as its hash and prefix, revokes and rotates it, keeps teams, and takes holds
//! atomically against the key's, the team's and the gateway's caps — from many connections at
//! once — settling them with the request's record.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use super::fixture::StoreFixture;
use crate::store::{
    Budget, ClientKey, HoldOutcome, HoldRequest, HoldScope, RequestOutcome, RequestRecord,
    StoreError, TaskStore, Team, UsageBy, generate_key, hash_key,
};

/// A client key with a per-minute limit of 60 and at most 3 requests in flight; the unit tests
/// of the hold and admission rules use it too.
pub(crate) fn key(id: &str, prefix: &str, team: Option<&str>, budget: Option<&str>) -> ClientKey {
    ClientKey {
        id: id.into(),
        prefix: prefix.into(),
        name: format!("bot {id}"),
        team: team.map(Into::into),
        models: vec!["claude-*".into(), "gpt-4.1".into()],
        budget: budget.and_then(Budget::parse),
        rpm: Some(60),
        tpm: None,
        max_parallel: Some(3),
        expires_ms: Some(9_000_000_000_000),
        admin: false,
        created_ms: 1_000,
        revoked_ms: None,
        owner: None,
    }
}

fn hold(id: &str, key: &ClientKey, team: Option<&Team>, usd: f64, now: i64) -> HoldRequest {
    HoldRequest {
        id: id.into(),
        key: key.clone(),
        team: team.cloned(),
        user: None,
        amount_usd: usd,
        gateway_per_day: None,
        now_ms: now,
        expires_ms: now + 60_000,
        asked: crate::store::Asked::default(),
    }
}

pub(crate) fn record(
    id: &str,
    key: &ClientKey,
    cost: Option<f64>,
    provider: bool,
) -> RequestRecord {
    RequestRecord {
        id: id.into(),
        started_ms: 2_000_000,
        route: "claude-*".into(),
        dialect: "messages".into(),
        stream: true,
        provider: provider.then(|| "anthropic".into()),
        model: provider.then(|| "claude-sonnet-4-5".into()),
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost_usd: cost,
        first_token_ms: None,
        duration_ms: 100,
        outcome: if provider {
            RequestOutcome::Ok
        } else {
            RequestOutcome::Error("server".into())
        },
        key_id: Some(key.id.clone()),
        team: key.team.clone(),
    }
}

pub(crate) async fn client_keys_are_kept_as_hashes_revoked_and_rotated(store: &dyn TaskStore) {
    assert!(!store.has_client_keys().await.unwrap());
    let secret = generate_key().unwrap();
    let k = key("key_1", &secret.prefix, None, Some("5/day"));
    store.create_key(&k, &secret.hash).await.unwrap();
    let again = store.create_key(&k, &hash_key("other")).await;
    assert!(
        matches!(again, Err(StoreError::Conflict { .. })),
        "{again:?}"
    );
    assert!(store.has_client_keys().await.unwrap());
    assert_eq!(
        store.key_by_hash(&secret.hash).await.unwrap(),
        Some(k.clone())
    );
    assert_eq!(
        store
            .key_by_hash(&hash_key(&secret.key[1..]))
            .await
            .unwrap(),
        None
    );
    assert_eq!(store.client_keys().await.unwrap(), vec![k.clone()]);

    let fresh = generate_key().unwrap();
    assert!(
        store
            .rotate_key("key_1", &fresh.hash, &fresh.prefix)
            .await
            .unwrap()
    );
    assert_eq!(store.key_by_hash(&secret.hash).await.unwrap(), None);
    let rotated = store.key_by_hash(&fresh.hash).await.unwrap().unwrap();
    assert_eq!(rotated.prefix, fresh.prefix);
    assert!(
        !store
            .rotate_key("key_none", &fresh.hash, "x")
            .await
            .unwrap()
    );

    assert!(store.revoke_key("key_1", 5_000).await.unwrap());
    assert!(store.revoke_key("key_1", 6_000).await.unwrap());
    let revoked = store.key_by_hash(&fresh.hash).await.unwrap().unwrap();
    assert_eq!(
        revoked.revoked_ms,
        Some(5_000),
        "the first revocation stands"
    );
    assert!(!store.has_client_keys().await.unwrap());
    assert!(
        !store
            .rotate_key("key_1", &hash_key("x"), "x")
            .await
            .unwrap()
    );
    assert!(!store.revoke_key("key_none", 1).await.unwrap());

    let team = Team {
        name: "core".into(),
        budget: Budget::parse("20/month"),
        created_ms: 7,
    };
    store.create_team(&team).await.unwrap();
    assert!(matches!(
        store.create_team(&team).await,
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(store.teams().await.unwrap(), vec![team.clone()]);
    assert_eq!(store.team("core").await.unwrap(), Some(team));
    assert_eq!(store.team("nope").await.unwrap(), None);
}

pub(crate) async fn holds_respect_key_team_gateway_and_parallel_caps_and_settle(
    store: &dyn TaskStore,
) {
    let now = 2_000_000;
    let team = Team {
        name: "core".into(),
        budget: Budget::parse("1.5/day"),
        created_ms: 1,
    };
    let a = key("key_a", "sk-sy-aaaaaa", Some("core"), Some("1/day"));
    let b = key("key_b", "sk-sy-bbbbbb", Some("core"), None);
    for k in [&a, &b] {
        store.create_key(k, &hash_key(&k.id)).await.unwrap();
    }
    store.create_team(&team).await.unwrap();
    let held = |o: HoldOutcome| assert_eq!(o, HoldOutcome::Held);
    held(
        store
            .hold(&hold("r1", &a, Some(&team), 0.4, now))
            .await
            .unwrap(),
    );
    held(
        store
            .hold(&hold("r2", &a, Some(&team), 0.4, now))
            .await
            .unwrap(),
    );
    // The key has 0.2 left.
    let refused = store
        .hold(&hold("r3", &a, Some(&team), 0.4, now))
        .await
        .unwrap();
    let HoldOutcome::Refused {
        scope,
        left,
        resets_ms,
        ..
    } = refused
    else {
        panic!("{refused:?}")
    };
    assert_eq!(scope, HoldScope::Key);
    assert!((left - 0.2).abs() < 1e-9, "{left}");
    assert_eq!(resets_ms, Some(86_400_000));
    // The exact cost replaces a reservation; a request no provider answered releases it.
    store
        .record_request(&record("r1", &a, Some(0.1), true))
        .await
        .unwrap();
    store
        .record_request(&record("r2", &a, None, false))
        .await
        .unwrap();
    assert!((store.used_since(Some("key_a"), None, 0, now).await.unwrap() - 0.1).abs() < 1e-9);
    held(
        store
            .hold(&hold("r3", &a, Some(&team), 0.4, now))
            .await
            .unwrap(),
    );
    // A stream cut without usage keeps its reservation.
    store
        .record_request(&record("r3", &a, None, true))
        .await
        .unwrap();
    assert!((store.used_since(Some("key_a"), None, 0, now).await.unwrap() - 0.5).abs() < 1e-9);
    assert!((store.spend_between(0, i64::MAX).await.unwrap() - 0.5).abs() < 1e-9);
    // The team (1.5/day) has 1.0 left: key b may hold 0.9, not 0.2 more after that.
    held(
        store
            .hold(&hold("r4", &b, Some(&team), 0.9, now))
            .await
            .unwrap(),
    );
    let refused = store
        .hold(&hold("r5", &b, Some(&team), 0.2, now))
        .await
        .unwrap();
    assert!(
        matches!(
            refused,
            HoldOutcome::Refused {
                scope: HoldScope::Team,
                ..
            }
        ),
        "{refused:?}"
    );
    // A hold whose process died stops counting at its lease's end.
    let later = now + 61_000;
    held(
        store
            .hold(&hold("r5", &b, Some(&team), 0.2, later))
            .await
            .unwrap(),
    );
    // Parallel: b has r5 open; with max 3, two more fit and the third does not.
    held(store.hold(&hold("p1", &b, None, 0.0, later)).await.unwrap());
    held(store.hold(&hold("p2", &b, None, 0.0, later)).await.unwrap());
    let refused = store.hold(&hold("p3", &b, None, 0.0, later)).await.unwrap();
    assert!(matches!(
        refused,
        HoldOutcome::Refused {
            scope: HoldScope::Parallel,
            ..
        }
    ));
    // The gateway-wide daily cap counts the spend and every open hold.
    let mut g = hold(
        "g1",
        &key("key_c", "sk-sy-cccccc", None, None),
        None,
        0.1,
        later,
    );
    g.gateway_per_day = Some(0.6);
    let refused = store.hold(&g).await.unwrap();
    assert!(
        matches!(
            refused,
            HoldOutcome::Refused {
                scope: HoldScope::Gateway,
                ..
            }
        ),
        "{refused:?}"
    );

    // The request log grouped (SPEC R14.8): r1 (0.1), r2 (unpriced, failed: 0), r3 (unpriced:
    // charged its reservation, 0.4, as the key's budget counts it).
    let by_key = store.usage(UsageBy::Key, 0).await.unwrap();
    assert_eq!(by_key.len(), 1, "{by_key:?}");
    let row = &by_key[0];
    assert_eq!(
        (row.group.as_deref(), row.requests, row.unpriced),
        (Some("key_a"), 3, 2)
    );
    assert_eq!((row.input_tokens, row.output_tokens), (30, 15));
    assert!((row.cost_usd - 0.5).abs() < 1e-9, "{row:?}");
    let by_model = store.usage(UsageBy::Model, 0).await.unwrap();
    let groups: Vec<_> = by_model
        .iter()
        .map(|r| (r.group.clone(), r.requests))
        .collect();
    assert_eq!(
        groups,
        vec![(Some("anthropic:claude-sonnet-4-5".into()), 2), (None, 1)]
    );
    let by_day = store.usage(UsageBy::Day, 0).await.unwrap();
    assert_eq!(by_day[0].group.as_deref(), Some("0"));
    assert!(
        store
            .usage(UsageBy::Team, 3_000_000)
            .await
            .unwrap()
            .is_empty()
    );
}

pub(crate) async fn holds_taken_at_once_by_many_connections_never_pass_the_budget(
    fixture: &dyn StoreFixture,
) {
    let k = key("key_race", "sk-sy-racerr", None, Some("1/total"));
    let k = ClientKey {
        max_parallel: None,
        ..k
    };
    let first = fixture.open();
    first.create_key(&k, &hash_key("race")).await.unwrap();
    let stores: Vec<Arc<dyn TaskStore>> = (0..4).map(|_| fixture.open()).collect();
    let mut tasks = Vec::new();
    for i in 0..24 {
        let store = Arc::clone(&stores[i % stores.len()]);
        let req = hold(&format!("race{i}"), &k, None, 0.3, 2_000_000);
        tasks.push(tokio::spawn(async move { store.hold(&req).await.unwrap() }));
    }
    let mut held = 0;
    for t in tasks {
        if t.await.unwrap() == HoldOutcome::Held {
            held += 1;
        }
    }
    assert_eq!(held, 3, "0.3 fits 3 times into 1.0");
}

/// SPEC R14.8: a batch of records is written whole — its rows, its holds settled (each at its
/// exact cost, nothing, or its reservation), its spend — or, when one id is taken, not at
/// all; pruning deletes only the log's old rows, never a hold or a spend row.
pub(crate) async fn a_batch_of_records_settles_its_holds_whole_and_pruning_keeps_budgets(
    store: &dyn TaskStore,
) {
    let now = 3_000_000;
    let a = key("key_a", "sk-sy-aaaaaa", None, Some("1/day"));
    store.create_key(&a, &hash_key("a")).await.unwrap();
    for id in ["b1", "b2", "b3"] {
        let held = store.hold(&hold(id, &a, None, 0.25, now)).await.unwrap();
        assert_eq!(held, HoldOutcome::Held);
    }
    let unkeyed = RequestRecord {
        key_id: None,
        started_ms: 100,
        ..record("b0", &a, Some(0.01), true)
    };
    let batch = vec![
        unkeyed.clone(),
        record("b1", &a, Some(0.1), true),
        record("b2", &a, None, false),
        record("b3", &a, None, true),
    ];
    // A batch holding an id already recorded writes nothing.
    store.record_request(&unkeyed).await.unwrap();
    let refused = store.record_requests(&batch).await;
    assert!(
        matches!(refused, Err(StoreError::Conflict { .. })),
        "{refused:?}"
    );
    assert_eq!(store.recent_requests(0).await.unwrap().len(), 1);
    let used = store.used_since(Some("key_a"), None, 0, now).await.unwrap();
    assert!(
        (used - 0.75).abs() < 1e-9,
        "every hold still counts: {used}"
    );
    // The rest written as one batch: exact cost 0.1, nothing, the reservation 0.25.
    store.record_requests(&batch[1..]).await.unwrap();
    let mut ids: Vec<String> = (store.recent_requests(0).await.unwrap())
        .into_iter()
        .map(|r| r.id)
        .collect();
    ids.sort();
    assert_eq!(ids, ["b0", "b1", "b2", "b3"]);
    let used = store.used_since(Some("key_a"), None, 0, now).await.unwrap();
    assert!((used - 0.35).abs() < 1e-9, "{used}");
    let spent = store.spend_between(0, i64::MAX).await.unwrap();
    assert!((spent - 0.36).abs() < 1e-9, "{spent}");
    assert!(store.record_requests(&[]).await.is_ok());
    // Pruning before 1,000,000 ms deletes b0's row only; the holds and spend stay.
    assert_eq!(store.prune_requests(1_000_000, 10).await.unwrap(), 1);
    assert_eq!(store.prune_requests(1_000_000, 10).await.unwrap(), 0);
    assert_eq!(store.recent_requests(0).await.unwrap().len(), 3);
    let used = store.used_since(Some("key_a"), None, 0, now).await.unwrap();
    assert!((used - 0.35).abs() < 1e-9, "{used}");
    let spent = store.spend_between(0, i64::MAX).await.unwrap();
    assert!((spent - 0.36).abs() < 1e-9, "{spent}");
}
