//! Failures (SPEC R7): `ApiError`, `ErrorKind` and the one classification function.
//!
//! Every failure a provider can produce — an HTTP error status, an error event inside a 200
//! stream, a dropped connection, a body we cannot decode — becomes an [`ApiError`] whose
//! [`ErrorKind`] decides what the task does next (retry, truncate, ask, stop).
//!
//! - [`kind`]: the kinds (R7.1) and which are never retried (R6.7);
//! - [`api_error`]: the error and its builders (R6.11);
//! - [`classify()`]: the classifier (R7, R7.2, R7.3), and `from_provider`, which uses it;
//! - `remedy`: failures waiting cannot fix and what to change (R7.4), shown by `Display`;
//! - `body`: a provider's error body read into an error; `finish`: finish reasons that end a
//!   stream in a named error (R7.5).

pub mod api_error;
pub(crate) mod body;
mod classify;
mod display;
pub(crate) mod finish;
mod from_provider;
pub mod kind;
mod remedy;

pub use api_error::{ApiError, INCOMPLETE_STREAM, NOT_SENT};
pub use classify::{classify, is_model_not_found};
pub use kind::ErrorKind;
