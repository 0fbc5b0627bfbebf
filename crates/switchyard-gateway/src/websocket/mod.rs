//! Responses over a WebSocket, as Codex CLI speaks it: `GET /v1/responses` upgraded, each
//! `response.create` message one Responses request through the gateway's own pipeline, its
//! stream's events sent back as text messages.
//! Spec: R14.1b.

mod chain;
mod events;
mod session;
mod upgrade;

#[cfg(feature = "fuzzing")]
pub(crate) use chain::{Chain, Read};
pub(crate) use session::Turn;
pub(crate) use upgrade::upgrade;
