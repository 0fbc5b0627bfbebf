//! The keys and teams page's figures and actions: each key's budget used and left, its
//! window now, expiry and last use; create, update, revoke and rotate, each audited, a new key
//! returned once in that response and never again. A member sees and changes only their own.
//! Spec: R14.11, R14.11b, R14.6, R14.7.

use serde_json::{Value, json};
use switchyard_core::limits::RateState;
use switchyard_core::store::{
    Actor, Budget, ClientKey, KeyEdit, NewKeyRequest, StoreError, TaskStore, UsageBy, UsageQuery,
    User, create_client_key_by, create_team_by, key_diff, revoke_client_key, rotate_client_key,
    update_client_key,
};

use super::people::Person;
use crate::glob::glob_matches;

/// Every key and team with their figures now; for a person who is not an administrator, `mine`,
/// only their own keys and their team.
pub(crate) async fn list(
    store: &dyn TaskStore,
    now: i64,
    mine: Option<&Person>,
) -> Result<Value, StoreError> {
    let last_use = UsageQuery {
        by: UsageBy::Key,
        bucket: None,
        from_ms: i64::MIN,
        to_ms: i64::MAX,
    };
    let (keys, teams, rates, usage) = tokio::try_join!(
        store.client_keys(),
        store.teams(),
        store.rate_states(now),
        store.usage_between(&last_use)
    )?;
    let keys: Vec<ClientKey> = (keys.into_iter())
        .filter(|k| mine.is_none_or(|p| super::people::owner(k).as_deref() == Some(p.id.as_str())))
        .collect();
    let teams = (teams.into_iter())
        .filter(|t| mine.is_none_or(|p| p.team.as_deref() == Some(t.name.as_str())));
    let mut shown = Vec::with_capacity(keys.len());
    for k in &keys {
        let used = budget_use(store, k.budget, Some(&k.id), None, now).await?;
        let rate = rates.iter().find(|r| r.key == format!("client:{}", k.id));
        let last = usage.iter().find(|u| u.row.group.as_deref() == Some(&k.id));
        shown.push(key_json(k, used, rate, last.map(|u| u.last_ms), now));
    }
    let mut teams_shown = Vec::new();
    for t in teams {
        let used = budget_use(store, t.budget, None, Some(&t.name), now).await?;
        let members = keys
            .iter()
            .filter(|k| k.team.as_deref() == Some(&t.name))
            .count();
        teams_shown.push(
            json!({"name": t.name, "keys": members, "budget": used, "created_ms": t.created_ms}),
        );
    }
    Ok(json!({"now_ms": now, "keys": shown, "teams": teams_shown}))
}

/// A budget's size and window, used and left in the current window in USD, and when that
/// window resets; `null` without a budget.
async fn budget_use(
    store: &dyn TaskStore,
    budget: Option<Budget>,
    key: Option<&str>,
    team: Option<&str>,
    now: i64,
) -> Result<Value, StoreError> {
    let Some(b) = budget else {
        return Ok(Value::Null);
    };
    let used = store
        .used_since(key, team, b.window_start_ms(now), now)
        .await?;
    Ok(budget_json(b, used, now))
}

/// User `u`'s budget as [`budget_use`] shows a key's, its use read as admission counts it.
pub(crate) async fn user_budget_use(
    store: &dyn TaskStore,
    u: &User,
    now: i64,
) -> Result<Value, StoreError> {
    let Some(b) = u.budget else {
        return Ok(Value::Null);
    };
    let used = store
        .user_used_since(&u.id, b.window_start_ms(now), now)
        .await?;
    Ok(budget_json(b, used, now))
}

fn budget_json(b: Budget, used: f64, now: i64) -> Value {
    json!({
        "usd": b.usd,
        "window": b.window_name(),
        "used_usd": used,
        "left_usd": (b.usd - used).max(0.0),
        "resets_ms": b.resets_ms(now),
    })
}

fn key_json(
    k: &ClientKey,
    budget: Value,
    rate: Option<&RateState>,
    last: Option<i64>,
    now: i64,
) -> Value {
    let state = match (k.revoked_ms, k.expires_ms) {
        (Some(_), _) => "revoked",
        (None, Some(at)) if at <= now => "expired",
        _ => "active",
    };
    json!({
        "id": k.id,
        "prefix": k.prefix,
        "name": k.name,
        "owner": super::people::owner(k),
        "team": k.team,
        "models": k.models,
        "admin": k.admin,
        "state": state,
        "budget": budget,
        "rpm": k.rpm,
        "rpm_used": rate.map_or(0, |r| r.requests_in_window),
        "tpm": k.tpm,
        "tpm_used": rate.map_or(0, |r| r.input_tokens_in_window),
        "max_parallel": k.max_parallel,
        "expires_ms": k.expires_ms,
        "created_ms": k.created_ms,
        "revoked_ms": k.revoked_ms,
        "last_used_ms": last,
    })
}

