//! Failures: every failure a provider can produce becomes an [`ApiError`] whose [`ErrorKind`]
//! decides what the task does next.

pub mod api_error;
pub(crate) mod body;
mod classify;
mod display;
pub(crate) mod finish;
pub mod kind;
mod remedy;

pub use api_error::{ApiError, INCOMPLETE_STREAM, NOT_SENT};
pub use classify::{classify, is_model_not_found};
pub use kind::ErrorKind;
