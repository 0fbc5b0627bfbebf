//! OpenAI Chat Completions, `POST /v1/chat/completions` (SPEC R14.1, R14.4, R14.5): a client's
//! request body → one [`GatewayRequest`](super::request::GatewayRequest); the layer's chunks →
//! `chat.completion.chunk` server-sent events; a whole answer → a `chat.completion` object; an
//! error → OpenAI's `{"error": {"message", "type", "param", "code"}}` (shared with Responses
//! clients).
//!
//! This file only maps the folder; each idea lives in its own file under `chat/`:
//!
//! - `parse.rs`: the body's top-level parameters (model, tools, `tool_choice`, limits,
//!   sampling, stream options) and what cannot be carried (`dropped`).
//! - `messages.rs`: `messages[]` → Switchyard's Anthropic-shaped conversation.
//! - `content.rs`: one message's `content` (a string or parts: text, `image_url`, refusal).
//! - `wire.rs`: what the stream and the whole answer share (ids, `finish_reason`, `usage`).
//! - `stream.rs`: [`Encoder`], the stream of `chat.completion.chunk` events.
//! - `collect.rs`: [`Collector`], the non-streamed `chat.completion` object.
//! - `error.rs`: [`error_response`], the status and body of a failure.

mod collect;
mod content;
mod error;
mod messages;
mod parse;
mod rules;
mod stream;
mod wire;

#[cfg(test)]
mod tests;

pub(crate) use collect::Collector;
pub(crate) use error::{error_response, invalid_request_response};
pub(crate) use parse::parse_request;
pub(crate) use rules::ChatRules;
pub(crate) use stream::Encoder;
