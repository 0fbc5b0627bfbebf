//! OpenAI Responses, `POST /v1/responses`, as Codex CLI and the official SDKs read it. Its
//! errors' status and body are Chat's.
//! Spec: R14.1, R14.4, R14.5.

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
