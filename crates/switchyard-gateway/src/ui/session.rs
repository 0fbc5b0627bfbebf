//! The dashboard's sessions: an `--admin` client key posted once and checked by its hash, or a
//! person signed in through the OpenID provider, each answered with a random session id in an
//! `HttpOnly` cookie. The key itself is never kept, echoed or put in the cookie.
//! Spec: R14.11, R14.11b.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hyper::HeaderMap;
use switchyard_core::limits::Clock;
use switchyard_core::store::{ClientKey, TaskStore, generate_key, hash_key};

use super::people::{Person, Role};
use tokio::time::Instant;

pub(crate) const COOKIE: &str = "switchyard_session";

pub(crate) const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);

/// How many sessions are held at once; the oldest is ended to make room.
const SESSIONS_MAX: usize = 256;

/// The longest key read from the sign-in form; a longer one is refused unread.
const KEY_MAX: usize = 512;

/// One signed-in session: who it is and its expiry.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) who: Who,
    expires: Instant,
}

/// Who signed in.
#[derive(Debug, Clone)]
pub(crate) enum Who {
    /// An administrator with an `--admin` key: its id and prefix, never the key.
    Key { key_id: String, prefix: String },
    /// A person signed in through the OpenID provider.
    User(Person),
}

impl Session {
    /// Whether this session may see and change everything: an admin key or an admin person.
    pub(crate) fn admin(&self) -> bool {
        match &self.who {
            Who::Key { .. } => true,
            Who::User(p) => p.role == Role::Admin,
        }
    }

    /// `admin`, `member` or `viewer`; an admin key's session is an admin's.
    pub(crate) fn role_name(&self) -> &'static str {
        match &self.who {
            Who::Key { .. } => "admin",
            Who::User(p) => p.role.as_str(),
        }
    }

    /// How the page header names who is signed in.
    pub(crate) fn shown(&self) -> String {
        match &self.who {
            Who::Key { prefix, .. } => format!("{prefix}…"),
            Who::User(p) => format!("{} ({})", p.display, p.role.as_str()),
        }
    }
}

/// The sessions of this process; they end at their expiry, at sign-out, or when it stops.
pub(crate) struct Sessions {
    store: Arc<dyn TaskStore>,
    clock: Clock,
    held: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    pub(crate) fn new(store: Arc<dyn TaskStore>) -> Self {
        Self {
            store,
            clock: Clock::system(),
            held: Mutex::new(HashMap::new()),
        }
    }

    /// Signs in with `presented`: a new session id, or why not.
    pub(crate) async fn sign_in(&self, presented: &str) -> Result<String, Refused> {
        let presented = presented.trim();
        if presented.is_empty() || presented.len() > KEY_MAX {
            return Err(Refused::Key(
                "Paste an admin client key (made with `switchyard keys create --admin`)."
                    .to_owned(),
            ));
        }
        let key = (self.store.key_by_hash(&hash_key(presented)).await).map_err(|e| {
            Refused::Unavailable(format!("The gateway's store cannot check keys now: {e}."))
        })?;
        let key = admin_key(key, self.clock.now_ms()).map_err(Refused::Key)?;
        switchyard_api::secrets::register(presented);
        self.open(Who::Key {
            key_id: key.id,
            prefix: key.prefix,
        })
    }

