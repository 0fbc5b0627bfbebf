//! The ingress dialects, each pure: a request body becomes one [`GatewayRequest`], chunks the
//! dialect's events, a whole answer its JSON, an error its status and body. `rules.rs` holds
//! what each dialect does its own way.
//! Spec: R14.1, R14.5, R14.6, R14.7.

mod chat;
mod content;
mod dialect;
mod encode;
mod fields;
mod gemini;
mod messages;
mod openai;
mod request;
mod responses;
mod rules;
mod shape;

pub use dialect::Dialect;
pub use encode::{ResponseCollector, StopReason, StreamEncoder, http_status};
pub(crate) use fields::percent_decoded;
pub use request::{ClientTool, GatewayRequest, IngressError};
pub(crate) use responses::previous_not_found;
pub(crate) use rules::ModelEntry;
pub use shape::{MESSAGES_MAX, PARTS_MAX, Shape, TOOLS_MAX, VALUES_MAX, shape};

/// Parses a client's request body in `dialect`. An error names the field at fault.
pub fn parse_request(dialect: Dialect, body: &[u8]) -> Result<GatewayRequest, IngressError> {
    dialect.rules().parse(body)
}

/// Parses a client's request to `target`, its path and query, in `dialect`: Gemini's path
/// names the model and whether it streams.
pub fn parse_request_at(
    dialect: Dialect,
    target: &str,
    body: &[u8],
) -> Result<GatewayRequest, IngressError> {
    dialect.rules().parse_call(target, body)
}

/// Parses an Anthropic `count_tokens` body: a Messages request that needs no `max_tokens`.
pub fn parse_count_tokens(body: &[u8]) -> Result<GatewayRequest, IngressError> {
    messages::parse_count_request(body)
}

/// The stream encoder of `dialect` for one answer to `request`, identified by `id`.
pub fn stream_encoder(
    dialect: Dialect,
    request: &GatewayRequest,
    id: &str,
) -> Box<dyn StreamEncoder> {
    dialect.rules().stream_encoder(request, id)
}

/// The collector of a whole answer in `dialect` to `request`.
pub fn response_collector(
    dialect: Dialect,
    request: &GatewayRequest,
    id: &str,
) -> Box<dyn ResponseCollector> {
    dialect.rules().collector(request, id)
}

/// The 400 and body of a request body the gateway cannot read, in `dialect`.
pub fn invalid_request_response(
    dialect: Dialect,
    error: &IngressError,
) -> (u16, serde_json::Value) {
    dialect.rules().invalid_request(error)
}

/// The body of a refusal the gateway makes itself in `dialect`, scrubbed of keys. No provider
/// was asked, so none is blamed.
pub fn refusal_response(dialect: Dialect, status: u16, message: &str) -> serde_json::Value {
    let message = switchyard_api::secrets::scrub(message);
    dialect.rules().refusal_body(status, &message)
}

/// The HTTP status and body of `error` in `dialect`.
pub fn error_response(
    dialect: Dialect,
    error: &switchyard_api::ApiError,
) -> (u16, serde_json::Value) {
    dialect.rules().error_response(error)
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
