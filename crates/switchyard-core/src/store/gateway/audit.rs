//! The audit log: who changed which key, team or user, or signed in to the dashboard, when, from
//! where and what changed, never a secret. A change and its row are written in one transaction.
//! Spec: R14.6a, R14.11a.

use super::budget::{Budget, civil_from_days};
use super::keys::{ClientKey, Team};
use crate::store::StoreFuture;

/// Who made a change and from where: the OS user and `cli@HOST`, or the dashboard's admin
/// key prefix and the client address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The person or key, never a secret.
    pub who: String,
    /// Where the change came from.
    pub origin: String,
}

/// One row of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditEntry {
    /// When, Unix ms.
    pub ts_ms: i64,
    /// Who, as [`Actor::who`].
    pub actor: String,
    /// From where, as [`Actor::origin`].
    pub origin: String,
    /// `key.create`, `key.update`, `key.revoke`, `key.rotate`, `team.create`, `team.update`,
    /// `user.create`, `user.update`, `user.disable`, `user.enable`, `signin` or `signin.failed`.
    pub action: String,
    /// The key by id, prefix and name, or the team by name.
    pub target: String,
    /// The fields changed as `field: old → new`, separated by `; `.
    pub detail: String,
}

impl AuditEntry {
    /// An entry of `action` on `target` by `by` at `now_ms`.
    pub fn new(by: &Actor, now_ms: i64, action: &str, target: String, detail: String) -> Self {
        Self {
            ts_ms: now_ms,
            actor: by.who.clone(),
            origin: by.origin.clone(),
            action: action.to_owned(),
            target,
            detail,
        }
    }
}

/// The fields an edit sets; `None` leaves a field as it is, `Some(None)` clears it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyUpdate {
    /// Who or what it is for.
    pub name: Option<String>,
    /// Its team.
    pub team: Option<Option<String>>,
    /// Its model globs; an empty list is every model.
    pub models: Option<Vec<String>>,
    /// Its own budget.
    pub budget: Option<Option<Budget>>,
    /// Requests per minute.
    pub rpm: Option<Option<u64>>,
    /// Input tokens per minute.
    pub tpm: Option<Option<u64>>,
    /// Requests in flight at once.
    pub max_parallel: Option<Option<u64>>,
    /// When it stops working, Unix ms.
    pub expires_ms: Option<Option<i64>>,
    /// The user whose budget its spend counts in from now on, by user id.
    pub owner: Option<Option<String>>,
}

/// A change to a stored key.
#[derive(Clone, PartialEq)]
pub enum KeyChange {
    /// New values for some fields.
    Update(KeyUpdate),
    /// Revoked at `at_ms`, unless it already was.
    Revoke {
        /// When, Unix ms.
        at_ms: i64,
    },
    /// A new secret, known to the store by its hash and prefix only.
    Rotate {
        /// The new secret's SHA-256.
        hash: String,
        /// The new secret's display prefix.
        prefix: String,
    },
}

impl std::fmt::Debug for KeyChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Update(u) => f.debug_tuple("Update").field(u).finish(),
            Self::Revoke { at_ms } => f.debug_struct("Revoke").field("at_ms", at_ms).finish(),
            Self::Rotate { prefix, .. } => f
                .debug_struct("Rotate")
                .field("prefix", prefix)
                .finish_non_exhaustive(),
        }
    }
}

impl KeyChange {
    /// The key `old` becomes; `None` when the change does not apply to a revoked key.
    pub fn apply(&self, old: &ClientKey) -> Option<ClientKey> {
        let mut new = old.clone();
        match self {
            Self::Revoke { at_ms } => new.revoked_ms = old.revoked_ms.or(Some(*at_ms)),
            _ if old.revoked_ms.is_some() => return None,
            Self::Rotate { prefix, .. } => new.prefix.clone_from(prefix),
            Self::Update(u) => {
                new.name = u.name.clone().unwrap_or(new.name);
                new.team = u.team.clone().unwrap_or(new.team);
                new.models = u.models.clone().unwrap_or(new.models);
                new.budget = u.budget.unwrap_or(new.budget);
                new.rpm = u.rpm.unwrap_or(new.rpm);
                new.tpm = u.tpm.unwrap_or(new.tpm);
                new.max_parallel = u.max_parallel.unwrap_or(new.max_parallel);
                new.expires_ms = u.expires_ms.unwrap_or(new.expires_ms);
                new.owner = u.owner.clone().unwrap_or(new.owner);
            }
        }
        Some(new)
    }

