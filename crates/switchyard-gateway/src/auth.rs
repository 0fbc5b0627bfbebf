//! Client keys at the gateway's door: the key a client presents, looked up by its SHA-256 in
//! the store with its team and owner, and each refusal as one sentence in the client's dialect.
//! Spec: R14.6, R14.6b, R14.9, R14.10.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hyper::HeaderMap;
use switchyard_core::limits::Clock;
use switchyard_core::store::{ClientKey, KeyStore, StoreError, Team, User, hash_key};
use tokio::time::Instant;

use crate::glob::glob_matches;
use crate::refusal::{Kind, Refusal};

/// How long a key looked up in the store is trusted: a revoked key stops working within it.
pub(crate) const CACHE_TTL: Duration = Duration::from_secs(1);

/// How many key hashes the cache keeps; it is emptied when full, so made-up keys cannot grow it.
const CACHE_MAX: usize = 10_000;

/// The longest header value read as a key; a longer one is refused unread.
pub(crate) const KEY_MAX: usize = 512;

/// A request that presented a valid key: the key and its team as the store has them.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub(crate) key: ClientKey,
    /// Its team, when it names one that exists.
    pub(crate) team: Option<Team>,
    /// Its owner, when it has one that exists.
    pub(crate) user: Option<User>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Completions, counting tokens, listing models: a key made without `--admin`.
    Client,
    /// `/metrics`: a key made with `--admin`.
    Admin,
}

