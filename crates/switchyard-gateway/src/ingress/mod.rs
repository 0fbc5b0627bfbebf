//! The ingress dialects (SPEC R14.1, R14.5): one module per dialect, each pure (no I/O) —
//! request JSON → [`GatewayRequest`]; stream chunks → the dialect's server-sent events
//! ([`StreamEncoder`]); a whole answer → the dialect's JSON ([`ResponseCollector`]); an error →
//! the dialect's status and body.
//!
//! - `request.rs`: [`GatewayRequest`], [`IngressError`], [`Dialect`] (what every dialect shares).
//! - `encode.rs`: [`StreamEncoder`], [`ResponseCollector`], [`StopReason`], [`http_status`].
//! - `chat.rs`: OpenAI Chat Completions, `POST /v1/chat/completions`.
//! - `responses.rs`: OpenAI Responses, `POST /v1/responses`.
//! - `messages.rs`: Anthropic Messages, `POST /v1/messages`.

mod chat;
mod encode;
mod messages;
mod request;
mod responses;

pub use encode::{ResponseCollector, StopReason, StreamEncoder, http_status};
pub use request::{Dialect, GatewayRequest, IngressError};

/// Parses a client's request body in `dialect` (SPEC R14.1). Errors name the field at fault
/// (a 400 in the client's dialect, R14.5).
pub fn parse_request(dialect: Dialect, body: &[u8]) -> Result<GatewayRequest, IngressError> {
    match dialect {
        Dialect::ChatCompletions => chat::parse_request(body),
        Dialect::Responses => responses::parse_request(body),
        Dialect::AnthropicMessages => messages::parse_request(body),
    }
}

/// The stream encoder of `dialect` for one answer of `model` (the id the client asked for,
/// echoed back as the dialect does), identified by `id` (the gateway's request id).
pub fn stream_encoder(dialect: Dialect, model: &str, id: &str) -> Box<dyn StreamEncoder> {
    match dialect {
        Dialect::ChatCompletions => Box::new(chat::Encoder::new(model, id)),
        Dialect::Responses => Box::new(responses::Encoder::new(model, id)),
        Dialect::AnthropicMessages => Box::new(messages::Encoder::new(model, id)),
    }
}

/// The collector of a non-streamed answer in `dialect` (see [`stream_encoder`]).
pub fn response_collector(dialect: Dialect, model: &str, id: &str) -> Box<dyn ResponseCollector> {
    match dialect {
        Dialect::ChatCompletions => Box::new(chat::Collector::new(model, id)),
        Dialect::Responses => Box::new(responses::Collector::new(model, id)),
        Dialect::AnthropicMessages => Box::new(messages::Collector::new(model, id)),
    }
}

/// The HTTP status and JSON body of `error` in `dialect` (SPEC R14.5): OpenAI's
/// `{"error": {"message", "type", "code"}}`, Anthropic's `{"type": "error", "error": {"type",
/// "message"}}`; the message is Switchyard's one sentence, never a key.
pub fn error_response(dialect: Dialect, error: &switchyard_api::ApiError) -> (u16, serde_json::Value) {
    match dialect {
        Dialect::ChatCompletions | Dialect::Responses => chat::error_response(error),
        Dialect::AnthropicMessages => messages::error_response(error),
    }
}
