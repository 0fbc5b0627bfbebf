//! Anthropic Messages' answers to what each dialect does its own way.
//! Spec: R14.2.

use serde_json::Value;
use switchyard_api::{ApiError, ForwardDialect};

use super::wire::{invalid_request, refusal_body};
use super::{Collector, Encoder, error_response, parse_count_request, parse_request};
use crate::ingress::encode::{ResponseCollector, StreamEncoder};
use crate::ingress::request::{GatewayRequest, IngressError};
use crate::ingress::rules::DialectRules;

/// The longest `anthropic-beta` value sent on with a forwarded body, in bytes.
const BETA_MAX: usize = 4096;

/// Anthropic Messages.
pub(crate) struct MessagesRules;

impl DialectRules for MessagesRules {
    fn record_name(&self) -> &'static str {
        "messages"
    }

    fn parse(&self, body: &[u8]) -> Result<GatewayRequest, IngressError> {
        parse_request(body)
    }

    // A count needs no `max_tokens`.
    fn parse_count(&self, _target: &str, body: &[u8]) -> Result<GatewayRequest, IngressError> {
        parse_count_request(body)
    }

    fn stream_encoder(&self, request: &GatewayRequest, id: &str) -> Box<dyn StreamEncoder> {
        Box::new(Encoder::new(&request.model, id))
    }

    fn collector(&self, request: &GatewayRequest, id: &str) -> Box<dyn ResponseCollector> {
        Box::new(Collector::new(&request.model, id))
    }

    fn error_response(&self, error: &ApiError) -> (u16, Value) {
        error_response(error)
    }

    fn refusal_body(&self, status: u16, message: &str) -> Value {
        refusal_body(status, message)
    }

    fn no_endpoint_body(&self, message: &str) -> Value {
        refusal_body(404, message)
    }

    fn invalid_request(&self, error: &IngressError) -> (u16, Value) {
        invalid_request(error)
    }

    // Claude Code reads the two numbers of Anthropic's own wording to compact the conversation.
    fn context_overflow(&self, tokens: u64, window: u64) -> String {
        format!(
            "prompt is too long: {tokens} tokens > {window} maximum (Switchyard's estimate; the request was not sent)"
        )
    }

    fn forwards_as(&self) -> Option<ForwardDialect> {
        Some(ForwardDialect::AnthropicMessages)
    }

    // A forwarded body's fields may need the client's beta flags: Claude Code's
    // `context_management` and interleaved thinking do.
    fn forward_headers(&self, headers: &hyper::HeaderMap) -> Vec<(String, String)> {
        let beta = headers.get("anthropic-beta").and_then(|v| v.to_str().ok());
        beta.filter(|v| v.len() <= BETA_MAX)
            .map(|v| vec![("anthropic-beta".to_owned(), v.to_owned())])
            .unwrap_or_default()
    }
}
