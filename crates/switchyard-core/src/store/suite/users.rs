//! The suite's tests of users (SPEC R14.6b): every backend makes a user once per issuer and
//! subject, rewrites them at each sign-in, disables and enables them, carries a key's owner
//! through every key change, and audits each change in its own transaction without a secret.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use super::fixture::StoreFixture;
use crate::store::{
    Actor, Budget, BudgetWindow, ClientKey, CreateKeyError, HoldOutcome, HoldRequest, HoldScope,
    KeyEdit, LeaseScope, LeaseWant, NewKeyRequest, Role, SignIn, TaskStore, UsageBy, UserEdit,
    UserUpdate, create_client_key_by, hash_key, revoke_client_key, rotate_client_key,
    update_client_key, update_user,
};

fn jane() -> Actor {
    Actor {
        who: "jane@example.com".into(),
        origin: "127.0.0.1".into(),
    }
}

/// Jane's sign-in at `at_ms` as a member of `ops` with $5 a day.
pub(crate) fn sign_in(at_ms: i64) -> SignIn {
    SignIn {
        issuer: "https://idp.example".into(),
        subject: "jane-0001".into(),
        email: Some("jane@example.com".into()),
        name: Some("Jane".into()),
        role: Role::Member,
        team: None,
        models: vec!["gpt-*".into()],
        budget: Budget::parse("5/day"),
        at_ms,
    }
}

/// A user is made at the first sign-in and rewritten by the next; `users update` and a
/// disable are audited, and a later sign-in enables again.
pub(crate) async fn a_sign_in_makes_or_rewrites_one_user_audited(store: &dyn TaskStore) {
    let by = jane();
    let first = store.sign_in_user(&sign_in(1_000), &by).await.unwrap();
    assert!(first.id.starts_with("usr_") && first.id.len() == 20);
    assert_eq!(store.user(&first.id).await.unwrap(), Some(first.clone()));
    let promoted = SignIn {
        role: Role::Admin,
        budget: Budget::parse("20/month"),
        ..sign_in(2_000)
    };
    let second = store.sign_in_user(&promoted, &by).await.unwrap();
    assert_eq!(
        (second.id.as_str(), second.created_ms),
        (first.id.as_str(), 1_000)
    );
    assert_eq!((second.role, second.signed_in_ms), (Role::Admin, 2_000));
    let same = SignIn {
        at_ms: 3_000,
        ..promoted.clone()
    };
    let same = store.sign_in_user(&same, &by).await.unwrap();
    assert_eq!(same.signed_in_ms, 3_000);
    assert_eq!(store.users().await.unwrap().len(), 1);
    let edit = UserEdit {
        budget: Some("none".into()),
        role: Some("viewer".into()),
        ..UserEdit::default()
    };
    let (_, edited) = update_user(store, &first.id, &edit, &by, 4_000)
        .await
        .unwrap();
    assert_eq!((edited.budget, edited.role), (None, Role::Viewer));
    assert!(store.disable_user(&first.id, 5_000, &by).await.unwrap());
    assert!(store.disable_user(&first.id, 6_000, &by).await.unwrap());
    assert_eq!(
        store.user(&first.id).await.unwrap().unwrap().disabled_ms,
        Some(5_000)
    );
    assert!(
        !store
            .disable_user("usr_0000000000000000", 6_000, &by)
            .await
            .unwrap()
    );
    let back = store.sign_in_user(&sign_in(7_000), &by).await.unwrap();
    assert_eq!((back.disabled_ms, back.role), (None, Role::Member));
    let rows = store.audit_log(0, 100).await.unwrap();
    let actions: Vec<&str> = rows.iter().rev().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "user.create",
            "user.update",
            "user.update",
            "user.disable",
            "user.enable"
        ]
    );
    assert_eq!(
        rows[3].detail,
        "role: member → admin; budget: $5/day → $20/month"
    );
    let bad = UserEdit {
        role: Some("owner".into()),
        ..UserEdit::default()
    };
    assert!(
        update_user(store, &first.id, &bad, &by, 8_000)
            .await
            .is_err()
    );
}

