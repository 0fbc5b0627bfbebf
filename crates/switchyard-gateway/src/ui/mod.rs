//! The dashboard at `/ui`: spend, keys and teams, providers and live traffic, for an
//! administrator signed in with an `--admin` key or through single sign-on, and each member's
//! own keys. `dashboard.rs` answers every `/ui` path.
//! Spec: R14.11, R14.11b.

mod answers;
mod api;
mod assets;
mod audit;
mod board;
mod dashboard;
pub(crate) mod form;
pub(crate) mod forwarded;
mod keys;
mod live;
mod own;
mod pages;
mod people;
mod providers;
mod reloads;
pub(crate) mod session;
mod spend;
mod sso;
mod throttle;

pub(crate) use dashboard::Ui;
pub(crate) use live::{Flight, Live};
pub(crate) use reloads::Reloads;
