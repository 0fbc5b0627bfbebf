//! Users: people who sign in through the identity provider, each with a role, a team, model
//! globs and a budget over every key they own, as their groups say at each sign-in.
//! Spec: R14.6b, R14.7a.

use sha2::{Digest, Sha256};

use super::audit::{Actor, AuditEntry, utc_text};
use super::budget::Budget;

/// What a user may do on the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Sees and changes everything.
    Admin,
    /// Makes, lists, rotates and revokes their own keys.
    Member,
    /// Sees, changes nothing.
    Viewer,
}

impl Role {
    /// The role named `text`: `admin`, `member` or `viewer`, any case.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Admin, Self::Member, Self::Viewer]
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(text.trim()))
    }

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Member => "member",
            Self::Viewer => "viewer",
        }
    }
}

/// One user as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    /// `usr_` and 16 hex characters, the same for the same issuer and subject.
    pub id: String,
    /// The identity provider's issuer URL.
    pub issuer: String,
    /// The subject the provider names the person by; unique with the issuer.
    pub subject: String,
    /// For display.
    pub email: Option<String>,
    /// For display.
    pub name: Option<String>,
    /// What they may do on the dashboard.
    pub role: Role,
    /// The team their keys are made in.
    pub team: Option<String>,
    /// The model globs their keys may use; empty: every model.
    pub models: Vec<String>,
    /// Their own budget, over every key they own.
    pub budget: Option<Budget>,
    /// When they first signed in, Unix ms.
    pub created_ms: i64,
    /// When they last signed in, Unix ms.
    pub signed_in_ms: i64,
    /// When they were disabled, Unix ms; their keys are refused from then on.
    pub disabled_ms: Option<i64>,
}

/// A verified sign-in, the groups already mapped to a role, team, models and budget.
#[derive(Debug, Clone, PartialEq)]
pub struct SignIn {
    /// The ID token's issuer.
    pub issuer: String,
    /// The ID token's subject.
    pub subject: String,
    /// For display.
    pub email: Option<String>,
    /// For display.
    pub name: Option<String>,
    /// From the groups.
    pub role: Role,
    /// From the groups.
    pub team: Option<String>,
    /// From the groups; empty: every model.
    pub models: Vec<String>,
    /// From the groups.
    pub budget: Option<Budget>,
    /// When, Unix ms.
    pub at_ms: i64,
}

/// What `switchyard users update` sets; `None` leaves a field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserUpdate {
    /// A new budget, `Some(None)` for none.
    pub budget: Option<Option<Budget>>,
    /// A new role.
    pub role: Option<Role>,
    /// `true` disables, keeping an earlier time; `false` enables.
    pub disabled: Option<bool>,
}

/// The id of the user `issuer` and `subject` name: a digest, so every sign-in finds the same.
pub fn user_id(issuer: &str, subject: &str) -> String {
    let digest = Sha256::digest(format!("{issuer}\n{subject}").as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("usr_{hex}")
}

/// The user `s` makes of `old`, or a new one: every sign-in rewrites what the groups give and
/// enables the user again.
pub fn signed_in(old: Option<&User>, s: &SignIn) -> User {
    User {
        id: old.map_or_else(|| user_id(&s.issuer, &s.subject), |o| o.id.clone()),
        issuer: s.issuer.clone(),
        subject: s.subject.clone(),
        email: s.email.clone(),
        name: s.name.clone(),
        role: s.role,
        team: s.team.clone(),
        models: s.models.clone(),
        budget: s.budget,
        created_ms: old.map_or(s.at_ms, |o| o.created_ms),
        signed_in_ms: s.at_ms,
        disabled_ms: None,
    }
}

impl UserUpdate {
    /// The user `old` becomes at `now_ms`.
    pub fn apply(&self, old: &User, now_ms: i64) -> User {
        let mut new = old.clone();
        new.budget = self.budget.unwrap_or(new.budget);
        new.role = self.role.unwrap_or(new.role);
        new.disabled_ms = match self.disabled {
            Some(true) => old.disabled_ms.or(Some(now_ms)),
            Some(false) => None,
            None => old.disabled_ms,
        };
        new
    }
}

fn or_none<T>(v: Option<T>, show: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "none".to_owned(), show)
}

