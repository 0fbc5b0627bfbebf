//! Making a client key or a team from the fields as written: the CLI and the dashboard's rule.
//! Spec: R14.6, R14.11.

use super::audit::{Actor, AuditEntry, AuditStore, key_summary, key_target};
use super::budget::{Budget, parse_utc_date};
use super::key_store::KeyStore;
use super::keys::{ClientKey, NewSecret, Team, generate_key, generate_key_id};
use crate::store::StoreError;

/// The longest name a key or team may have (characters).
pub const KEY_NAME_MAX: usize = 200;

/// What a new client key is to be, as its maker wrote it; blank optional text is absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewKeyRequest {
    /// Who or what it is for, 1 to [`KEY_NAME_MAX`] characters once trimmed.
    pub name: String,
    /// The team it belongs to, which must exist.
    pub team: Option<String>,
    /// Model globs, several to an item when separated by commas; none: every model.
    pub models: Vec<String>,
    /// Its budget as `USD`, `USD/day` or `USD/month`.
    pub budget: Option<String>,
    /// Requests per minute.
    pub rpm: Option<u64>,
    /// Input tokens per minute.
    pub tpm: Option<u64>,
    /// Requests in flight at once.
    pub max_parallel: Option<u64>,
    /// When it stops working: `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SSZ`, UTC.
    pub expires: Option<String>,
    /// For `/metrics` and the dashboard only, never for completions.
    pub admin: bool,
    /// The user who owns it, by id, who must exist and not be disabled.
    pub owner: Option<String>,
}

/// A key just made: its secret, shown this once, and the key as stored.
#[derive(Debug)]
pub struct CreatedKey {
    /// The secret, its hash and display prefix.
    pub secret: NewSecret,
    /// The stored key.
    pub key: ClientKey,
}

/// Why a key or team was not made.
#[derive(Debug)]
pub enum CreateKeyError {
    /// A field that does not parse, or a team missing or taken, in one sentence.
    Invalid(String),
    /// The store did not answer or refused the key.
    Store(StoreError),
    /// The OS random source gave nothing.
    Random(String),
}

impl std::fmt::Display for CreateKeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Invalid(sentence) | Self::Random(sentence) => f.write_str(sentence),
            Self::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CreateKeyError {}

/// The budget `text`, or the one sentence saying how to write one.
pub fn read_budget(text: &str) -> Result<Budget, String> {
    Budget::parse(text).ok_or_else(|| {
        format!("The budget `{text}` is not one: write USD, USD/day or USD/month, e.g. 5/day.")
    })
}

/// Makes the key `new` describes at `now_ms` and stores it by its hash.
pub async fn create_client_key<S>(
    store: &S,
    new: &NewKeyRequest,
    now_ms: i64,
) -> Result<CreatedKey, CreateKeyError>
where
    S: KeyStore + ?Sized,
{
    let (secret, key) = prepare_key(store, new, now_ms).await?;
    (store.create_key(&key, &secret.hash).await).map_err(CreateKeyError::Store)?;
    Ok(CreatedKey { secret, key })
}

/// Makes the key `new` describes for `by` at `now_ms`, with its audit row.
pub async fn create_client_key_by<S>(
    store: &S,
    new: &NewKeyRequest,
    by: &Actor,
    now_ms: i64,
) -> Result<CreatedKey, CreateKeyError>
where
    S: KeyStore + AuditStore + ?Sized,
{
    let (secret, key) = prepare_key(store, new, now_ms).await?;
    let entry = AuditEntry::new(
        by,
        now_ms,
        "key.create",
        key_target(&key),
        key_summary(&key),
    );
    (store.create_key_audited(&key, &secret.hash, &entry).await).map_err(CreateKeyError::Store)?;
    Ok(CreatedKey { secret, key })
}