/// A refusal at the door: `/metrics` counts every one as `auth`.
fn denied(status: u16, message: String) -> Refusal {
    Refusal::new(status, Kind::Auth, message)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeysRequired {
    /// `serve --no-auth`, or a gateway built without keys.
    Never,
    /// The store held a key when the gateway started.
    Always,
    /// From the store's first key on, looked for at most once a second.
    OnceKeysExist,
}

pub(crate) struct Auth {
    store: Arc<dyn KeyStore>,
    /// Keys are required, from the start or since the store first held one.
    required: AtomicBool,
    watch: bool,
    watched: Mutex<Option<Instant>>,
    clock: Clock,
    cache: Mutex<HashMap<String, (Instant, Option<Client>)>>,
}

impl Auth {
    pub(crate) fn new(store: Arc<dyn KeyStore>, when: KeysRequired) -> Self {
        Self {
            store,
            required: AtomicBool::new(when == KeysRequired::Always),
            watch: when == KeysRequired::OnceKeysExist,
            watched: Mutex::new(None),
            clock: Clock::system(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn required(&self) -> bool {
        self.required.load(Ordering::Acquire)
    }

    /// Whether keys are required for this request. A store that cannot say is a 503: the door
    /// stays shut rather than open by mistake.
    async fn requires(&self) -> Result<bool, Refusal> {
        if self.required() {
            return Ok(true);
        }
        if !self.watch {
            return Ok(false);
        }
        {
            let mut watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
            if watched.is_some_and(|at| at.elapsed() < CACHE_TTL) {
                return Ok(false);
            }
            *watched = Some(Instant::now());
        }
        match self.store.has_client_keys().await {
            Ok(false) => Ok(false),
            Ok(true) => {
                self.required.store(true, Ordering::Release);
                tracing::info!("the store holds a client key now: every request needs one");
                Ok(true)
            }
            Err(e) => {
                *self.watched.lock().unwrap_or_else(PoisonError::into_inner) = None;
                Err(denied(
                    503,
                    format!(
                        "The gateway's store cannot say whether client keys are needed now: {e}."
                    ),
                ))
            }
        }
    }

    /// The client behind `headers` and the URL's `query` for `purpose`: `None` when keys are
    /// off. A key whose owner last signed in longer than `membership` ago is refused.
    pub(crate) async fn check(
        &self,
        headers: &HeaderMap,
        query: Option<&str>,
        purpose: Purpose,
        membership: Option<Duration>,
    ) -> Result<Option<Client>, Refusal> {
        if !self.requires().await? {
            return Ok(None);
        }
        if credentials(headers) > 1 {
            return Err(denied(
                401,
                "The request carries two different credentials (two Authorization headers, or key headers that differ): send the client key once.".to_owned(),
            ));
        }
        let Some(presented) = presented_key(headers).or_else(|| query_key(query)) else {
            return Err(denied(
                401,
                "This gateway needs a client key: send it as `Authorization: Bearer KEY` or `x-api-key: KEY` (an administrator makes one with `switchyard keys create`).".to_owned(),
            ));
        };
        let client = self.lookup(presented).await?;
        let Some(client) = client else {
            return Err(denied(
                401,
                "The client key is not one this gateway knows: check it, or ask for one made with `switchyard keys create`.".to_owned(),
            ));
        };
        let key = &client.key;
        let prefix = &key.prefix;
        let now = self.clock.now_ms();
        if key.revoked_ms.is_some() {
            return Err(denied(
                401,
                format!("The client key {prefix}… was revoked: ask for a new one."),
            ));
        }
        if let Some(expires) = key.expires_ms.filter(|e| *e <= now) {
            let when = utc_time(expires);
            return Err(denied(
                401,
                format!("The client key {prefix}… expired on {when}: ask for a new one."),
            ));
        }
        owner_allows(&client, membership, now)?;
        match (purpose, key.admin) {
            (Purpose::Client, true) => Err(denied(
                403,
                format!(
                    "The client key {prefix}… is an admin key, which only reads /metrics: use a key made without --admin for requests."
                ),
            )),
            (Purpose::Admin, false) => Err(denied(
                403,
                format!(
                    "/metrics needs an admin key, and {prefix}… is not one: make one with `switchyard keys create --admin`."
                ),
            )),
            _ => Ok(Some(client)),
        }
    }

    /// The client of `presented`, from the cache when fresh, else from the store.
    async fn lookup(&self, presented: &str) -> Result<Option<Client>, Refusal> {
        let hash = hash_key(presented);
        let cache = || self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, client)) = cache().get(&hash)
            && at.elapsed() < CACHE_TTL
        {
            return Ok(client.clone());
        }
        let unreachable = |e: StoreError| {
            denied(
                503,
                format!("The gateway's store cannot check client keys now: {e}."),
            )
        };
        let key = self.store.key_by_hash(&hash).await.map_err(unreachable)?;
        let client = match key {
            Some(key) => {
                // Registered, so the key is scrubbed from everything logged or shown after.
                switchyard_api::secrets::register(presented);
                let team = match key.team.as_deref() {
                    Some(name) => self.store.team(name).await.map_err(unreachable)?,
                    None => None,
                };
                let user = match key.owner.as_deref() {
                    Some(id) => self.store.user(id).await.map_err(unreachable)?,
                    None => None,
                };
                Some(Client { key, team, user })
            }
            None => None,
        };
        let mut cache = cache();
        if cache.len() >= CACHE_MAX {
            cache.clear();
        }
        cache.insert(hash, (Instant::now(), client.clone()));
        Ok(client)
    }
}

/// The key in `headers`: `Authorization: Bearer KEY`, else `x-api-key: KEY` as Anthropic
/// clients send it, else `x-goog-api-key: KEY` as Google's do.
pub(crate) fn presented_key(headers: &HeaderMap) -> Option<&str> {
    let bearer = (headers.get(hyper::header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(rest.trim())
        });
    let named = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let key = bearer
        .or_else(|| named("x-api-key"))
        .or_else(|| named("x-goog-api-key"))?;
    usable(key)
}

/// The key in the URL's `key` parameter, as Google's clients may send it. The URL is never
/// logged or recorded, and a key found is scrubbed from everything after.
pub(crate) fn query_key(query: Option<&str>) -> Option<&str> {
    let key = (query?.split('&')).find_map(|pair| pair.strip_prefix("key="))?;
    usable(key)
}

fn usable(key: &str) -> Option<&str> {
    (!key.is_empty() && key.len() <= KEY_MAX).then_some(key)
}

/// How many different credentials `headers` carry in `Authorization`, `x-api-key` and
/// `x-goog-api-key`. More
/// than one leaves the gateway to guess which is the client's key, so it does not.
fn credentials(headers: &HeaderMap) -> usize {
    let bearer = (headers.get_all(hyper::header::AUTHORIZATION).iter()).map(|v| {
        let v = v.as_bytes().trim_ascii();
        match v.iter().position(|b| *b == b' ') {
            Some(i) if v[..i].eq_ignore_ascii_case(b"bearer") => v[i..].trim_ascii(),
            _ => v,
        }
    });
    let named = |name| (headers.get_all(name).iter()).map(|v| v.as_bytes().trim_ascii());
    let api_key = named("x-api-key").chain(named("x-goog-api-key"));
    let mut seen: Vec<&[u8]> = bearer.chain(api_key).filter(|v| !v.is_empty()).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM UTC`.
pub(crate) fn utc_time(ms: i64) -> String {
    let (y, m, d) = switchyard_core::store::civil_from_days(ms.div_euclid(86_400_000));
    let minutes = ms.rem_euclid(86_400_000) / 60_000;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        minutes / 60,
        minutes % 60
    )
}

/// `Ok` when `client`'s key has no owner, or an owner who is enabled and signed in within
/// `membership`; the owner is read with the key, so a change shows within a second.
fn owner_allows(client: &Client, membership: Option<Duration>, now: i64) -> Result<(), Refusal> {
    let prefix = &client.key.prefix;
    if client.key.owner.is_none() {
        return Ok(());
    }
    let Some(user) = &client.user else {
        return Err(denied(
            403,
            format!(
                "The client key {prefix}… belongs to a user this gateway does not know: ask an administrator for a new key."
            ),
        ));
    };
    if user.disabled_ms.is_some() {
        return Err(denied(
            403,
            format!(
                "The client key {prefix}… belongs to a user who was disabled: sign in to the dashboard again, or ask an administrator."
            ),
        ));
    }
    let bound = membership.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    if bound.is_some_and(|b| now.saturating_sub(user.signed_in_ms) > b) {
        let when = utc_time(user.signed_in_ms);
        return Err(denied(
            403,
            format!(
                "The client key {prefix}…'s owner last signed in on {when}: sign in to the dashboard again to renew."
            ),
        ));
    }
    Ok(())
}

/// Whether `client`'s key, and its owner, may use `model`; no globs is every model.
pub(crate) fn allow_model(client: &Client, model: &str) -> Result<(), Refusal> {
    let owner = client.user.as_ref().map(|u| &u.models);
    for (globs, whose) in [
        (&client.key.models, "it"),
        (owner.unwrap_or(&Vec::new()), "its owner"),
    ] {
        if globs.is_empty() || globs.iter().any(|g| glob_matches(g, model)) {
            continue;
        }
        return Err(denied(
            403,
            format!(
                "The client key {}… may not use the model `{model}`; {whose} may use {}.",
                client.key.prefix,
                globs.join(", ")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(user: Option<User>) -> Client {
        let key = ClientKey {
            id: "key_1".into(),
            prefix: "sk-sy-abcdef".into(),
            name: "laptop".into(),
            team: None,
            models: vec![],
            budget: None,
            rpm: None,
            tpm: None,
            max_parallel: None,
            expires_ms: None,
            admin: false,
            created_ms: 0,
            revoked_ms: None,
            owner: Some("usr_1".into()),
        };
        Client {
            key,
            team: None,
            user,
        }
    }

    #[test]
    fn an_owned_key_needs_its_owner_enabled_and_signed_in_within_the_bound() {
        let day = 86_400_000;
        let user = User {
            id: "usr_1".into(),
            issuer: "https://idp".into(),
            subject: "s".into(),
            email: None,
            name: None,
            role: switchyard_core::store::Role::Member,
            team: None,
            models: vec!["gpt-*".into()],
            budget: None,
            created_ms: 0,
            signed_in_ms: day,
            disabled_ms: None,
        };
        let week = Some(Duration::from_secs(7 * 86_400));
        assert!(owner_allows(&owned(Some(user.clone())), week, 8 * day).is_ok());
        assert!(owner_allows(&owned(Some(user.clone())), None, 80 * day).is_ok());
        let said = |r: Result<(), Refusal>| format!("{:?}", r.unwrap_err());
        let stale = said(owner_allows(&owned(Some(user.clone())), week, 8 * day + 1));
        assert!(
            stale.contains("403") && stale.contains("again to renew"),
            "{stale}"
        );
        let off = User {
            disabled_ms: Some(2 * day),
            ..user.clone()
        };
        let refused = said(owner_allows(&owned(Some(off)), None, 3 * day));
        assert!(refused.contains("was disabled"), "{refused}");
        assert!(owner_allows(&owned(None), None, 0).is_err());
        let client = owned(Some(user));
        assert!(allow_model(&client, "gpt-5").is_ok());
        let outside = said(allow_model(&client, "claude-sonnet-4-5"));
        assert!(outside.contains("its owner may use gpt-*"), "{outside}");
    }

    #[test]
    fn a_key_is_read_from_either_header() {
        let mut h = HeaderMap::new();
        assert_eq!(presented_key(&h), None);
        h.insert("x-api-key", "sk-sy-abc".parse().unwrap());
        assert_eq!(presented_key(&h), Some("sk-sy-abc"));
        h.insert("authorization", "Bearer  sk-sy-def ".parse().unwrap());
        assert_eq!(presented_key(&h), Some("sk-sy-def"));
        h.insert("authorization", "Basic xyz".parse().unwrap());
        assert_eq!(presented_key(&h), Some("sk-sy-abc"));
    }

    #[test]
    fn two_different_credentials_are_counted_and_the_same_one_twice_is_one() {
        let mut h = HeaderMap::new();
        h.append("authorization", "Bearer sk-sy-abc".parse().unwrap());
        h.append("x-api-key", "sk-sy-abc".parse().unwrap());
        assert_eq!(credentials(&h), 1);
        h.append("authorization", "Bearer sk-sy-def".parse().unwrap());
        assert_eq!(credentials(&h), 2);
        let mut h = HeaderMap::new();
        h.append("authorization", "Bearer sk-sy-abc".parse().unwrap());
        h.append("x-api-key", "sk-sy-xyz".parse().unwrap());
        assert_eq!(credentials(&h), 2);
    }
}
