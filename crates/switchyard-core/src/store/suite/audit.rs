//! The suite's tests of the audit log (SPEC R14.6a): every backend writes a change to a key or
//! team and its audit row together, names what changed old → new, ends the leases of a changed
//! budget, and keeps no secret in a row.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::store::{
    Actor, AuditEntry, Budget, BudgetWindow, KeyChange, KeyEdit, KeyUpdate, LeaseScope, LeaseWant,
    NewKeyRequest, TaskStore, create_client_key_by, create_team_by, revoke_client_key,
    rotate_client_key, update_client_key, update_team,
};

fn alice() -> Actor {
    Actor {
        who: "alice".into(),
        origin: "cli@host".into(),
    }
}

/// Every change, made through the one rule the CLI and the dashboard run, appears once, in
/// order, with its actor and what changed; the secrets and hashes appear in none.
pub(crate) async fn every_change_is_audited_once_with_its_actor_and_no_secret(
    store: &dyn TaskStore,
) {
    let by = alice();
    create_team_by(store, "ops", Some("10/month"), (&by, 1_000))
        .await
        .unwrap();
    let new = NewKeyRequest {
        name: "bot".into(),
        budget: Some("5/day".into()),
        ..NewKeyRequest::default()
    };
    let made = create_client_key_by(store, &new, &by, 2_000).await.unwrap();
    let id = made.key.id.clone();
    let edit = KeyEdit {
        budget: Some("1/day".into()),
        rpm: Some("10".into()),
        team: Some("ops".into()),
        models: Some("gpt-*".into()),
        ..KeyEdit::default()
    };
    let (old, now) = update_client_key(store, &id, &edit, &by, 3_000)
        .await
        .unwrap();
    assert_eq!((old.rpm, now.rpm), (None, Some(10)));
    assert_eq!(store.client_keys().await.unwrap()[0], now);
    let (_, team) = update_team(store, "ops", "none", &by, 4_000).await.unwrap();
    assert_eq!(team.budget, None);
    assert_eq!(store.team("ops").await.unwrap().unwrap().budget, None);
    let (secret, _) = rotate_client_key(store, &id, &by, 5_000).await.unwrap();
    revoke_client_key(store, &id, &by, 6_000).await.unwrap();
    let late = KeyEdit {
        rpm: Some("5".into()),
        ..KeyEdit::default()
    };
    assert!(
        update_client_key(store, &id, &late, &by, 7_000)
            .await
            .is_err()
    );
    let rows = store.audit_log(0, 100).await.unwrap();
    let actions: Vec<&str> = rows.iter().rev().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "team.create",
            "key.create",
            "key.update",
            "team.update",
            "key.rotate",
            "key.revoke"
        ]
    );
    assert!(
        rows.iter()
            .all(|e| e.actor == "alice" && e.origin == "cli@host")
    );
    let update = &rows[3];
    assert_eq!(update.ts_ms, 3_000);
    assert_eq!(
        update.detail,
        "team: none → ops; models: * → gpt-*; budget: $5/day → $1/day; rpm: none → 10"
    );
    assert_eq!(rows[2].detail, "budget: $10/month → none");
    let text = format!("{rows:?}");
    for secret in [
        &made.secret.key,
        &made.secret.hash,
        &secret.key,
        &secret.hash,
    ] {
        assert!(!text.contains(secret.as_str()), "a secret in the audit log");
    }
    assert_eq!(store.audit_log(4_000, 100).await.unwrap().len(), 3);
    assert_eq!(store.audit_log(0, 2).await.unwrap(), rows[..2]);
}

/// A sign-in's row stands alone; a change to a missing key or team writes nothing.
pub(crate) async fn a_change_that_finds_nothing_writes_no_row(store: &dyn TaskStore) {
    let by = alice();
    let change = KeyChange::Update(KeyUpdate {
        rpm: Some(Some(3)),
        ..KeyUpdate::default()
    });
    assert_eq!(
        store.change_key("key_none", &change, &by, 1).await.unwrap(),
        None
    );
    assert_eq!(store.change_team("none", None, &by, 1).await.unwrap(), None);
    let entry = AuditEntry::new(
        &by,
        9,
        "signin.failed",
        "dashboard".into(),
        "an unknown key".into(),
    );
    store.append_audit(&entry).await.unwrap();
    assert_eq!(store.audit_log(i64::MIN, 10).await.unwrap(), [entry]);
}

/// A key's budget changed ends every holder's lease of it, so no slice leased under the old
/// limit outlives the edit; a change to other fields leaves the leases.
pub(crate) async fn a_changed_budget_ends_the_leases_of_it(store: &dyn TaskStore) {
    let by = alice();
    let new = NewKeyRequest {
        name: "leased".into(),
        budget: Some("10".into()),
        ..NewKeyRequest::default()
    };
    let id = create_client_key_by(store, &new, &by, 1)
        .await
        .unwrap()
        .key
        .id;
    let want = |limit: f64, amount: f64| LeaseWant {
        scope: LeaseScope::Key,
        id: id.clone(),
        limit,
        window: BudgetWindow::Total,
        want: amount,
        need: amount,
    };
    let now = crate::store::now_ms();
    let held = store
        .lease("gw_a", now, now + 60_000, &[want(10.0, 6.0)])
        .await
        .unwrap();
    assert!(held[0].full);
    let rename = KeyChange::Update(KeyUpdate {
        name: Some("renamed".into()),
        ..KeyUpdate::default()
    });
    store
        .change_key(&id, &rename, &by, now)
        .await
        .unwrap()
        .unwrap();
    let other = store
        .lease("gw_b", now, now + 60_000, &[want(10.0, 6.0)])
        .await
        .unwrap();
    assert!(!other[0].full, "the rename ended a lease");
    let lower = KeyChange::Update(KeyUpdate {
        budget: Some(Budget::parse("8")),
        ..KeyUpdate::default()
    });
    store
        .change_key(&id, &lower, &by, now)
        .await
        .unwrap()
        .unwrap();
    let after = store
        .lease("gw_b", now, now + 60_000, &[want(8.0, 7.0)])
        .await
        .unwrap();
    assert!(
        after[0].full,
        "a lease taken under the old budget still counts: {after:?}"
    );
}

/// Pruning deletes only rows written before its time, oldest first, at most as many as asked,
/// and leaves the newer rows as they were.
pub(crate) async fn pruning_the_audit_log_deletes_only_older_rows_oldest_first(
    store: &dyn TaskStore,
) {
    let by = alice();
    for (at, target) in [(1_000, "a"), (2_000, "b"), (3_000, "c"), (4_000, "d")] {
        let entry = AuditEntry::new(&by, at, "signin", target.into(), String::new());
        store.append_audit(&entry).await.unwrap();
    }
    assert_eq!(store.prune_audit(3_500, 2).await.unwrap(), 2);
    let left: Vec<String> = (store.audit_log(0, 10).await.unwrap())
        .into_iter()
        .map(|e| e.target)
        .collect();
    assert_eq!(left, ["d", "c"], "the two oldest go first");
    assert_eq!(store.prune_audit(3_500, 10).await.unwrap(), 1);
    assert_eq!(store.prune_audit(3_500, 10).await.unwrap(), 0);
    let left = store.audit_log(0, 10).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!((left[0].ts_ms, left[0].target.as_str()), (4_000, "d"));
}
