//! OpenAI Chat Completions, `POST /v1/chat/completions`. Its error shape is shared with
//! Responses clients.
//! Spec: R14.1, R14.4, R14.5.

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