/// What the create form sends; every field but `name` may be left out.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct NewKey {
    name: String,
    #[serde(default)]
    team: Option<String>,
    #[serde(default)]
    models: Option<String>,
    #[serde(default)]
    budget: Option<String>,
    #[serde(default)]
    rpm: Option<u64>,
    #[serde(default)]
    tpm: Option<u64>,
    #[serde(default)]
    max_parallel: Option<u64>,
    #[serde(default)]
    expires: Option<String>,
    #[serde(default)]
    admin: bool,
}

/// Makes the key `new` describes with the rule `switchyard keys create` runs: `{key, id,
/// prefix}`, the key shown this once, or the sentence why not.
pub(crate) async fn create(
    store: &dyn TaskStore,
    mut new: NewKey,
    (by, now): (&Actor, i64),
    mine: Option<&Person>,
) -> Result<Value, String> {
    let mut owner = None;
    if let Some(p) = mine {
        if new.admin {
            return Err("Only an administrator makes admin keys.".to_owned());
        }
        new.team = own_team(new.team, p)?;
        // `*` is every model, which a new key says by naming none.
        let models = within(new.models.as_deref(), p)?;
        new.models = (models != "*").then_some(models);
        owner = Some(p.id.clone());
    }
    let asked = NewKeyRequest {
        owner,
        name: new.name,
        team: new.team,
        models: new.models.into_iter().collect(),
        budget: new.budget,
        rpm: new.rpm,
        tpm: new.tpm,
        max_parallel: new.max_parallel,
        expires: new.expires,
        admin: new.admin,
    };
    let made = (create_client_key_by(store, &asked, by, now).await).map_err(|e| e.to_string())?;
    Ok(json!({"key": made.secret.key, "id": made.key.id, "prefix": made.key.prefix}))
}

/// What the edit form sends: each field left out or blank keeps its value, `none` clears it.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct EditKey {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    team: Option<String>,
    #[serde(default)]
    models: Option<String>,
    #[serde(default)]
    budget: Option<String>,
    #[serde(default)]
    rpm: Option<String>,
    #[serde(default)]
    tpm: Option<String>,
    #[serde(default)]
    max_parallel: Option<String>,
    #[serde(default)]
    expires: Option<String>,
}

/// Changes key `id` with the rule `switchyard keys update` runs: what changed, old → new.
pub(crate) async fn update(
    store: &dyn TaskStore,
    id: &str,
    mut e: EditKey,
    (by, now): (&Actor, i64),
    mine: Option<&Person>,
) -> Result<Value, String> {
    if let Some(p) = mine {
        if e.team.is_some() {
            e.team = Some(own_team(e.team, p)?.unwrap_or_else(|| "none".to_owned()));
        }
        if let Some(models) = e.models.as_deref() {
            e.models = Some(within(Some(models), p)?);
        }
    }
    let edit = KeyEdit {
        name: e.name,
        team: e.team,
        models: e.models,
        budget: e.budget,
        rpm: e.rpm,
        tpm: e.tpm,
        max_parallel: e.max_parallel,
        expires: e.expires,
        // The dashboard moves no key between owners: a member could then spend on another's
        // budget (BerriAI/litellm#8031). `switchyard keys update --owner` does it.
        owner: None,
    };
    if edit == KeyEdit::default() {
        return Err("Say what to change: a name, team, models, budget, rpm, tpm, parallel limit or expiry. A key's owner is changed with `switchyard keys update --owner`.".to_owned());
    }
    let (old, new) =
        (update_client_key(store, id, &edit, by, now).await).map_err(|e| e.to_string())?;
    Ok(json!({"id": new.id, "changed": key_diff(&old, &new)}))
}

/// Revokes key `id`: it is refused within a second everywhere.
pub(crate) async fn revoke(
    store: &dyn TaskStore,
    id: &str,
    (by, now): (&Actor, i64),
) -> Result<Value, String> {
    (revoke_client_key(store, id, by, now).await).map_err(|e| e.to_string())?;
    Ok(json!({"id": id, "revoked": true}))
}

/// Gives key `id` a new secret, shown this once; the old one stops working.
pub(crate) async fn rotate(
    store: &dyn TaskStore,
    id: &str,
    (by, now): (&Actor, i64),
) -> Result<Value, String> {
    let (secret, _) = (rotate_client_key(store, id, by, now).await).map_err(|e| e.to_string())?;
    Ok(json!({"key": secret.key, "id": id, "prefix": secret.prefix}))
}

