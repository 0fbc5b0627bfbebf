//! Sign-ins sent to the provider and not yet back: each holds its PKCE verifier and nonce
//! under its state, bound to the browser that started it, for at most ten minutes.
//! Spec: R14.11b.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// How long a browser may stay at the provider before its sign-in must start again.
pub(crate) const LOGIN_TTL: Duration = Duration::from_secs(600);

/// How many sign-ins may wait at once; the oldest is dropped to make room.
pub(crate) const PENDING_MAX: usize = 256;

/// How many of them one client address may hold, so one address cannot push out the others.
pub(crate) const PER_ADDRESS: usize = 8;

/// One sign-in in progress. Its verifier and nonce never leave this process.
#[derive(Debug, Clone)]
pub(crate) struct Login {
    pub(crate) verifier: String,
    pub(crate) nonce: String,
    /// The random id in the starting browser's login cookie.
    pub(crate) browser: String,
    address: IpAddr,
    started: Instant,
}

impl Login {
    pub(crate) fn new(verifier: String, nonce: String, browser: String, address: IpAddr) -> Self {
        Self {
            verifier,
            nonce,
            browser,
            address,
            started: Instant::now(),
        }
    }
}

#[derive(Default)]
pub(crate) struct Pending {
    held: Mutex<HashMap<String, Login>>,
}

impl Pending {
    /// Holds `login` under `state`, dropping expired ones, then the address's oldest past
    /// [`PER_ADDRESS`], then the oldest of all past [`PENDING_MAX`].
    pub(crate) fn insert(&self, state: String, login: Login) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.retain(|_, l| l.started.elapsed() < LOGIN_TTL);
        let same = |l: &Login| l.address == login.address;
        if held.values().filter(|l| same(l)).count() >= PER_ADDRESS {
            drop_oldest(&mut held, same);
        }
        if held.len() >= PENDING_MAX {
            drop_oldest(&mut held, |_| true);
        }
        held.insert(state, login);
    }

    /// The sign-in `state` names, taken so it is used once, if it is live and `browser` started
    /// it.
    pub(crate) fn take(&self, state: &str, browser: Option<&str>) -> Option<Login> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let login = held.remove(state)?;
        let live = login.started.elapsed() < LOGIN_TTL;
        (live && browser == Some(login.browser.as_str())).then_some(login)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

fn drop_oldest(held: &mut HashMap<String, Login>, which: impl Fn(&Login) -> bool) {
    let oldest = (held.iter().filter(|(_, l)| which(l)))
        .min_by_key(|(_, l)| l.started)
        .map(|(state, _)| state.clone());
    if let Some(state) = oldest {
        held.remove(&state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login(browser: &str, last: u8) -> Login {
        Login::new(
            "v".into(),
            "n".into(),
            browser.into(),
            IpAddr::from([10, 0, 0, last]),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_login_is_taken_once_by_its_browser_within_its_time() {
        let p = Pending::default();
        p.insert("s1".into(), login("b1", 1));
        assert!(p.take("s1", Some("other")).is_none());
        // A wrong browser used it up: an attacker's callback cannot be retried either.
        assert!(p.take("s1", Some("b1")).is_none());
        p.insert("s2".into(), login("b2", 1));
        assert!(p.take("s2", None).is_none());
        p.insert("s3".into(), login("b3", 1));
        assert_eq!(p.take("s3", Some("b3")).unwrap().nonce, "n");
        assert!(p.take("s3", Some("b3")).is_none());
        p.insert("s4".into(), login("b4", 1));
        tokio::time::advance(LOGIN_TTL).await;
        assert!(p.take("s4", Some("b4")).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn two_sign_ins_started_in_one_browser_both_finish() {
        let p = Pending::default();
        p.insert("tab1".into(), login("b", 1));
        p.insert("tab2".into(), login("b", 1));
        assert!(p.take("tab2", Some("b")).is_some());
        assert!(p.take("tab1", Some("b")).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn one_address_holds_at_most_eight_and_all_together_at_most_256() {
        let p = Pending::default();
        p.insert("other".into(), login("x", 2));
        for i in 0..50 {
            tokio::time::advance(Duration::from_millis(1)).await;
            p.insert(format!("s{i}"), login("b", 1));
        }
        assert_eq!(p.len(), PER_ADDRESS + 1);
        // The address's newest are kept, and another address's login is untouched.
        assert!(p.take("s49", Some("b")).is_some() && p.take("s41", Some("b")).is_none());
        assert!(p.take("other", Some("x")).is_some());
        for i in 0..300u32 {
            p.insert(format!("m{i}"), login("b", (i % 200) as u8 + 3));
        }
        assert_eq!(p.len(), PENDING_MAX);
    }
}