/// The secret and the key `new` describes, checked; nothing stored yet.
async fn prepare_key<S>(
    store: &S,
    new: &NewKeyRequest,
    now_ms: i64,
) -> Result<(NewSecret, ClientKey), CreateKeyError>
where
    S: KeyStore + ?Sized,
{
    let blank = |s: &Option<String>| {
        (s.as_deref().map(str::trim))
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let name = new.name.trim().to_owned();
    if name.is_empty() || name.chars().count() > KEY_NAME_MAX {
        return Err(CreateKeyError::Invalid(format!(
            "Give the key a name (who or what it is for), at most {KEY_NAME_MAX} characters."
        )));
    }
    let budget = (blank(&new.budget).map(|t| read_budget(&t)).transpose())
        .map_err(CreateKeyError::Invalid)?;
    let expires_ms = match blank(&new.expires) {
        Some(t) => Some(parse_utc_date(&t).ok_or_else(|| {
            CreateKeyError::Invalid(format!(
                "The expiry `{t}` is not a date: write YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC)."
            ))
        })?),
        None => None,
    };
    // A key made already expired would be refused on its first request, with nothing said now.
    if let (Some(at), Some(t)) = (expires_ms, blank(&new.expires))
        && at <= now_ms
    {
        return Err(CreateKeyError::Invalid(format!(
            "The expiry `{t}` is already past: give a later date (UTC)."
        )));
    }
    let team = blank(&new.team);
    if let Some(t) = &team
        && store
            .team(t)
            .await
            .map_err(CreateKeyError::Store)?
            .is_none()
    {
        return Err(CreateKeyError::Invalid(format!(
            "There is no team `{t}`: make it first (`switchyard teams create {t}`, or the dashboard's team form)."
        )));
    }
    let owner = blank(&new.owner);
    if let Some(id) = &owner {
        check_owner(store, id).await?;
    }
    let secret = generate_key().map_err(CreateKeyError::Random)?;
    let key = ClientKey {
        id: generate_key_id().map_err(CreateKeyError::Random)?,
        prefix: secret.prefix.clone(),
        name,
        team,
        models: (new.models.iter())
            .flat_map(|m| m.split(','))
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_owned)
            .collect(),
        budget,
        rpm: new.rpm,
        tpm: new.tpm,
        max_parallel: new.max_parallel,
        expires_ms,
        admin: new.admin,
        created_ms: now_ms,
        revoked_ms: None,
        owner,
    };
    Ok((secret, key))
}

/// `Ok` when user `id` may own a new key: they exist and are not disabled.
pub(crate) async fn check_owner<S>(store: &S, id: &str) -> Result<(), CreateKeyError>
where
    S: KeyStore + ?Sized,
{
    match store.user(id).await.map_err(CreateKeyError::Store)? {
        None => Err(CreateKeyError::Invalid(format!(
            "There is no user `{id}`: a user is made at their first sign-in (`switchyard users list` shows them)."
        ))),
        Some(u) if u.disabled_ms.is_some() => Err(CreateKeyError::Invalid(format!(
            "The user `{id}` is disabled: enable them first (`switchyard users update {id} --enable`)."
        ))),
        Some(_) => Ok(()),
    }
}

/// Makes team `name` at `now_ms` with the budget `budget` as written; blank is none.
pub async fn create_team<S>(
    store: &S,
    name: &str,
    budget: Option<&str>,
    now_ms: i64,
) -> Result<Team, CreateKeyError>
where
    S: KeyStore + ?Sized,
{
    let team = prepare_team(name, budget, now_ms)?;
    stored_team(store.create_team(&team).await, team)
}

/// Makes team `name` for `by` at `now_ms`, with its audit row.
pub async fn create_team_by<S>(
    store: &S,
    name: &str,
    budget: Option<&str>,
    (by, now_ms): (&Actor, i64),
) -> Result<Team, CreateKeyError>
where
    S: AuditStore + ?Sized,
{
    let team = prepare_team(name, budget, now_ms)?;
    let shown = team
        .budget
        .map_or_else(|| "none".to_owned(), |b| b.to_string());
    let target = format!("team {}", team.name);
    let entry = AuditEntry::new(
        by,
        now_ms,
        "team.create",
        target,
        format!("budget: {shown}"),
    );
    stored_team(store.create_team_audited(&team, &entry).await, team)
}

