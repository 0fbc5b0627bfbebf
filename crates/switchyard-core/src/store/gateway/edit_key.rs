//! Changing a client key, a team or a user from the fields as written, each change audited:
//! the CLI's and the dashboard's one rule.
//! Spec: R14.6a, R14.6b.

use super::audit::{Actor, AuditStore, KeyChange, KeyUpdate};
use super::budget::parse_utc_date;
use super::key_store::KeyStore;
use super::keys::{ClientKey, NewSecret, Team, generate_key};
use super::new_key::{CreateKeyError, KEY_NAME_MAX, check_owner, read_budget};
use super::users::{Role, User, UserUpdate};

/// What an edit sets, as written; absent or blank leaves a field, `none` clears it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyEdit {
    /// Who or what it is for.
    pub name: Option<String>,
    /// The team, which must exist.
    pub team: Option<String>,
    /// Globs separated by commas; `*` or `none` is every model.
    pub models: Option<String>,
    /// `USD`, `USD/day` or `USD/month`.
    pub budget: Option<String>,
    /// Requests per minute.
    pub rpm: Option<String>,
    /// Input tokens per minute.
    pub tpm: Option<String>,
    /// Requests in flight at once.
    pub max_parallel: Option<String>,
    /// `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SSZ`, UTC.
    pub expires: Option<String>,
    /// The owner's user id, an existing user who is not disabled.
    pub owner: Option<String>,
}

type Field<T> = Result<Option<Option<T>>, CreateKeyError>;

/// `text` read by `parse` when set: `none` clears, blank leaves.
fn field<T>(text: Option<&str>, parse: impl Fn(&str) -> Result<T, String>) -> Field<T> {
    match text.map(str::trim) {
        None | Some("") => Ok(None),
        Some(t) if t.eq_ignore_ascii_case("none") => Ok(Some(None)),
        Some(t) => parse(t)
            .map(|v| Some(Some(v)))
            .map_err(CreateKeyError::Invalid),
    }
}

fn count(what: &'static str) -> impl Fn(&str) -> Result<u64, String> {
    move |t| match t.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "The {what} `{t}` is not a whole number above 0: write one, or `none` for no limit."
        )),
    }
}

/// The update `edit` asks for at `now_ms`, or the sentence why it cannot be.
fn read_edit(edit: &KeyEdit, now_ms: i64) -> Result<KeyUpdate, CreateKeyError> {
    let name = edit
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    if name.is_some_and(|n| n.chars().count() > KEY_NAME_MAX) {
        return Err(CreateKeyError::Invalid(format!(
            "A key's name is at most {KEY_NAME_MAX} characters."
        )));
    }
    let models = field(edit.models.as_deref(), |t| {
        Ok((t.split(',').map(str::trim))
            .filter(|m| !m.is_empty() && *m != "*")
            .map(str::to_owned)
            .collect::<Vec<_>>())
    })?;
    let expires = field(edit.expires.as_deref(), |t| match parse_utc_date(t) {
        Some(at) if at > now_ms => Ok(at),
        Some(_) => Err(format!(
            "The expiry `{t}` is already past: give a later date (UTC)."
        )),
        None => Err(format!(
            "The expiry `{t}` is not a date: write YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC), or `none`."
        )),
    })?;
    Ok(KeyUpdate {
        name: name.map(str::to_owned),
        team: field(edit.team.as_deref(), |t| Ok(t.to_owned()))?,
        models: models.map(Option::unwrap_or_default),
        budget: field(edit.budget.as_deref(), read_budget)?,
        rpm: field(edit.rpm.as_deref(), count("requests per minute"))?,
        tpm: field(edit.tpm.as_deref(), count("tokens per minute"))?,
        max_parallel: field(edit.max_parallel.as_deref(), count("parallel limit"))?,
        expires_ms: expires,
        owner: field(edit.owner.as_deref(), |t| Ok(t.to_owned()))?,
    })
}

/// Applies `edit` to key `id` for `by`: the key before and after, in effect on every gateway
/// within a second.
pub async fn update_client_key<S>(
    store: &S,
    id: &str,
    edit: &KeyEdit,
    by: &Actor,
    now_ms: i64,
) -> Result<(ClientKey, ClientKey), CreateKeyError>
where
    S: KeyStore + AuditStore + ?Sized,
{
    let update = read_edit(edit, now_ms)?;
    if update == KeyUpdate::default() {
        return Err(CreateKeyError::Invalid(
            "Say what to change: a name, team, owner, models, budget, rpm, tpm, parallel limit or expiry."
                .to_owned(),
        ));
    }
    if let Some(Some(owner)) = &update.owner {
        check_owner(store, owner).await?;
    }
    if let Some(Some(t)) = &update.team
        && store
            .team(t)
            .await
            .map_err(CreateKeyError::Store)?
            .is_none()
    {
        return Err(CreateKeyError::Invalid(format!(
            "There is no team `{t}`: make it first (`switchyard teams create {t}`)."
        )));
    }
    let change = KeyChange::Update(update);
    (store.change_key(id, &change, by, now_ms).await)
        .map_err(CreateKeyError::Store)?
        .ok_or_else(|| missing(id))
}

fn missing(id: &str) -> CreateKeyError {
    CreateKeyError::Invalid(format!(
        "The key `{id}` does not exist or is revoked: make a new one."
    ))
}