/// What the team form sends.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct NewTeam {
    name: String,
    #[serde(default)]
    budget: Option<String>,
}

/// Makes team `new` with the rule `switchyard teams create` runs.
pub(crate) async fn create_team(
    store: &dyn TaskStore,
    new: NewTeam,
    (by, now): (&Actor, i64),
) -> Result<Value, String> {
    let team = (create_team_by(store, &new.name, new.budget.as_deref(), (by, now)).await)
        .map_err(|e| e.to_string())?;
    Ok(json!({"name": team.name}))
}

/// What the team edit form sends: the new budget, or `none`.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct EditTeam {
    budget: String,
}

/// Sets team `name`'s budget, `name` as the page's path escaped it.
pub(crate) async fn update_team(
    store: &dyn TaskStore,
    name: &str,
    edit: EditTeam,
    (by, now): (&Actor, i64),
) -> Result<Value, String> {
    let name = super::form::decode(name);
    let (old, new) = (switchyard_core::store::update_team(store, &name, &edit.budget, by, now)
        .await)
        .map_err(|e| e.to_string())?;
    let show = |b: Option<Budget>| b.map_or_else(|| "none".to_owned(), |b| b.to_string());
    Ok(
        json!({"name": new.name, "changed": format!("budget: {} → {}", show(old.budget), show(new.budget))}),
    )
}

/// Whether key `id` is `p`'s: a member changes only their own keys.
pub(crate) async fn owned(store: &dyn TaskStore, id: &str, p: &Person) -> Result<bool, StoreError> {
    let keys = store.client_keys().await?;
    Ok(keys
        .iter()
        .any(|k| k.id == id && super::people::owner(k).as_deref() == Some(p.id.as_str())))
}

/// The team a member's key is in: always their own, which `asked` may only repeat.
fn own_team(asked: Option<String>, p: &Person) -> Result<Option<String>, String> {
    let asked = asked
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty() && t != "none");
    match (&asked, &p.team) {
        (None, _) => Ok(p.team.clone()),
        (Some(a), Some(mine)) if a == mine => Ok(p.team.clone()),
        (Some(a), _) => Err(format!(
            "Your keys are in {}, not {a}: your groups decide your team.",
            p.team
                .as_deref()
                .map_or_else(|| "no team".to_owned(), |t| format!("the team {t}"))
        )),
    }
}

/// The model globs `asked` (comma-separated; none or `*` for every model) if each is within one
/// of `p`'s globs, as text; `p`'s own globs when nothing was asked. A glob is within another when
/// the other matches it as written, its `*` standing for the other's `*`.
fn within(asked: Option<&str>, p: &Person) -> Result<String, String> {
    let asked: Vec<&str> = (asked.unwrap_or("").split(','))
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .collect();
    if p.models.is_empty() {
        return Ok(if asked.is_empty() {
            "*".to_owned()
        } else {
            asked.join(",")
        });
    }
    if asked.is_empty() {
        return Ok(p.models.join(","));
    }
    match asked
        .iter()
        .find(|g| !p.models.iter().any(|mine| glob_matches(mine, g)))
    {
        Some(g) => Err(format!(
            "{g} is outside the models your groups allow: {}.",
            p.models.join(", ")
        )),
        None => Ok(asked.join(",")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::people::Role;
    use super::*;

    fn member(models: &[&str], team: Option<&str>) -> Person {
        Person {
            id: "usr_1".into(),
            display: "ada@example.com".into(),
            role: Role::Member,
            team: team.map(str::to_owned),
            models: models.iter().map(|m| (*m).to_owned()).collect(),
        }
    }

    #[test]
    fn a_members_key_stays_within_their_globs_and_team() {
        let p = member(&["claude-*", "gpt-5"], Some("eng"));
        assert_eq!(within(None, &p).unwrap(), "claude-*,gpt-5");
        assert_eq!(
            within(Some("claude-sonnet-*, gpt-5"), &p).unwrap(),
            "claude-sonnet-*,gpt-5"
        );
        assert!(within(Some("*"), &p).unwrap_err().contains("outside"));
        assert!(within(Some("gpt-*"), &p).is_err());
        assert_eq!(within(Some("*"), &member(&[], None)).unwrap(), "*");
        assert_eq!(own_team(None, &p).unwrap().as_deref(), Some("eng"));
        assert_eq!(
            own_team(Some("eng".into()), &p).unwrap().as_deref(),
            Some("eng")
        );
        assert!(
            own_team(Some("ops".into()), &p)
                .unwrap_err()
                .contains("the team eng")
        );
    }
}
