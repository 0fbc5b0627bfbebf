//! The ingress dialects (SPEC R14.1, R14.5): one module per dialect, each pure (no I/O) —
//! request JSON → [`GatewayRequest`]; stream chunks → the dialect's server-sent events
//! ([`StreamEncoder`]); a whole answer → the dialect's JSON ([`ResponseCollector`]); an error →
//! the dialect's status and body.
//!
//! - `request.rs`: [`GatewayRequest`], [`IngressError`], [`Dialect`] (what every dialect shares).
//! - `fields.rs`: typed reads of JSON fields naming the field's path, and `dropped` (every
//!   dialect).
//! - `content.rs`: inline `data:` image URLs (Chat Completions, Responses).
//! - `openai.rs`: the effort names and `tool_choice` strings Chat and Responses share.
//! - `encode.rs`: [`StreamEncoder`], [`ResponseCollector`], [`StopReason`], [`http_status`].
//! - `chat.rs`: OpenAI Chat Completions, `POST /v1/chat/completions`.
//! - `responses.rs`: OpenAI Responses, `POST /v1/responses`.
//! - `messages.rs`: Anthropic Messages, `POST /v1/messages`.

mod chat;
mod content;
mod encode;
mod fields;
mod messages;
mod openai;
mod request;
mod responses;

pub use encode::{ResponseCollector, StopReason, StreamEncoder, http_status};
pub use request::{ClientTool, Dialect, GatewayRequest, IngressError};

/// Parses a client's request body in `dialect` (SPEC R14.1). Errors name the field at fault
/// (a 400 in the client's dialect, R14.5).
pub fn parse_request(dialect: Dialect, body: &[u8]) -> Result<GatewayRequest, IngressError> {
    match dialect {
        Dialect::ChatCompletions => chat::parse_request(body),
        Dialect::Responses => responses::parse_request(body),
        Dialect::AnthropicMessages => messages::parse_request(body),
    }
}

/// Parses an Anthropic `POST /v1/messages/count_tokens` body (SPEC R14.1): read as a
/// Messages request, `max_tokens` not needed. Errors name the field at fault.
pub fn parse_count_tokens(body: &[u8]) -> Result<GatewayRequest, IngressError> {
    messages::parse_count_request(body)
}

/// The stream encoder of `dialect` for one answer to `request` (its `model` is echoed back
/// as the dialect does; Chat Completions ends with a usage chunk when the request set
/// `stream_options.include_usage`), identified by `id` (the gateway's request id).
pub fn stream_encoder(
    dialect: Dialect,
    request: &GatewayRequest,
    id: &str,
) -> Box<dyn StreamEncoder> {
    let model = request.model.as_str();
    match dialect {
        Dialect::ChatCompletions => {
            Box::new(chat::Encoder::new(model, id).include_usage(request.include_usage))
        }
        Dialect::Responses => {
            Box::new(responses::Encoder::new(model, id).client_tools(&request.client_tools))
        }
        Dialect::AnthropicMessages => Box::new(messages::Encoder::new(model, id)),
    }
}

/// The collector of a non-streamed answer in `dialect` to `request` (see [`stream_encoder`]).
pub fn response_collector(
    dialect: Dialect,
    request: &GatewayRequest,
    id: &str,
) -> Box<dyn ResponseCollector> {
    let model = request.model.as_str();
    match dialect {
        Dialect::ChatCompletions => Box::new(chat::Collector::new(model, id)),
        Dialect::Responses => {
            Box::new(responses::Collector::new(model, id).client_tools(&request.client_tools))
        }
        Dialect::AnthropicMessages => Box::new(messages::Collector::new(model, id)),
    }
}

/// The 400 and JSON body of a request body the gateway cannot read, in `dialect` (SPEC
/// R14.5): OpenAI's error with `param` naming the field, or Anthropic's
/// `invalid_request_error` whose message names it.
pub fn invalid_request_response(
    dialect: Dialect,
    error: &IngressError,
) -> (u16, serde_json::Value) {
    match dialect {
        Dialect::ChatCompletions | Dialect::Responses => chat::invalid_request_response(error),
        Dialect::AnthropicMessages => (
            400,
            serde_json::json!({
                "type": "error",
                "error": {"type": "invalid_request_error", "message": error.to_string()},
            }),
        ),
    }
}

