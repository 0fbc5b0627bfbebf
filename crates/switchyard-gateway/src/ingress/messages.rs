//! Anthropic Messages, `POST /v1/messages` and `/v1/messages/count_tokens` (SPEC R14.1,
//! R14.4, R14.5): the request body → [`GatewayRequest`](super::request::GatewayRequest),
//! stream chunks → Anthropic's server-sent events, a whole answer → the message object, an
//! error → Anthropic's error body.
//!
//! What real clients read decides the shapes (Anthropic's "Messages" and "Streaming Messages"
//! references, the official SDKs' `MessageStream` accumulators, and Claude Code, which needs
//! `event:` lines and `content_block_stop`, sends a `role: "system"` message inside
//! `messages` and `thinking: {"type": "adaptive"}`).
//!
//! - `messages/request.rs`: the top-level fields (`system`, `tools`, `tool_choice`,
//!   `thinking`, sampling) and what cannot be carried (`dropped`).
//! - `messages/content.rs`: `messages[]` and their content blocks.
//! - `messages/wire.rs`: what the stream and the whole answer share (ids, stop reasons,
//!   usage) and the error body.
//! - `messages/stream.rs`: [`Encoder`], the event stream.
//! - `messages/collect.rs`: [`Collector`], the non-streamed message object.

mod collect;
mod content;
mod request;
mod rules;
mod stream;
mod wire;

#[cfg(test)]
mod tests;

pub(crate) use collect::Collector;
pub(crate) use request::{parse_count_request, parse_request};
pub(crate) use rules::MessagesRules;
pub(crate) use stream::Encoder;
pub(crate) use wire::error_response;
