//! Sign-in attempts bounded per client address and overall in a fixed window; past either
//! cap every sign-in, a right key too, is a 429 until the window ends. Sessions already
//! signed in are not touched.
//! Spec: R14.11.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

pub(crate) const WINDOW: Duration = Duration::from_secs(60);

/// Failed sign-ins one client address may make in a window.
pub(crate) const PER_ADDRESS: u32 = 10;

/// Failed sign-ins all clients together may make in a window. An address is remembered
/// only for an attempt the window counts, so this also bounds the memory held.
pub(crate) const OVERALL: u32 = 100;

pub(crate) struct Throttle {
    held: Mutex<Window>,
}

struct Window {
    started: Instant,
    overall: u32,
    by_address: HashMap<IpAddr, u32>,
}

impl Throttle {
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            held: Mutex::new(Window {
                started: now,
                overall: 0,
                by_address: HashMap::new(),
            }),
        }
    }

    /// Whether a sign-in from `address` may be checked at `now`; else how long until the window
    /// ends. An attempt counts as failed until [`Throttle::succeeded`], so attempts made at once
    /// cannot pass the caps while their keys are being checked.
    pub(crate) fn begin(&self, address: IpAddr, now: Instant) -> Result<(), Duration> {
        let mut w = self.window(now);
        let mine = w.by_address.get(&address).copied().unwrap_or(0);
        if w.overall >= OVERALL || mine >= PER_ADDRESS {
            let left = (w.started + WINDOW).saturating_duration_since(now);
            return Err(left.max(Duration::from_secs(1)));
        }
        w.overall += 1;
        *w.by_address.entry(address).or_insert(0) += 1;
        Ok(())
    }

    /// The sign-in from `address` begun in this window succeeded: it no longer counts.
    pub(crate) fn succeeded(&self, address: IpAddr, now: Instant) {
        let mut w = self.window(now);
        let Some(mine) = w.by_address.get_mut(&address) else {
            return;
        };
        *mine = mine.saturating_sub(1);
        if *mine == 0 {
            w.by_address.remove(&address);
        }
        w.overall = w.overall.saturating_sub(1);
    }

    fn window(&self, now: Instant) -> std::sync::MutexGuard<'_, Window> {
        let mut w = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if now.saturating_duration_since(w.started) >= WINDOW {
            w.started = now;
            w.overall = 0;
            w.by_address.clear();
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn an_address_is_refused_after_its_failures_until_the_window_ends() {
        let start = Instant::now();
        let t = Throttle::new(start);
        // A success gives its attempt back.
        assert!(t.begin(ip(1), start).is_ok());
        t.succeeded(ip(1), start);
        for _ in 0..PER_ADDRESS {
            assert!(t.begin(ip(1), start).is_ok());
        }
        let later = start + Duration::from_secs(15);
        assert_eq!(t.begin(ip(1), later), Err(Duration::from_secs(45)));
        // Another address is still let in.
        assert!(t.begin(ip(2), later).is_ok());
        // A new window forgets.
        assert!(t.begin(ip(1), start + WINDOW).is_ok());
    }

    #[test]
    fn all_addresses_together_are_bounded_and_so_is_the_memory() {
        let start = Instant::now();
        let t = Throttle::new(start);
        let mut let_in = 0;
        for i in 0..(OVERALL + 50) {
            let address = IpAddr::from([10, 1, (i / 256) as u8, (i % 256) as u8]);
            let_in += u32::from(t.begin(address, start).is_ok());
        }
        assert_eq!(let_in, OVERALL);
        assert!(t.begin(ip(200), start).is_err());
        let held = t.held.lock().unwrap();
        assert_eq!(held.overall, OVERALL);
        assert!(held.by_address.len() <= OVERALL as usize);
    }
}
