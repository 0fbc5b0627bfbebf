//! `switchyard serve` (SPEC R14): an HTTP gateway speaking the three dialects coding agents
//! speak (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) in front of
//! Switchyard's layer. The ingress dialects are pure modules that turn a client's request
//! JSON into one [`GatewayRequest`] and the [`ApiStreamChunk`]s of Switchyard's layer into
//! that dialect's bytes; the server routes each request and relays its answer.
//!
//! - `ingress/`: the dialects (R14.1, R14.4, R14.5), pure.
//! - `route.rs`: model name → route → failover chain (R14.3).
//! - `auth.rs`: client keys at the door (R14.6).
//! - `layer/`: Switchyard's layer under each request: the limits of R12, a keyed request's
//!   rate slot and budget hold (R14.6, R14.7) and the request's record, in the store tasks use
//!   (R14.4, R14.9).
//! - `relay/`: one request through the chain, relayed or collected, a cut answer continued
//!   (R14.2, R14.4).
//! - `metrics.rs`: `GET /metrics`, Prometheus text with the OTel GenAI names (R14.9).
//! - `models.rs`: `GET /v1/models` (R14.1, R14.3).
//! - `count.rs`: `POST /v1/messages/count_tokens`, Switchyard's estimate (R14.1).
//! - `reply.rs`: response bodies, the streaming body, the gateway's own errors (R14.5).
//! - `service.rs`: one HTTP request: endpoint, body cap, `x-request-id` (R14.9, R14.10).
//! - `server.rs`: the accept loop, `TCP_NODELAY`, the connection cap, shutdown (R14.9, R14.10).
//! - `idle.rs`: one connection's idle keep-alive and header read timeouts (R14.10).
//! - `ui/`: the dashboard at `/ui`: spend, keys, providers, live traffic (R14.11).
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
//!
//! [`ApiStreamChunk`]: switchyard_api::ApiStreamChunk
//! [`GatewayRequest`]: ingress::GatewayRequest

mod auth;
mod count;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod idle;
pub mod ingress;
mod layer;
mod metrics;
mod models;
mod relay;
mod reply;
mod route;
mod server;
mod service;
mod ui;

pub use auth::KeysRequired;
pub use layer::{DEFAULT_HOLD_LEASE, DEFAULT_RESERVE_USD};
pub use route::route_chains;
pub use server::{ServerLimits, serve};
pub use service::{DEFAULT_BODY_LIMIT, Gateway};
