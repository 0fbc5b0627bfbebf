//! The one transport every provider goes through: HTTP clients from connection settings, and the
//! driver that sends a request and maps its body under its cancellation, retry and deadlines.
//! Providers hand it a [`WireRequest`] and an [`EventParser`] and never touch HTTP.
//! Spec: R4.0, R1.4, R5, R6.4, R12.4.

mod chunk_stream;
mod client;
mod deadline;
mod driver;
mod models;
mod request;
mod send;
mod streaming;

pub(crate) use client::HttpClient;
pub(crate) use deadline::{before, cancelled, deadline_after, first_content_timeout, idle_timeout};
pub(crate) use driver::stream;
pub use models::served_models;
pub(crate) use request::{Endpoint, EventParser, Origin, PendingRequest, WireRequest};
