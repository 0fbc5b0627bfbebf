//! PLACEHOLDER for the helper that writes this dialect (replaced before anything lands).
#![allow(dead_code, unused_variables)]
use switchyard_api::{ApiError, ApiStreamChunk};
use super::encode::{ResponseCollector, StopReason, StreamEncoder};
use super::request::{GatewayRequest, IngressError};
pub(crate) fn parse_request(body: &[u8]) -> Result<GatewayRequest, IngressError> { Err(IngressError::new("body", "not written yet")) }
pub(crate) struct Encoder;
impl Encoder { pub(crate) fn new(model: &str, id: &str) -> Self { Self } }
impl StreamEncoder for Encoder {
    fn start(&mut self, out: &mut Vec<u8>) {}
    fn chunk(&mut self, chunk: &ApiStreamChunk, out: &mut Vec<u8>) {}
    fn finish(&mut self, stop: StopReason, out: &mut Vec<u8>) {}
    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>) {}
}
pub(crate) struct Collector;
impl Collector { pub(crate) fn new(model: &str, id: &str) -> Self { Self } }
impl ResponseCollector for Collector {
    fn chunk(&mut self, chunk: &ApiStreamChunk) {}
    fn finish(&mut self, stop: StopReason) -> serde_json::Value { serde_json::Value::Null }
}
pub(crate) fn error_response(error: &ApiError) -> (u16, serde_json::Value) { (500, serde_json::Value::Null) }