/// A key made for a user names its owner through every change; a missing or disabled owner
/// makes no key.
pub(crate) async fn a_key_names_its_owner_through_every_change(store: &dyn TaskStore) {
    let by = jane();
    let user = store.sign_in_user(&sign_in(1_000), &by).await.unwrap();
    let new = NewKeyRequest {
        name: "laptop".into(),
        owner: Some(user.id.clone()),
        ..NewKeyRequest::default()
    };
    let made = create_client_key_by(store, &new, &by, 2_000).await.unwrap();
    assert_eq!(made.key.owner.as_deref(), Some(user.id.as_str()));
    let found = store
        .key_by_hash(&hash_key(&made.secret.key))
        .await
        .unwrap();
    assert_eq!(found.unwrap().owner, made.key.owner);
    let edit = KeyEdit {
        rpm: Some("5".into()),
        ..KeyEdit::default()
    };
    let (_, edited) = update_client_key(store, &made.key.id, &edit, &by, 3_000)
        .await
        .unwrap();
    assert_eq!(edited.owner, made.key.owner);
    let (secret, rotated) = rotate_client_key(store, &made.key.id, &by, 4_000)
        .await
        .unwrap();
    assert_eq!(rotated.owner, made.key.owner);
    let revoked = revoke_client_key(store, &made.key.id, &by, 5_000)
        .await
        .unwrap();
    assert_eq!(revoked.owner, made.key.owner);
    assert_eq!(store.client_keys().await.unwrap()[0].owner, made.key.owner);
    let rows = store.audit_log(0, 100).await.unwrap();
    assert!(
        rows[3].detail.contains(&format!("owner: {}", user.id)),
        "{}",
        rows[3].detail
    );
    let text = format!("{rows:?}");
    for secret in [
        &made.secret.key,
        &made.secret.hash,
        &secret.key,
        &secret.hash,
    ] {
        assert!(!text.contains(secret.as_str()), "a secret in the audit log");
    }
    store.disable_user(&user.id, 6_000, &by).await.unwrap();
    for (owner, says) in [
        (user.id.as_str(), "disabled"),
        ("usr_ffffffffffffffff", "no user"),
    ] {
        let new = NewKeyRequest {
            owner: Some(owner.into()),
            ..new.clone()
        };
        match create_client_key_by(store, &new, &by, 7_000).await {
            Err(CreateKeyError::Invalid(s)) => assert!(s.contains(says), "{s}"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(store.client_keys().await.unwrap().len(), 1);
}

/// First sign-ins of one person on several connections at once make one user and one row.
pub(crate) async fn first_sign_ins_at_once_make_one_user(fixture: &dyn StoreFixture) {
    let stores: Vec<Arc<dyn TaskStore>> = (0..4).map(|_| fixture.open()).collect();
    let tasks: Vec<_> = (stores.iter().enumerate())
        .map(|(i, store)| {
            let store = Arc::clone(store);
            tokio::spawn(async move {
                let s = sign_in(1_000 + i as i64);
                store.sign_in_user(&s, &jane()).await.unwrap()
            })
        })
        .collect();
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.unwrap().id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1);
    let store = &stores[0];
    assert_eq!(store.users().await.unwrap().len(), 1);
    let rows = store.audit_log(0, 100).await.unwrap();
    assert_eq!(rows.iter().filter(|r| r.action == "user.create").count(), 1);
}

/// Per-request holds of two keys of one user count against the user's budget together, beside
/// a user slice leased by a process; their settled amounts reach the user's totals, and a
/// changed user budget ends the user's leases.
pub(crate) async fn holds_of_two_keys_share_their_owners_budget(store: &dyn TaskStore) {
    let by = jane();
    let signed = SignIn {
        budget: Budget::parse("1"),
        ..sign_in(1_000)
    };
    let user = store.sign_in_user(&signed, &by).await.unwrap();
    let keys: Vec<ClientKey> = ["key_a", "key_b"]
        .map(|id| ClientKey {
            owner: Some(user.id.clone()),
            ..super::keys::key(id, &format!("sk-sy-{id}0"), None, None)
        })
        .to_vec();
    for k in &keys {
        store.create_key(k, &hash_key(&k.id)).await.unwrap();
    }
    let now = 2_000_000;
    let want = |amount: f64| LeaseWant {
        scope: LeaseScope::User,
        id: user.id.clone(),
        limit: 1.0,
        window: BudgetWindow::Total,
        want: amount,
        need: amount,
    };
    let leased = store
        .lease("gw_a", now, now + 60_000, &[want(0.35)])
        .await
        .unwrap();
    assert!(leased[0].full, "{leased:?}");
    let hold = |i: usize| HoldRequest {
        id: format!("req{i}"),
        key: keys[i % 2].clone(),
        team: None,
        user: Some(user.clone()),
        amount_usd: 0.3,
        gateway_per_day: None,
        now_ms: now,
        expires_ms: now + 60_000,
        asked: crate::store::Asked::default(),
    };
    for i in 0..2 {
        assert_eq!(store.hold(&hold(i)).await.unwrap(), HoldOutcome::Held);
    }
    match store.hold(&hold(2)).await.unwrap() {
        HoldOutcome::Refused { scope, left, .. } => {
            assert_eq!(scope, HoldScope::User);
            assert!((left - 0.05).abs() < 1e-9, "{left}");
        }
        held => panic!("a third hold passed the user's $1 beside the lease: {held:?}"),
    }
    let records: Vec<_> = (0..2)
        .map(|i| super::keys::record(&format!("req{i}"), &keys[i % 2], Some(0.1), true))
        .collect();
    store.record_requests(&records).await.unwrap();
    let used = store
        .user_used_since(&user.id, i64::MIN, now)
        .await
        .unwrap();
    assert!((used - 0.2).abs() < 1e-9, "{used}");
    assert!(
        store
            .check_totals(false)
            .await
            .unwrap()
            .differences
            .is_empty()
    );
    let lower = UserUpdate {
        budget: Some(Budget::parse("0.5")),
        ..UserUpdate::default()
    };
    store.change_user(&user.id, &lower, &by, now).await.unwrap();
    // The lease taken under $1 is gone: $0.3 of $0.5 is free to another process.
    let other = LeaseWant {
        limit: 0.5,
        ..want(0.3)
    };
    let after = store
        .lease("gw_b", now, now + 60_000, &[other])
        .await
        .unwrap();
    assert!(after[0].full, "{after:?}");
}

/// Another person's sign-in, `joe`, with $3 a day.
fn joe(at_ms: i64) -> SignIn {
    SignIn {
        subject: "joe-0002".into(),
        email: Some("joe@example.com".into()),
        name: Some("Joe".into()),
        budget: Budget::parse("3/day"),
        ..sign_in(at_ms)
    }
}

/// A request of `key` as the gateway takes it: a hold against its owner `user` at `now`,
/// settled by its record at `cost`.
async fn spend(store: &dyn TaskStore, id: &str, key: &ClientKey, cost: f64, now: i64) {
    let user = match &key.owner {
        Some(owner) => store.user(owner).await.unwrap(),
        None => None,
    };
    let hold = HoldRequest {
        id: id.into(),
        key: key.clone(),
        team: None,
        user,
        amount_usd: 0.5,
        gateway_per_day: None,
        now_ms: now,
        expires_ms: now + 60_000,
        asked: crate::store::Asked::default(),
    };
    assert_eq!(store.hold(&hold).await.unwrap(), HoldOutcome::Held);
    let record = super::keys::record(id, key, Some(cost), true);
    store.record_requests(&[record]).await.unwrap();
}

/// `keys update --owner` moves a key's spend from then on to the new owner's budget, audited
/// as `owner: old → new`; what it spent before stays the old owner's, in their budget and in
/// `usage --by user`. An unknown or disabled user is refused and changes nothing; `none` clears.
pub(crate) async fn changing_a_keys_owner_moves_its_later_spend(store: &dyn TaskStore) {
    let by = jane();
    let (now, day) = (2_000_000, i64::MIN);
    let jane_user = store.sign_in_user(&sign_in(1_000), &by).await.unwrap();
    let joe_user = store.sign_in_user(&joe(1_000), &by).await.unwrap();
    let gone = SignIn {
        subject: "gone-0003".into(),
        ..sign_in(1_000)
    };
    let gone = store.sign_in_user(&gone, &by).await.unwrap();
    store.disable_user(&gone.id, 1_500, &by).await.unwrap();
    let new = NewKeyRequest {
        name: "laptop".into(),
        owner: Some(jane_user.id.clone()),
        ..NewKeyRequest::default()
    };
    let made = create_client_key_by(store, &new, &by, 2_000).await.unwrap();
    spend(store, "req_jane", &made.key, 0.1, now).await;
    let rows_before = store.audit_log(0, 100).await.unwrap().len();
    for (owner, says) in [
        (gone.id.as_str(), "disabled"),
        ("usr_ffffffffffffffff", "no user"),
    ] {
        let edit = KeyEdit {
            owner: Some(owner.into()),
            ..KeyEdit::default()
        };
        match update_client_key(store, &made.key.id, &edit, &by, 3_000).await {
            Err(CreateKeyError::Invalid(s)) => assert!(s.contains(says), "{s}"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(store.audit_log(0, 100).await.unwrap().len(), rows_before);
    let to_joe = KeyEdit {
        owner: Some(joe_user.id.clone()),
        ..KeyEdit::default()
    };
    let (_, moved) = update_client_key(store, &made.key.id, &to_joe, &by, 4_000)
        .await
        .unwrap();
    let found = store.key_by_hash(&hash_key(&made.secret.key)).await;
    assert_eq!(found.unwrap().unwrap().owner, Some(joe_user.id.clone()));
    let detail = &store.audit_log(0, 1).await.unwrap()[0].detail;
    assert_eq!(
        detail,
        &format!("owner: {} → {}", jane_user.id, joe_user.id)
    );
    spend(store, "req_joe", &moved, 0.2, now).await;
    let used = |id: String| async move { store.user_used_since(&id, day, now).await.unwrap() };
    assert!((used(jane_user.id.clone()).await - 0.1).abs() < 1e-9);
    assert!((used(joe_user.id.clone()).await - 0.2).abs() < 1e-9);
    let usage = store.usage(UsageBy::User, i64::MIN).await.unwrap();
    let by_user: Vec<(Option<&str>, f64)> = (usage.iter())
        .map(|r| (r.group.as_deref(), (r.cost_usd * 1e6).round() / 1e6))
        .collect();
    let mut expected = vec![
        (Some(jane_user.id.as_str()), 0.1),
        (Some(joe_user.id.as_str()), 0.2),
    ];
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(by_user, expected);
    let totals = store.check_totals(false).await.unwrap();
    assert!(totals.differences.is_empty(), "{totals:?}");
    let clear = KeyEdit {
        owner: Some("none".into()),
        ..KeyEdit::default()
    };
    let (_, cleared) = update_client_key(store, &made.key.id, &clear, &by, 5_000)
        .await
        .unwrap();
    assert_eq!(cleared.owner, None);
    let detail = &store.audit_log(0, 1).await.unwrap()[0].detail;
    assert_eq!(detail, &format!("owner: {} → none", joe_user.id));
}