/// Each field of a user as the audit log shows it; the sign-in time is not a change.
fn user_fields(u: &User) -> [(&'static str, String); 7] {
    let models = if u.models.is_empty() {
        "*".to_owned()
    } else {
        u.models.join(",")
    };
    [
        ("email", or_none(u.email.clone(), |e| e)),
        ("name", or_none(u.name.clone(), |n| n)),
        ("role", u.role.as_str().to_owned()),
        ("team", or_none(u.team.clone(), |t| t)),
        ("models", models),
        ("budget", or_none(u.budget, |b| b.to_string())),
        ("disabled", or_none(u.disabled_ms, utc_text)),
    ]
}

/// The fields that differ between `old` and `new` as `field: old → new; …`; empty for none.
pub fn user_diff(old: &User, new: &User) -> String {
    let changed: Vec<String> = (user_fields(old).into_iter().zip(user_fields(new)))
        .filter(|((_, a), (_, b))| a != b)
        .map(|((name, a), (_, b))| format!("{name}: {a} → {b}"))
        .collect();
    changed.join("; ")
}

/// A user as the audit log names them: id, then email or subject.
pub fn user_target(u: &User) -> String {
    format!(
        "user {} ({})",
        u.id,
        u.email.as_deref().unwrap_or(&u.subject)
    )
}

/// The audit row of `old` becoming `new`; `None` when nothing the log shows changed.
pub fn user_entry(old: Option<&User>, new: &User, by: &Actor, now_ms: i64) -> Option<AuditEntry> {
    let (action, detail) = match old {
        None => {
            let fields = user_fields(new).into_iter().take(6);
            let parts: Vec<String> = fields.map(|(n, v)| format!("{n}: {v}")).collect();
            ("user.create", parts.join("; "))
        }
        Some(old) => {
            let detail = user_diff(old, new);
            if detail.is_empty() {
                return None;
            }
            let action = match (old.disabled_ms, new.disabled_ms) {
                (None, Some(_)) => "user.disable",
                (Some(_), None) => "user.enable",
                _ => "user.update",
            };
            (action, detail)
        }
    };
    Some(AuditEntry::new(
        by,
        now_ms,
        action,
        user_target(new),
        detail,
    ))
}

/// Whether a change from `old` to `new` ends the user's budget leases, as a key's does.
pub(crate) fn user_leases_end(old: &User, new: &User) -> bool {
    old.budget != new.budget || (old.disabled_ms.is_none() && new.disabled_ms.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign_in(at_ms: i64) -> SignIn {
        SignIn {
            issuer: "https://idp.example".into(),
            subject: "248289761001".into(),
            email: Some("jane@example.com".into()),
            name: None,
            role: Role::Member,
            team: Some("ops".into()),
            models: vec!["gpt-*".into()],
            budget: Budget::parse("5/day"),
            at_ms,
        }
    }

    #[test]
    fn a_sign_in_rewrites_the_groups_fields_enables_and_names_the_change() {
        let by = Actor {
            who: "jane".into(),
            origin: "127.0.0.1".into(),
        };
        let first = signed_in(None, &sign_in(10));
        assert_eq!(first.id, user_id("https://idp.example", "248289761001"));
        assert_eq!(first.id.len(), 4 + 16);
        let made = user_entry(None, &first, &by, 10).unwrap();
        assert_eq!(made.action, "user.create");
        assert!(made.detail.contains("budget: $5/day"), "{}", made.detail);
        let disabled = UserUpdate {
            disabled: Some(true),
            ..UserUpdate::default()
        }
        .apply(&first, 20);
        assert_eq!(disabled.disabled_ms, Some(20));
        assert!(user_leases_end(&first, &disabled));
        let again = signed_in(Some(&disabled), &sign_in(30));
        assert_eq!((again.created_ms, again.signed_in_ms), (10, 30));
        let entry = user_entry(Some(&disabled), &again, &by, 30).unwrap();
        assert_eq!(entry.action, "user.enable");
        assert!(
            user_entry(
                Some(&again),
                &signed_in(Some(&again), &sign_in(40)),
                &by,
                40
            )
            .is_none()
        );
        assert_eq!(Role::parse(" Admin"), Some(Role::Admin));
        assert_eq!(Role::parse("owner"), None);
    }
}
