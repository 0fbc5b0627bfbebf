//! `switchyard serve`: an HTTP gateway that speaks OpenAI Chat Completions, OpenAI Responses,
//! Anthropic Messages and Google's Gemini API in front of Switchyard's layer.
//!
//! A request's path through the crate, in order:
//!
//! - `server.rs`, `idle.rs`: the socket, its timeouts and the connection cap.
//! - `endpoint.rs`: the routing table, (method, path) → endpoint and dialect.
//! - `service.rs`: the [`Gateway`] and the wiring of one request.
//! - `auth.rs`: client keys at the door; `body.rs`: the body under its cap.
//! - `ingress/`: the dialects, pure: parse, encode, collect, error bodies.
//! - `request/`: the request's context, its previous answer, its route, its admission.
//! - `relay/`: the answer, over as many attempts as it takes.
//! - `record/`: after the answer, its record, the request log and stored answers.
//! - `refusal.rs`: what the gateway answers itself; `shared.rs`: what every request shares.
//! - `reload.rs`: the configuration in effect, which a request reads once and a reload swaps.
//! - `metrics.rs`, `models.rs`, `count.rs`, `reply.rs`, `ui/`: the other endpoints' answers.
//! - `telemetry/`: the request's spans and the metrics, exported over OTLP.
//! - `websocket/`: Responses over a WebSocket, each turn one request through `service.rs`.
//!
//! ```
//! use switchyard_gateway::ingress::{Dialect, parse_request};
//!
//! # fn main() -> Result<(), switchyard_gateway::ingress::IngressError> {
//! let body = br#"{"model": "anthropic/claude-sonnet-4-5", "max_tokens": 64,
//!                 "messages": [{"role": "user", "content": "hi"}]}"#;
//! let request = parse_request(Dialect::AnthropicMessages, body)?;
//! assert_eq!(request.model, "anthropic/claude-sonnet-4-5");
//! assert_eq!(request.overrides.max_tokens, Some(64));
//! # Ok(())
//! # }
//! ```
//! Spec: R14.

mod auth;
mod body;
mod count;
mod cutoff;
mod endpoint;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod glob;
mod idle;
pub mod ingress;
mod metrics;
mod models;
mod oidc;
mod parsing;
mod record;
mod refusal;
mod relay;
mod reload;
mod reply;
mod request;
mod server;
mod service;
mod shared;
mod slots;
pub mod telemetry;
mod ui;
mod websocket;

pub use auth::KeysRequired;
pub use reload::check_routes;
pub use request::{DEFAULT_HOLD_LEASE, DEFAULT_RESERVE_USD, route_chains};
pub use server::{ServerLimits, serve};
pub use service::{DEFAULT_BODY_LIMIT, Gateway};
pub use telemetry::Telemetry;
