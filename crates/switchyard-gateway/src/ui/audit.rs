//! The dashboard's part of the audit log: its sign-ins, who an admin is when they change a key
//! or team, and the audit page's rows.
//! Spec: R14.11a.

use std::net::IpAddr;

use serde_json::{Value, json};
use switchyard_core::store::{Actor, AuditEntry, StoreError, TaskStore, hash_key, utc_text};

use super::people::Person;
use super::session::{Session, Who};

/// How many entries the audit page lists, newest first.
const PAGE_ROWS: u32 = 500;

/// The longest sign-in text looked up to name the key that tried.
const KEY_MAX: usize = 512;

/// Who is signed in as `session`, from `address`.
pub(super) fn actor(session: &Session, address: IpAddr) -> Actor {
    let who = match &session.who {
        Who::Key { prefix, .. } => format!("dashboard admin {prefix}…"),
        Who::User(p) => person_name(p),
    };
    Actor {
        who,
        origin: address.to_string(),
    }
}

/// A signed-in person as the audit log names them: role, display name and user id.
pub(super) fn person_name(p: &Person) -> String {
    format!("dashboard {} {} ({})", p.role.as_str(), p.display, p.id)
}

/// Records a sign-in through the identity provider by `by`, failed when `problem` says why.
pub(super) async fn sso(store: &dyn TaskStore, by: &Actor, now_ms: i64, problem: Option<&str>) {
    let (action, detail) = match problem {
        None => (
            "signin",
            "signed in to the dashboard through single sign-on".to_owned(),
        ),
        Some(p) => ("signin.failed", p.to_owned()),
    };
    let entry = AuditEntry::new(by, now_ms, action, "dashboard".to_owned(), detail);
    if let Err(e) = store.append_audit(&entry).await {
        tracing::warn!(error = %e, "a single sign-on could not be written to the audit log");
    }
}

/// Records a sign-in from `address` with `presented`, failed when `problem` says why. The key is
/// named by its display prefix when the store knows it, else not at all: what was typed may be
/// another secret.
pub(super) async fn sign_in(
    store: &dyn TaskStore,
    presented: &str,
    address: IpAddr,
    now_ms: i64,
    problem: Option<&str>,
) {
    let presented = presented.trim();
    let known = if presented.is_empty() || presented.len() > KEY_MAX {
        None
    } else {
        store.key_by_hash(&hash_key(presented)).await.ok().flatten()
    };
    let who = match (known, problem) {
        (None, _) => "an unknown key".to_owned(),
        (Some(k), None) => format!("dashboard admin {}…", k.prefix),
        (Some(k), Some(_)) => format!("key {}…", k.prefix),
    };
    let by = Actor {
        who,
        origin: address.to_string(),
    };
    let (action, detail) = match problem {
        None => ("signin", "signed in to the dashboard".to_owned()),
        Some(p) => ("signin.failed", p.to_owned()),
    };
    let entry = AuditEntry::new(&by, now_ms, action, "dashboard".to_owned(), detail);
    if let Err(e) = store.append_audit(&entry).await {
        tracing::warn!(error = %e, "the dashboard sign-in could not be written to the audit log");
    }
}

/// The newest entries, each with its time as text.
pub(super) async fn list(store: &dyn TaskStore) -> Result<Value, StoreError> {
    let rows = store.audit_log(i64::MIN, PAGE_ROWS).await?;
    let shown: Vec<Value> = (rows.iter())
        .map(|e| {
            let mut v = json!(e);
            v["time"] = json!(utc_text(e.ts_ms));
            v
        })
        .collect();
    Ok(json!({"entries": shown, "max": PAGE_ROWS}))
}