    /// The new hash a rotation writes.
    pub fn hash(&self) -> Option<&str> {
        match self {
            Self::Rotate { hash, .. } => Some(hash),
            _ => None,
        }
    }

    /// The audit action's name.
    pub fn action(&self) -> &'static str {
        match self {
            Self::Update(_) => "key.update",
            Self::Revoke { .. } => "key.revoke",
            Self::Rotate { .. } => "key.rotate",
        }
    }
}

/// A key as the audit log names it: id, display prefix and name.
pub fn key_target(k: &ClientKey) -> String {
    format!("{} {}… ({})", k.id, k.prefix, k.name)
}

/// A Unix ms time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_text(ms: i64) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
    let s = ms.rem_euclid(86_400_000) / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

fn or_none<T>(v: Option<T>, show: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "none".to_owned(), show)
}

/// Each field of a key as the audit log shows it, a revoked key's revocation included.
fn key_fields(k: &ClientKey) -> [(&'static str, String); 11] {
    let models = if k.models.is_empty() {
        "*".to_owned()
    } else {
        k.models.join(",")
    };
    [
        ("name", k.name.clone()),
        ("team", or_none(k.team.clone(), |t| t)),
        ("owner", or_none(k.owner.clone(), |o| o)),
        ("models", models),
        ("budget", or_none(k.budget, |b| b.to_string())),
        ("rpm", or_none(k.rpm, |n| n.to_string())),
        ("tpm", or_none(k.tpm, |n| n.to_string())),
        ("max_parallel", or_none(k.max_parallel, |n| n.to_string())),
        ("expires", or_none(k.expires_ms, utc_text)),
        ("prefix", format!("{}…", k.prefix)),
        ("revoked", or_none(k.revoked_ms, utc_text)),
    ]
}

/// The fields that differ between `old` and `new` as `field: old → new; …`, or `no change`.
pub fn key_diff(old: &ClientKey, new: &ClientKey) -> String {
    let changed: Vec<String> = (key_fields(old).into_iter().zip(key_fields(new)))
        .filter(|((_, a), (_, b))| a != b)
        .map(|((name, a), (_, b))| format!("{name}: {a} → {b}"))
        .collect();
    if changed.is_empty() {
        "no change".to_owned()
    } else {
        changed.join("; ")
    }
}

/// A new key's fields as `field: value; …`, its admin flag included.
pub fn key_summary(k: &ClientKey) -> String {
    let mut parts: Vec<String> = (key_fields(k).into_iter().take(9))
        .map(|(name, v)| format!("{name}: {v}"))
        .collect();
    parts.push(format!("admin: {}", if k.admin { "yes" } else { "no" }));
    parts.join("; ")
}

/// The lease scopes of key `old` an edit to `new` ends, so no slice outlives a lowered limit.
pub(crate) fn leases_ended(old: &ClientKey, new: &ClientKey) -> Vec<&'static str> {
    let mut scopes = Vec::new();
    if old.budget != new.budget {
        scopes.push("key");
    }
    if old.max_parallel != new.max_parallel {
        scopes.push("parallel");
    }
    scopes
}

/// The audit row of `change` taking `old` to `new`.
pub fn key_entry(
    change: &KeyChange,
    (old, new): (&ClientKey, &ClientKey),
    by: &Actor,
    now_ms: i64,
) -> AuditEntry {
    AuditEntry::new(
        by,
        now_ms,
        change.action(),
        key_target(old),
        key_diff(old, new),
    )
}