/// Revokes key `id` for `by`; refused everywhere within a second.
pub async fn revoke_client_key<S>(
    store: &S,
    id: &str,
    by: &Actor,
    now_ms: i64,
) -> Result<ClientKey, CreateKeyError>
where
    S: AuditStore + ?Sized,
{
    let change = KeyChange::Revoke { at_ms: now_ms };
    match store.change_key(id, &change, by, now_ms).await {
        Ok(Some((_, new))) => Ok(new),
        Ok(None) => Err(CreateKeyError::Invalid(format!("There is no key `{id}`."))),
        Err(e) => Err(CreateKeyError::Store(e)),
    }
}

/// Gives key `id` a new secret for `by`, shown this once; the old one stops working.
pub async fn rotate_client_key<S>(
    store: &S,
    id: &str,
    by: &Actor,
    now_ms: i64,
) -> Result<(NewSecret, ClientKey), CreateKeyError>
where
    S: AuditStore + ?Sized,
{
    let secret = generate_key().map_err(CreateKeyError::Random)?;
    let change = KeyChange::Rotate {
        hash: secret.hash.clone(),
        prefix: secret.prefix.clone(),
    };
    match store.change_key(id, &change, by, now_ms).await {
        Ok(Some((_, new))) => Ok((secret, new)),
        Ok(None) => Err(missing(id)),
        Err(e) => Err(CreateKeyError::Store(e)),
    }
}

/// Sets team `name`'s budget to `budget` as written (`none` clears it) for `by`.
pub async fn update_team<S>(
    store: &S,
    name: &str,
    budget: &str,
    by: &Actor,
    now_ms: i64,
) -> Result<(Team, Team), CreateKeyError>
where
    S: AuditStore + ?Sized,
{
    let Some(budget) = field(Some(budget), read_budget)? else {
        return Err(CreateKeyError::Invalid(
            "Say the team's new budget: USD, USD/day, USD/month, or `none`.".to_owned(),
        ));
    };
    (store.change_team(name.trim(), budget, by, now_ms).await)
        .map_err(CreateKeyError::Store)?
        .ok_or_else(|| CreateKeyError::Invalid(format!("There is no team `{}`.", name.trim())))
}

/// What `switchyard users update` sets, as written; absent leaves a field, `none` clears a budget.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserEdit {
    /// `USD`, `USD/day`, `USD/month` or `none`.
    pub budget: Option<String>,
    /// `admin`, `member` or `viewer`.
    pub role: Option<String>,
    /// `true` disables, `false` enables.
    pub disabled: Option<bool>,
}

/// Applies `edit` to user `id` for `by`: the user before and after. The user's next sign-in
/// rewrites the budget and role from their groups again.
pub async fn update_user<S>(
    store: &S,
    id: &str,
    edit: &UserEdit,
    by: &Actor,
    now_ms: i64,
) -> Result<(User, User), CreateKeyError>
where
    S: KeyStore + ?Sized,
{
    let role = match edit.role.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(t) => Some(Role::parse(t).ok_or_else(|| {
            CreateKeyError::Invalid(format!(
                "The role `{t}` is not one: write admin, member or viewer."
            ))
        })?),
    };
    let update = UserUpdate {
        budget: field(edit.budget.as_deref(), read_budget)?,
        role,
        disabled: edit.disabled,
    };
    if update == UserUpdate::default() {
        return Err(CreateKeyError::Invalid(
            "Say what to change: a budget, a role, --disable or --enable.".to_owned(),
        ));
    }
    (store.change_user(id.trim(), &update, by, now_ms).await)
        .map_err(CreateKeyError::Store)?
        .ok_or_else(|| CreateKeyError::Invalid(format!("There is no user `{}`.", id.trim())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Budget, SqliteStore};

    #[test]
    fn an_edit_reads_none_as_clear_and_blank_as_leave() {
        let edit = KeyEdit {
            budget: Some("1/day".into()),
            rpm: Some("none".into()),
            models: Some("*".into()),
            tpm: Some(" ".into()),
            ..KeyEdit::default()
        };
        let u = read_edit(&edit, 0).unwrap();
        assert_eq!(u.budget, Some(Budget::parse("1/day")));
        assert_eq!((u.rpm, u.tpm), (Some(None), None));
        assert_eq!(u.models, Some(vec![]));
        for (bad, says) in [
            (
                KeyEdit {
                    rpm: Some("0".into()),
                    ..KeyEdit::default()
                },
                "`0`",
            ),
            (
                KeyEdit {
                    budget: Some("5/week".into()),
                    ..KeyEdit::default()
                },
                "5/week",
            ),
            (
                KeyEdit {
                    expires: Some("2000-01-01".into()),
                    ..KeyEdit::default()
                },
                "past",
            ),
        ] {
            match read_edit(&bad, 1_000_000_000_000) {
                Err(CreateKeyError::Invalid(s)) => assert!(s.contains(says), "{s}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn an_update_naming_a_missing_team_or_key_changes_nothing() {
        let store = SqliteStore::in_memory().unwrap();
        let by = Actor {
            who: "t".into(),
            origin: "test".into(),
        };
        let edit = KeyEdit {
            team: Some("ops".into()),
            ..KeyEdit::default()
        };
        let e = update_client_key(&store, "key_x", &edit, &by, 0).await;
        assert!(matches!(e, Err(CreateKeyError::Invalid(s)) if s.contains("no team")));
        let edit = KeyEdit {
            rpm: Some("3".into()),
            ..KeyEdit::default()
        };
        let e = update_client_key(&store, "key_x", &edit, &by, 0).await;
        assert!(matches!(e, Err(CreateKeyError::Invalid(s)) if s.contains("does not exist")));
        assert!(store.audit_log(0, 10).await.unwrap().is_empty());
    }
}
