//! What each dialect does its own way, as one trait.
//! Spec: R14.1, R14.2, R14.5.

use serde_json::Value;
use switchyard_api::{ApiError, ForwardDialect};

use super::encode::{ResponseCollector, StreamEncoder};
use super::request::{GatewayRequest, IngressError};

/// Everything one dialect does differently from the others. A new dialect is a folder with
/// one implementation of this trait, a variant and a line in the gateway's endpoint table.
pub(crate) trait DialectRules: Sync {
    /// The dialect's name in the request log.
    fn record_name(&self) -> &'static str;

    /// Parses a client's request body. An error names the field at fault.
    fn parse(&self, body: &[u8]) -> Result<GatewayRequest, IngressError>;

    /// The stream encoder of one answer to `request`, identified by the gateway's request id.
    fn stream_encoder(&self, request: &GatewayRequest, id: &str) -> Box<dyn StreamEncoder>;

    /// The collector of one whole answer to `request`.
    fn collector(&self, request: &GatewayRequest, id: &str) -> Box<dyn ResponseCollector>;

    /// The status and body of an answer that failed.
    fn error_response(&self, error: &ApiError) -> (u16, Value);

    /// The body of a refusal the gateway makes itself; `message` is scrubbed already.
    fn refusal_body(&self, status: u16, message: &str) -> Value;

    /// The body of a 404 for a path the gateway does not serve.
    fn no_endpoint_body(&self, message: &str) -> Value;

    /// The 400 of a body the gateway cannot read.
    fn invalid_request(&self, error: &IngressError) -> (u16, Value);

    /// The dialect a provider that speaks it is sent the client's own body in. `None` when
    /// the request is always translated.
    fn forwards_as(&self) -> Option<ForwardDialect>;

    /// The client headers sent on with a forwarded body.
    fn forward_headers(&self, _headers: &hyper::HeaderMap) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Whether a forwarded provider event goes on to the client of `request`.
    fn keeps_event(&self, _request: &GatewayRequest, _event: &[u8]) -> bool {
        true
    }

    /// Whether the answer to `request` is stored for a later request to continue.
    fn stores_answer(&self, _request: &GatewayRequest) -> bool {
        false
    }
}
