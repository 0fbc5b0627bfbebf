//! Gemini's answers to what each dialect does its own way.
//! Spec: R14.12, R14.2, R14.5.

use serde_json::{Value, json};
use switchyard_api::{ApiError, ForwardDialect};

use super::collect::Collector;
use super::parse::{parse_call, parse_count, parse_request};
use super::stream::Encoder;
use super::wire::{error_response, invalid_request, refusal_body};
use crate::ingress::encode::{ResponseCollector, StreamEncoder};
use crate::ingress::request::{GatewayRequest, IngressError};
use crate::ingress::rules::{DialectRules, ModelEntry};

/// The methods a Gemini model lists, all of which the gateway answers.
const METHODS: [&str; 3] = ["generateContent", "streamGenerateContent", "countTokens"];

/// Google's Gemini API.
pub(crate) struct GeminiRules;

impl DialectRules for GeminiRules {
    fn record_name(&self) -> &'static str {
        "gemini"
    }

    fn parse(&self, body: &[u8]) -> Result<GatewayRequest, IngressError> {
        parse_request(body)
    }

    fn parse_call(&self, target: &str, body: &[u8]) -> Result<GatewayRequest, IngressError> {
        parse_call(target, body)
    }

    fn parse_count(&self, target: &str, body: &[u8]) -> Result<GatewayRequest, IngressError> {
        parse_count(target, body)
    }

    fn count_body(&self, tokens: u64) -> Value {
        json!({ "totalTokens": tokens })
    }

    fn stream_encoder(&self, request: &GatewayRequest, id: &str) -> Box<dyn StreamEncoder> {
        let sse = !request.json_array;
        Box::new(Encoder::new(&request.model, id, sse, request.hide_thoughts))
    }

    fn collector(&self, request: &GatewayRequest, id: &str) -> Box<dyn ResponseCollector> {
        Box::new(Collector::new(&request.model, id, request.hide_thoughts))
    }

    fn stream_content_type(&self, request: &GatewayRequest) -> &'static str {
        if request.json_array {
            "application/json"
        } else {
            "text/event-stream"
        }
    }

    fn error_response(&self, error: &ApiError) -> (u16, Value) {
        error_response(error)
    }

    fn refusal_body(&self, status: u16, message: &str) -> Value {
        refusal_body(status, message)
    }

    fn no_endpoint_body(&self, message: &str) -> Value {
        // Gemini CLI puts its own `/v1beta` after the base URL, so a base ending in `/v1` 404s.
        if message.contains(" /v1/v1beta/") {
            let hint = "Set GOOGLE_GEMINI_BASE_URL to the gateway's bare URL, without `/v1`.";
            return refusal_body(404, &format!("{message} {hint}"));
        }
        refusal_body(404, message)
    }

    fn invalid_request(&self, error: &IngressError) -> (u16, Value) {
        invalid_request(error)
    }

    fn forwards_as(&self) -> Option<ForwardDialect> {
        Some(ForwardDialect::Gemini)
    }

    // Google's clients send their key as `x-goog-api-key` or in the URL, and name themselves in
    // `x-goog-api-client`.
    fn claims(&self, headers: &hyper::HeaderMap, query: Option<&str>) -> bool {
        headers.contains_key("x-goog-api-key")
            || headers.contains_key("x-goog-api-client")
            || query.is_some_and(|q| q.split('&').any(|p| p.len() > 4 && p.starts_with("key=")))
    }

    fn model_list(&self, models: &[(String, String)]) -> Option<Value> {
        let models: Vec<Value> = (models.iter())
            .map(|(id, owner)| {
                model_json(&ModelEntry {
                    id,
                    owner,
                    input_limit: 0,
                    output_limit: 0,
                })
            })
            .collect();
        Some(json!({ "models": models }))
    }

    fn model_entry(&self, model: &ModelEntry<'_>) -> Option<Value> {
        Some(model_json(model))
    }
}

/// A `Model` as Google lists it; limits that are not known are left out.
fn model_json(model: &ModelEntry<'_>) -> Value {
    let mut out = json!({
        "name": format!("models/{}", model.id),
        "displayName": model.id,
        "description": format!("{} through Switchyard ({}).", model.id, model.owner),
        "supportedGenerationMethods": METHODS,
    });
    if model.input_limit > 0 {
        out["inputTokenLimit"] = json!(model.input_limit);
    }
    if model.output_limit > 0 {
        out["outputTokenLimit"] = json!(model.output_limit);
    }
    out
}
