//! The dashboard at `/ui`: spend, keys and teams, providers and live traffic, for an
//! administrator signed in with an `--admin` key. `dashboard.rs` answers every `/ui` path.
//! Spec: R14.11.

mod api;
mod assets;
mod audit;
mod board;
mod dashboard;
pub(crate) mod form;
pub(crate) mod forwarded;
mod keys;
mod live;
mod pages;
mod providers;
mod reloads;
pub(crate) mod session;
mod spend;
mod throttle;

pub(crate) use dashboard::Ui;
pub(crate) use live::{Flight, Live};
pub(crate) use reloads::Reloads;