/// The audit row of team `name`'s budget going from `old` to `new`.
pub fn team_entry(
    name: &str,
    old: Option<Budget>,
    new: Option<Budget>,
    by: &Actor,
    now_ms: i64,
) -> AuditEntry {
    let show = |b: Option<Budget>| or_none(b, |b| b.to_string());
    let detail = if old == new {
        "no change".to_owned()
    } else {
        format!("budget: {} → {}", show(old), show(new))
    };
    AuditEntry::new(by, now_ms, "team.update", format!("team {name}"), detail)
}

/// The audit log and the changes it records, written together, implemented by every backend.
pub trait AuditStore: Send + Sync {
    /// Stores `key` by `hash` and `entry` in one transaction; a taken id or hash is a conflict.
    fn create_key_audited<'a>(
        &'a self,
        key: &'a ClientKey,
        hash: &'a str,
        entry: &'a AuditEntry,
    ) -> StoreFuture<'a, ()>;

    /// Stores `team` and `entry` in one transaction; a taken name is a conflict.
    fn create_team_audited<'a>(
        &'a self,
        team: &'a Team,
        entry: &'a AuditEntry,
    ) -> StoreFuture<'a, ()>;

    /// Applies `change` to key `id` and writes its [`key_entry`] in one transaction, ending the
    /// leases of a budget or parallel limit it changes; `None` when the key is missing, or
    /// revoked for an update or rotation.
    fn change_key<'a>(
        &'a self,
        id: &'a str,
        change: &'a KeyChange,
        by: &'a Actor,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<(ClientKey, ClientKey)>>;

    /// Sets team `name`'s budget and writes its [`team_entry`] in one transaction, ending the
    /// team's leases when it changes; `None` when there is no such team.
    fn change_team<'a>(
        &'a self,
        name: &'a str,
        budget: Option<Budget>,
        by: &'a Actor,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<(Team, Team)>>;

    /// Appends `entry` on its own, as a sign-in's.
    fn append_audit<'a>(&'a self, entry: &'a AuditEntry) -> StoreFuture<'a, ()>;

    /// The newest `limit` rows since `since_ms`, newest first.
    fn audit_log(&self, since_ms: i64, limit: u32) -> StoreFuture<'_, Vec<AuditEntry>>;

    /// Deletes at most `limit` of the oldest rows written before `before_ms`; says how many.
    fn prune_audit(&self, before_ms: i64, limit: u64) -> StoreFuture<'_, u64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ClientKey {
        ClientKey {
            id: "key_1".into(),
            prefix: "sk-sy-abcdef".into(),
            name: "a".into(),
            team: None,
            models: vec![],
            budget: Budget::parse("5/day"),
            rpm: None,
            tpm: None,
            max_parallel: None,
            expires_ms: None,
            admin: false,
            created_ms: 0,
            revoked_ms: None,
            owner: None,
        }
    }

    #[test]
    fn a_change_names_only_the_fields_it_changes_old_to_new() {
        let old = key();
        let change = KeyChange::Update(KeyUpdate {
            budget: Some(Budget::parse("1/day")),
            rpm: Some(Some(10)),
            models: Some(vec!["gpt-*".into()]),
            ..KeyUpdate::default()
        });
        let new = change.apply(&old).unwrap();
        assert_eq!(
            key_diff(&old, &new),
            "models: * → gpt-*; budget: $5/day → $1/day; rpm: none → 10"
        );
        let rotate = KeyChange::Rotate {
            hash: "h".repeat(64),
            prefix: "sk-sy-123456".into(),
        };
        assert!(!format!("{rotate:?}").contains("hhhh"));
        let revoked = KeyChange::Revoke { at_ms: 0 }.apply(&old).unwrap();
        assert_eq!(
            key_diff(&old, &revoked),
            "revoked: none → 1970-01-01T00:00:00Z"
        );
        assert!(rotate.apply(&revoked).is_none());
        assert_eq!(
            utc_text(1_733_529_600_000 + 3_661_000),
            "2024-12-07T01:01:01Z"
        );
    }
}
