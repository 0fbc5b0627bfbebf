//! Google's Gemini API, `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent`
//! and `:countTokens`, as Gemini CLI and Google's SDKs send and read it. The URL names the model
//! and the stream; `call.rs` reads it.
//! Spec: R14.12, R14.2, R14.5.

mod call;
mod collect;
mod config;
mod contents;
mod parse;
mod parts;
mod rules;
mod stream;
mod wire;

#[cfg(test)]
mod tests;

pub(crate) use rules::GeminiRules;
