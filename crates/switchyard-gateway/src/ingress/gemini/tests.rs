//! Tests of the Gemini dialect: shared helpers (parse a body at a URL, run chunks through the
//! encoder and read the events back, collect a whole answer); the cases are in `tests/`.

mod errors;
mod parse;
mod reports;
mod stream;

use serde_json::Value;
use switchyard_api::ApiStreamChunk;

use super::super::encode::{ResponseCollector, StopReason, StreamEncoder};
use super::super::request::{GatewayRequest, IngressError};
use super::collect::Collector;
use super::parse::parse_call;
use super::stream::Encoder;

/// The URL Gemini CLI streams from.
const STREAM: &str = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";

/// Parses `body` sent to [`STREAM`], which must be accepted.
fn parse(body: &Value) -> GatewayRequest {
    parse_call(STREAM, body.to_string().as_bytes()).unwrap_or_else(|e| panic!("{e}"))
}

/// Parses `body`, which must be refused.
fn refuse(body: &Value) -> IngressError {
    match parse_call(STREAM, body.to_string().as_bytes()) {
        Ok(request) => panic!("accepted: {request:?}"),
        Err(e) => e,
    }
}

/// The `data:` events of a server-sent stream, each one line ending in a blank line.
fn events(bytes: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    text.split_terminator("\r\n\r\n")
        .map(|event| {
            assert!(!event.contains('\n'), "one line per event: {event:?}");
            let data = event.strip_prefix("data: ").expect("a data line");
            serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"))
        })
        .collect()
}

/// The encoder of an answer of model `m` for request `req_1`.
fn encoder(sse: bool, hide_thoughts: bool) -> Encoder {
    Encoder::new("m", "req_1", sse, hide_thoughts)
}

/// The bytes `chunks` ended by `stop` are streamed as.
fn streamed(chunks: &[ApiStreamChunk], stop: StopReason, sse: bool, hide: bool) -> Vec<u8> {
    let mut encoder = encoder(sse, hide);
    let mut out = Vec::new();
    encoder.start(&mut out);
    assert!(
        out.is_empty(),
        "Gemini sends nothing before the first response"
    );
    for chunk in chunks {
        encoder.chunk(chunk, &mut out);
    }
    encoder.finish(stop, &mut out);
    out
}

/// The server-sent events of `chunks` ended by `stop`, thoughts shown.
fn encode(chunks: &[ApiStreamChunk], stop: StopReason) -> Vec<Value> {
    events(&streamed(chunks, stop, true, false))
}

/// Every part of every event, in order.
fn all_parts(events: &[Value]) -> Vec<Value> {
    (events.iter())
        .flat_map(|e| {
            e["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

/// The whole answer of `chunks` ended by `stop`.
fn collect(chunks: &[ApiStreamChunk], stop: StopReason, hide: bool) -> Value {
    let mut collector = Collector::new("m", "req_1", hide);
    for chunk in chunks {
        collector.chunk(chunk);
    }
    collector.finish(stop)
}
