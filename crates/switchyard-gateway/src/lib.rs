//! `switchyard serve`'s pieces (SPEC R14): the three ingress dialects coding agents speak,
//! each a pure module that turns a client's request JSON into one [`GatewayRequest`] and the
//! [`ApiStreamChunk`]s of Switchyard's layer into that dialect's bytes.
//!
//! ```
//! use switchyard_gateway::ingress::{Dialect, parse_request};
//!
//! let body = br#"{"model": "anthropic/claude-sonnet-4-5", "max_tokens": 64,
//!                 "messages": [{"role": "user", "content": "hi"}]}"#;
//! let request = parse_request(Dialect::AnthropicMessages, body).unwrap();
//! assert_eq!(request.model, "anthropic/claude-sonnet-4-5");
//! assert_eq!(request.overrides.max_tokens, Some(64));
//! ```
//!
//! [`ApiStreamChunk`]: switchyard_api::ApiStreamChunk
//! [`GatewayRequest`]: ingress::GatewayRequest

pub mod ingress;
