//! OpenAI Responses, `POST /v1/responses` (SPEC R14.1, R14.4; its errors' status and body are
//! Chat's, R14.5, see `chat.rs`): the request body → [`GatewayRequest`], Switchyard's chunks →
//! the Responses event stream Codex CLI and the official SDKs read, a whole answer → the
//! response object.
//!
//! - `responses/parse.rs`: the request (`instructions`, tools, options, what is dropped).
//! - `responses/input.rs`: the `input` items → messages.
//! - `responses/output.rs`: the output items, their events and the response object.
//! - `responses/stream.rs`: [`Encoder`] (SSE framing, sequence numbers, terminal events) and
//!   [`Collector`].
//!
//! [`GatewayRequest`]: super::request::GatewayRequest

mod input;
mod output;
mod parse;
mod rules;
mod stream;
#[cfg(test)]
mod tests;

pub(crate) use parse::parse_request;
pub(crate) use rules::{ResponsesRules, previous_not_found};
pub(crate) use stream::{Collector, Encoder};
