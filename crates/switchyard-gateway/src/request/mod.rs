//! One completion request before its answer, in order: its context, its previous answer,
//! its route and a keyed request's admission.

mod admission;
mod context;
mod leased;
mod previous;
mod reservation;
mod route;

pub(crate) use admission::Admission;
pub use admission::{DEFAULT_HOLD_LEASE, DEFAULT_RESERVE_USD};
pub(crate) use context::RequestContext;
pub use leased::DEFAULT_SLICE_LEASE;
pub(crate) use leased::{Hold, Leased};
pub(crate) use previous::resolve as resolve_previous;
pub use route::route_chains;
pub(crate) use route::{Chain, RouteError, Router, route_config};
