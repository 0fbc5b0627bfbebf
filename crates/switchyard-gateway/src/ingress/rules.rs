//! What each dialect does its own way, as one trait.
//! Spec: R14.1, R14.2, R14.5.

use serde_json::Value;
use switchyard_api::{ApiError, ForwardDialect};

use super::encode::{ResponseCollector, StreamEncoder};
use super::request::{GatewayRequest, IngressError};

/// One model as a listing shows it.
pub(crate) struct ModelEntry<'a> {
    pub(crate) id: &'a str,
    pub(crate) owner: &'a str,
    /// The context window and the output limit in tokens, 0 where unknown.
    pub(crate) input_limit: u64,
    pub(crate) output_limit: u64,
}

/// Everything one dialect does differently from the others. A new dialect is a folder with
/// one implementation of this trait, a variant and a line in the gateway's endpoint table.
pub(crate) trait DialectRules: Sync {
    fn record_name(&self) -> &'static str;

    /// Parses a request body. An error names the field at fault.
    fn parse(&self, body: &[u8]) -> Result<GatewayRequest, IngressError>;

    /// Parses a request whose path and query, `target`, may say part of it: Gemini's name the
    /// model and the stream.
    fn parse_call(&self, _target: &str, body: &[u8]) -> Result<GatewayRequest, IngressError> {
        self.parse(body)
    }

    /// Parses a token-count request.
    fn parse_count(&self, target: &str, body: &[u8]) -> Result<GatewayRequest, IngressError> {
        self.parse_call(target, body)
    }

    /// The answer to a token count of `tokens`.
    fn count_body(&self, tokens: u64) -> Value {
        serde_json::json!({ "input_tokens": tokens })
    }

    /// The content type of a streamed answer to `request`.
    fn stream_content_type(&self, _request: &GatewayRequest) -> &'static str {
        "text/event-stream"
    }

    /// Whether a request on a path dialects share is this dialect's, by what its client sends.
    fn claims(&self, _headers: &hyper::HeaderMap, _query: Option<&str>) -> bool {
        false
    }

    /// The model list in this dialect's own shape, when it has one: `(id, owner)` pairs.
    fn model_list(&self, _models: &[(String, String)]) -> Option<Value> {
        None
    }

    /// One model in this dialect's own shape, when it has one: its id, owner and limits.
    fn model_entry(&self, _model: &ModelEntry<'_>) -> Option<Value> {
        None
    }

    fn stream_encoder(&self, request: &GatewayRequest, id: &str) -> Box<dyn StreamEncoder>;

    fn collector(&self, request: &GatewayRequest, id: &str) -> Box<dyn ResponseCollector>;

    fn error_response(&self, error: &ApiError) -> (u16, Value);

    /// The body of a refusal the gateway makes itself; `message` is scrubbed already.
    fn refusal_body(&self, status: u16, message: &str) -> Value;

    fn no_endpoint_body(&self, message: &str) -> Value;

    fn invalid_request(&self, error: &IngressError) -> (u16, Value);

    /// The sentence of a request whose input of `tokens` cannot fit a `window`, worded as the
    /// dialect's own server words it, since agents read the numbers from it to compact.
    fn context_overflow(&self, tokens: u64, window: u64) -> String {
        format!(
            "This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens (Switchyard's estimate; the request was not sent). Please reduce the length of the messages."
        )
    }

    /// The dialect a provider that speaks it is sent the client's own body in.
    fn forwards_as(&self) -> Option<ForwardDialect>;

    fn forward_headers(&self, _headers: &hyper::HeaderMap) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Whether a forwarded provider event goes on to the client.
    fn keeps_event(&self, _request: &GatewayRequest, _event: &[u8]) -> bool {
        true
    }

    /// Whether the answer is stored for a later request to continue.
    fn stores_answer(&self, _request: &GatewayRequest) -> bool {
        false
    }
}
