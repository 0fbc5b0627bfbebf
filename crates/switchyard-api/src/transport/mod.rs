//! The one transport every provider goes through (SPEC R4.0, R1.4, R5, R6.4, R12.4): HTTP
//! clients built from each provider's connection settings (R12.4), and the driver that sends
//! one provider request and runs its stream mapper over the body under that request's options
//! — cancellation (R1.4), provider-level retry and its reports (R5), deadlines (R6.4) —
//! checking status and content type on the way (R4.0).
//!
//! Providers never touch HTTP: they hand the driver a [`WireRequest`] (pure data) and an
//! [`EventParser`] (pure mapping).
//!
//! - `client`: the shared HTTP clients (R12.4); `streaming`: the streaming client and its
//!   body (hyper's, or reqwest's through a proxy);
//! - `request`: what providers hand over; `send`: one request sent and its stream opened (R5,
//!   R7.6); `driver`: the whole request ([`stream`]); `models`: a server's model list; `chunk_stream`: its body read, decoded
//!   and mapped under the deadlines; `deadline`: the deadlines and cancellation (R6.4, R1.4).

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
