//! The dashboard `switchyard serve` serves at `/ui` (SPEC R14.11): spend, keys and teams,
//! providers, and live traffic, for an administrator signed in with an `--admin` key.
//!
//! - `dashboard.rs`: [`Ui`], the one place a `/ui` path is answered; no session, no answer.
//! - `session.rs`: sign-in with an admin key, the session cookie and its expiry.
//! - `throttle.rs`: failed sign-ins bounded per client address and overall (429).
//! - `forwarded.rs`: what a trusted proxy says: HTTPS (the cookie's `Secure`), the client's
//!   address.
//! - `pages.rs`: the HTML of each page and of the sign-in form.
//! - `api.rs`: the JSON endpoints, the live page's server-sent events, the changes.
//! - `spend.rs`, `keys.rs`, `providers.rs`: each page's figures, read from the store.
//! - `live.rs`: [`Live`], the requests in flight and the last errors (a registry the relay
//!   feeds).
//! - `assets.rs`: the embedded stylesheet, script and vendored uPlot.
//! - `form.rs`: urlencoded form and query fields.

mod api;
mod assets;
mod board;
mod dashboard;
pub(crate) mod form;
pub(crate) mod forwarded;
mod keys;
mod live;
mod pages;
mod providers;
pub(crate) mod session;
mod spend;
mod throttle;

pub(crate) use dashboard::Ui;
pub(crate) use live::{Flight, Live};
