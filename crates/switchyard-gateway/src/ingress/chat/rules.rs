//! Chat Completions' answers to what each dialect does its own way.
//! Spec: R14.2.

use serde_json::Value;
use switchyard_api::{ApiError, ForwardDialect};

use super::error::{no_endpoint_body, refusal_body};
use super::{Collector, Encoder, error_response, invalid_request_response, parse_request};
use crate::ingress::encode::{ResponseCollector, StreamEncoder};
use crate::ingress::request::{GatewayRequest, IngressError};
use crate::ingress::rules::DialectRules;

/// OpenAI Chat Completions.
pub(crate) struct ChatRules;

impl DialectRules for ChatRules {
    fn record_name(&self) -> &'static str {
        "chat_completions"
    }

    fn parse(&self, body: &[u8]) -> Result<GatewayRequest, IngressError> {
        parse_request(body)
    }

    fn stream_encoder(&self, request: &GatewayRequest, id: &str) -> Box<dyn StreamEncoder> {
        Box::new(Encoder::new(&request.model, id).include_usage(request.include_usage))
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
        no_endpoint_body(message)
    }

    fn invalid_request(&self, error: &IngressError) -> (u16, Value) {
        invalid_request_response(error)
    }

    fn forwards_as(&self) -> Option<ForwardDialect> {
        Some(ForwardDialect::ChatCompletions)
    }

    // The gateway asks a forwarded Chat stream for usage to bill it; a client that did not
    // ask for usage must not get that extra chunk.
    fn keeps_event(&self, request: &GatewayRequest, event: &[u8]) -> bool {
        request.include_usage || !usage_only(event)
    }
}

/// Whether a forwarded Chat Completions event is a chunk of usage alone, `choices` empty.
fn usage_only(event: &[u8]) -> bool {
    let Some(data) = std::str::from_utf8(event)
        .ok()
        .and_then(|e| e.trim_end().strip_prefix("data: "))
    else {
        return false;
    };
    if !data.contains("\"usage\"") {
        return false;
    }
    // Every OpenAI chunk says `"usage": null`, so this runs for each forwarded event: only the
    // two fields are read, the rest skipped.
    #[derive(serde::Deserialize)]
    struct Shape {
        usage: Option<serde::de::IgnoredAny>,
        choices: Option<Vec<serde::de::IgnoredAny>>,
    }
    serde_json::from_str::<Shape>(data)
        .is_ok_and(|c| c.usage.is_some() && c.choices.is_none_or(|c| c.is_empty()))
}
