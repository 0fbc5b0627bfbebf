//! OpenAI Responses' answers to what each dialect does its own way. Its errors are Chat's.
//! Spec: R14.1.

use serde_json::{Value, json};
use switchyard_api::{ApiError, ForwardDialect};

use super::{Collector, Encoder, parse_request};
use crate::ingress::chat::{ChatRules, error_response, invalid_request_response};
use crate::ingress::encode::{ResponseCollector, StreamEncoder};
use crate::ingress::request::{GatewayRequest, IngressError};
use crate::ingress::rules::DialectRules;

/// OpenAI Responses.
pub(crate) struct ResponsesRules;

impl DialectRules for ResponsesRules {
    fn record_name(&self) -> &'static str {
        "responses"
    }

    fn parse(&self, body: &[u8]) -> Result<GatewayRequest, IngressError> {
        parse_request(body)
    }

    fn stream_encoder(&self, request: &GatewayRequest, id: &str) -> Box<dyn StreamEncoder> {
        Box::new(Encoder::new(&request.model, id).client_tools(&request.client_tools))
    }

    fn collector(&self, request: &GatewayRequest, id: &str) -> Box<dyn ResponseCollector> {
        Box::new(Collector::new(&request.model, id).client_tools(&request.client_tools))
    }

    fn error_response(&self, error: &ApiError) -> (u16, Value) {
        error_response(error)
    }

    fn refusal_body(&self, status: u16, message: &str) -> Value {
        ChatRules.refusal_body(status, message)
    }

    fn no_endpoint_body(&self, message: &str) -> Value {
        ChatRules.no_endpoint_body(message)
    }

    fn invalid_request(&self, error: &IngressError) -> (u16, Value) {
        invalid_request_response(error)
    }

    // The gateway keeps Responses answers in its own store for `previous_response_id`, so
    // it always translates.
    fn forwards_as(&self) -> Option<ForwardDialect> {
        None
    }

    fn stores_answer(&self, request: &GatewayRequest) -> bool {
        request.store
    }
}

/// The body of the 404 for a `previous_response_id` that is not stored, in OpenAI's words.
pub(crate) fn previous_not_found(id: &str) -> Value {
    json!({"error": {
        "message": format!("Previous response with id '{id}' not found."),
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": "previous_response_not_found",
    }})
}