    /// A new session for `who`: its random id.
    pub(crate) fn open(&self, who: Who) -> Result<String, Refused> {
        // A fresh key's hash: 64 hex characters of 192 OS-random bits, nothing of the admin key.
        let id = generate_key().map_err(Refused::Unavailable)?.hash;
        let session = Session {
            who,
            expires: Instant::now() + SESSION_TTL,
        };
        let mut held = self.lock();
        held.retain(|_, s| s.expires > Instant::now());
        if held.len() >= SESSIONS_MAX
            && let Some(oldest) = held
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())
        {
            held.remove(&oldest);
        }
        held.insert(id.clone(), session);
        Ok(id)
    }

    pub(crate) fn current(&self, headers: &HeaderMap) -> Option<Session> {
        let id = session_id(headers)?;
        let mut held = self.lock();
        match held.get(id) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                held.remove(id);
                None
            }
            None => None,
        }
    }

    /// Whether `session`'s admin key is still good, so a revoked key's sessions end at their next
    /// request. A store that does not answer ends none but answers nothing either.
    pub(crate) async fn key_still_good(&self, session: &Session) -> bool {
        let now = self.clock.now_ms();
        let key_id = match &session.who {
            Who::Key { key_id, .. } => key_id,
            Who::User(p) => return self.user_still_good(p).await,
        };
        match self.store.client_keys().await {
            Ok(keys) => keys.iter().any(|k| {
                k.id == *key_id
                    && k.admin
                    && k.revoked_ms.is_none()
                    && k.expires_ms.is_none_or(|e| e > now)
            }),
            Err(_) => false,
        }
    }

    /// Whether the person `p` may still use the dashboard: their user exists and is not
    /// disabled. A store that does not answer ends nothing but answers nothing either.
    async fn user_still_good(&self, p: &Person) -> bool {
        super::people::enabled(&*self.store, &p.id).await
    }

    pub(crate) fn sign_out(&self, headers: &HeaderMap) {
        if let Some(id) = session_id(headers) {
            self.lock().remove(id);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Refused {
    /// The key is missing, unknown, revoked, expired or not an admin key: a failed attempt.
    Key(String),
    /// The store or the OS random source did not answer: not the key's fault.
    Unavailable(String),
}

/// The key found by its hash, if it may sign in at `now_ms`; else the sentence why not.
fn admin_key(found: Option<ClientKey>, now_ms: i64) -> Result<ClientKey, String> {
    match found {
        None => Err("That is not a key this gateway knows: check it, or make one with `switchyard keys create --admin`.".to_owned()),
        Some(k) if k.revoked_ms.is_some() => {
            Err(format!("The key {}… was revoked: use another admin key.", k.prefix))
        }
        Some(k) if k.expires_ms.is_some_and(|e| e <= now_ms) => {
            Err(format!("The key {}… has expired: use another admin key.", k.prefix))
        }
        Some(k) if !k.admin => Err(format!("The key {}… is not an admin key: the dashboard needs one made with `switchyard keys create --admin`.", k.prefix)),
        Some(k) => Ok(k),
    }
}

/// The `Set-Cookie` value giving session `id`; `secure` adds `Secure`, as `forwarded.rs`
/// decides. A session from the OpenID provider is `SameSite=Lax`: it is set in the answer to
/// the provider's cross-site redirect back, and a strict cookie would not be sent on the
/// redirect that follows. Lax sends it only on another site's top-level GET navigations, and no
/// dashboard GET changes anything: a change needs `x-switchyard-ui: 1`, which no cross-site
/// form or link can send.
pub(crate) fn cookie(id: &str, secure: bool, lax: bool) -> String {
    let age = SESSION_TTL.as_secs();
    let secure = if secure { "; Secure" } else { "" };
    let site = if lax { "Lax" } else { "Strict" };
    format!("{COOKIE}={id}; HttpOnly; SameSite={site}; Path=/ui; Max-Age={age}{secure}")
}

/// The cookie binding a sign-in at the provider to the browser that started it, lax so the
/// provider's redirect back carries it, and only to `/ui/oidc`.
pub(crate) fn login_cookie(id: &str, secure: bool, max_age: u64) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{LOGIN_COOKIE}={id}; HttpOnly; SameSite=Lax; Path=/ui/oidc; Max-Age={max_age}{secure}")
}

pub(crate) const LOGIN_COOKIE: &str = "switchyard_login";

/// The login cookie's id: the random token `login_cookie` set, at most 64 URL-safe characters.
pub(crate) fn login_id(headers: &HeaderMap) -> Option<&str> {
    cookie_value(headers, LOGIN_COOKIE).filter(|id| {
        id.len() <= 64
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

pub(crate) fn cookie_cleared(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0{secure}")
}

/// The session id in the request's `Cookie` headers: 64 hex characters.
pub(crate) fn session_id(headers: &HeaderMap) -> Option<&str> {
    cookie_value(headers, COOKIE)
        .filter(|id| id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn cookie_value<'h>(headers: &'h HeaderMap, wanted: &str) -> Option<&'h str> {
    let cookies = headers.get_all(hyper::header::COOKIE);
    cookies
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == wanted)
        .map(|(_, id)| id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_read_among_others_and_must_look_like_a_session() {
        let mut h = HeaderMap::new();
        let id = "a".repeat(64);
        h.insert(
            "cookie",
            format!("x=1; {COOKIE}={id}; y=2").parse().unwrap(),
        );
        assert_eq!(session_id(&h), Some(id.as_str()));
        h.insert("cookie", format!("{COOKIE}=sk-sy-123").parse().unwrap());
        assert_eq!(session_id(&h), None);
        let set = cookie(&id, false, false);
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/ui")
        );
        assert!(!set.contains("Secure") && cookie(&id, true, false).ends_with("; Secure"));
        assert!(cookie(&id, false, true).contains("SameSite=Lax"));
        h.insert(
            "cookie",
            format!("{LOGIN_COOKIE}=abc_-9; {COOKIE}={id}")
                .parse()
                .unwrap(),
        );
        assert_eq!(login_id(&h), Some("abc_-9"));
        h.insert("cookie", format!("{LOGIN_COOKIE}=a;b").parse().unwrap());
        assert_eq!(login_id(&h), Some("a"));
        h.insert("cookie", format!("{LOGIN_COOKIE}=a%20b").parse().unwrap());
        assert_eq!(login_id(&h), None);
        assert!(cookie_cleared(true).contains("Max-Age=0; Secure"));
    }
}