/// The body of a request the gateway itself refuses, in `dialect` (SPEC R14.5): `status`
/// (400 unreadable, 404 unknown route or path, 413 too large) with `message`, the gateway's
/// own sentence — no provider was asked, so nothing says one rejected it. OpenAI clients get
/// `invalid_request_error` with `code` `model_not_found` or `request_too_large`; Anthropic
/// clients `not_found_error`, `request_too_large` or `invalid_request_error`. The client-key
/// refusals of R14.6, R14.7 (401, 402, 403, 429, 503) get the types both vendors use for them.
pub fn refusal_response(dialect: Dialect, status: u16, message: &str) -> serde_json::Value {
    let message = switchyard_api::secrets::scrub(message);
    match dialect {
        Dialect::ChatCompletions | Dialect::Responses => {
            let (kind, code) = match status {
                401 => ("authentication_error", "invalid_api_key"),
                402 => ("insufficient_quota", "budget_exceeded"),
                403 => ("permission_error", "permission_denied"),
                404 => ("invalid_request_error", "model_not_found"),
                413 => ("invalid_request_error", "request_too_large"),
                429 => ("rate_limit_error", "rate_limit_exceeded"),
                503 => ("server_error", "unavailable"),
                _ => ("invalid_request_error", ""),
            };
            let code = Some(code)
                .filter(|c| !c.is_empty())
                .map_or(serde_json::Value::Null, serde_json::Value::from);
            serde_json::json!({"error": {
                "message": message,
                "type": kind,
                "param": serde_json::Value::Null,
                "code": code,
            }})
        }
        Dialect::AnthropicMessages => {
            let kind = match status {
                401 => "authentication_error",
                402 => "billing_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                503 => "api_error",
                _ => "invalid_request_error",
            };
            serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    }
}

/// The HTTP status and JSON body of `error` in `dialect` (SPEC R14.5): OpenAI's
/// `{"error": {"message", "type", "code"}}`, Anthropic's `{"type": "error", "error": {"type",
/// "message"}}`; the message is Switchyard's one sentence, never a key.
pub fn error_response(
    dialect: Dialect,
    error: &switchyard_api::ApiError,
) -> (u16, serde_json::Value) {
    match dialect {
        Dialect::ChatCompletions | Dialect::Responses => chat::error_response(error),
        Dialect::AnthropicMessages => messages::error_response(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_api::{ApiStreamChunk, Usage};

    fn streamed(dialect: Dialect, body: &[u8]) -> String {
        let request = parse_request(dialect, body).unwrap();
        let mut encoder = stream_encoder(dialect, &request, "req1");
        let mut out = Vec::new();
        encoder.start(&mut out);
        encoder.chunk(&ApiStreamChunk::text("hi"), &mut out);
        let usage = Usage {
            input_tokens: 7,
            output_tokens: 2,
            ..Usage::default()
        };
        encoder.chunk(&ApiStreamChunk::Usage(usage), &mut out);
        encoder.finish(StopReason::EndTurn, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_chat_client_gets_the_usage_chunk_exactly_when_it_asked_for_it() {
        let asked = br#"{"model": "m", "stream": true, "stream_options": {"include_usage": true},
                         "messages": [{"role": "user", "content": "hi"}]}"#;
        let not_asked = br#"{"model": "m", "stream": true,
                             "messages": [{"role": "user", "content": "hi"}]}"#;
        assert!(streamed(Dialect::ChatCompletions, asked).contains(r#""prompt_tokens":7"#));
        assert!(!streamed(Dialect::ChatCompletions, not_asked).contains("prompt_tokens"));
    }

    #[test]
    fn the_gateways_own_refusal_blames_no_provider_in_any_dialect() {
        let chat = refusal_response(Dialect::ChatCompletions, 404, "The model `x` is unknown.");
        assert_eq!(chat["error"]["message"], "The model `x` is unknown.");
        assert_eq!(chat["error"]["code"], "model_not_found");
        let anthropic = refusal_response(Dialect::AnthropicMessages, 413, "Too large.");
        assert_eq!(anthropic["error"]["type"], "request_too_large");
        assert_eq!(anthropic["error"]["message"], "Too large.");
        let bad = refusal_response(Dialect::AnthropicMessages, 400, "Bad.");
        assert_eq!(bad["error"]["type"], "invalid_request_error");
    }

    #[test]
    fn a_malformed_body_names_its_field_in_each_dialect() {
        for dialect in [
            Dialect::ChatCompletions,
            Dialect::Responses,
            Dialect::AnthropicMessages,
        ] {
            let error = parse_request(dialect, br#"{"model": 5}"#).unwrap_err();
            let (status, body) = invalid_request_response(dialect, &error);
            assert_eq!(status, 400, "{dialect:?}");
            assert!(body.to_string().contains("model"), "{dialect:?}: {body}");
        }
    }
}
