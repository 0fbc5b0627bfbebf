//! Anthropic Messages, `POST /v1/messages` and `/v1/messages/count_tokens`. What real clients
//! read decides the shapes: the SDKs' `MessageStream` accumulators, and Claude Code, which
//! needs `event:` lines and sends a `role: "system"` message inside `messages`.
//! Spec: R14.1, R14.4, R14.5.

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