fn stored_team(stored: Result<(), StoreError>, team: Team) -> Result<Team, CreateKeyError> {
    match stored {
        Ok(()) => Ok(team),
        Err(StoreError::Conflict { .. }) => Err(CreateKeyError::Invalid(format!(
            "There is already a team `{}`.",
            team.name
        ))),
        Err(e) => Err(CreateKeyError::Store(e)),
    }
}

fn prepare_team(name: &str, budget: Option<&str>, now_ms: i64) -> Result<Team, CreateKeyError> {
    let name = name.trim().to_owned();
    if name.is_empty() || name.chars().count() > KEY_NAME_MAX {
        return Err(CreateKeyError::Invalid(format!(
            "Give the team a name, at most {KEY_NAME_MAX} characters."
        )));
    }
    let budget = (budget.map(str::trim).filter(|b| !b.is_empty()))
        .map(read_budget)
        .transpose()
        .map_err(CreateKeyError::Invalid)?;
    Ok(Team {
        name,
        budget,
        created_ms: now_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{SqliteStore, hash_key};

    #[tokio::test]
    async fn a_key_is_made_from_its_fields_as_written_and_stored_by_its_hash() {
        let store = SqliteStore::in_memory().unwrap();
        let new = NewKeyRequest {
            name: "  alice ".to_owned(),
            models: vec!["claude-*, gpt-5".to_owned(), " ".to_owned()],
            budget: Some("5/day".to_owned()),
            expires: Some("2030-01-01".to_owned()),
            rpm: Some(7),
            ..NewKeyRequest::default()
        };
        let made = create_client_key(&store, &new, 1_000).await.unwrap();
        assert!(!format!("{made:?}").contains(&made.secret.key));
        let found = store
            .key_by_hash(&hash_key(&made.secret.key))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found, made.key);
        assert_eq!(found.name, "alice");
        assert_eq!(found.models, ["claude-*", "gpt-5"]);
        assert_eq!(found.budget, Budget::parse("5/day"));
        assert_eq!(found.expires_ms, parse_utc_date("2030-01-01"));
        assert_eq!((found.rpm, found.created_ms), (Some(7), 1_000));
    }

    #[tokio::test]
    async fn a_field_that_does_not_parse_or_a_missing_team_makes_no_key() {
        let store = SqliteStore::in_memory().unwrap();
        let base = NewKeyRequest {
            name: "bob".to_owned(),
            ..NewKeyRequest::default()
        };
        for (bad, says) in [
            (
                NewKeyRequest {
                    name: " ".to_owned(),
                    ..base.clone()
                },
                "name",
            ),
            (
                NewKeyRequest {
                    budget: Some("5/week".to_owned()),
                    ..base.clone()
                },
                "5/week",
            ),
            (
                NewKeyRequest {
                    expires: Some("soon".to_owned()),
                    ..base.clone()
                },
                "soon",
            ),
            (
                NewKeyRequest {
                    team: Some("ops".to_owned()),
                    ..base.clone()
                },
                "no team `ops`",
            ),
        ] {
            match create_client_key(&store, &bad, 0).await {
                Err(CreateKeyError::Invalid(s)) => assert!(s.contains(says), "{s}"),
                other => panic!("{other:?}"),
            }
        }
        assert!(store.client_keys().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_team_is_made_once_with_its_budget() {
        let store = SqliteStore::in_memory().unwrap();
        let team = create_team(&store, " ops ", Some("100/month"), 5)
            .await
            .unwrap();
        assert_eq!(
            (team.name.as_str(), team.budget),
            ("ops", Budget::parse("100/month"))
        );
        assert_eq!(store.team("ops").await.unwrap(), Some(team));
        for (name, budget, says) in [
            ("ops", None, "already a team `ops`"),
            ("dev", Some("lots"), "`lots`"),
            ("", None, "name"),
        ] {
            match create_team(&store, name, budget, 0).await {
                Err(CreateKeyError::Invalid(s)) => assert!(s.contains(says), "{s}"),
                other => panic!("{other:?}"),
            }
        }
    }
}
