//! Tests of the Responses dialect: request bodies as Codex CLI and the SDKs send them, the
//! event stream read back event by event, the whole answer, failures.

mod parse;
mod stream;

use serde_json::Value;
use switchyard_api::ApiStreamChunk;

use super::{Collector, Encoder};
use crate::ingress::encode::{ResponseCollector, StopReason, StreamEncoder};

/// Splits SSE bytes into `(event name, data)` pairs, checking the framing a client's parser
/// relies on: every event is `event: NAME\ndata: {one-line JSON}\n\n`, its `type` is NAME,
/// and `sequence_number`s count 0, 1, 2, … with no gap.
fn events(bytes: &[u8]) -> Vec<(String, Value)> {
    let text = std::str::from_utf8(bytes).expect("SSE is UTF-8");
    assert!(
        text.is_empty() || text.ends_with("\n\n"),
        "the stream ends on an event boundary"
    );
    let mut out = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.is_empty()) {
        let lines: Vec<&str> = block.split('\n').collect();
        assert_eq!(
            lines.len(),
            2,
            "one event line and one data line: {block:?}"
        );
        let name = lines[0].strip_prefix("event: ").expect("event line");
        let data: Value = serde_json::from_str(lines[1].strip_prefix("data: ").expect("data line"))
            .expect("data is JSON");
        assert_eq!(data["type"], name, "type equals the event name");
        assert_eq!(
            data["sequence_number"],
            out.len() as u64,
            "sequence numbers count from 0"
        );
        out.push((name.to_owned(), data));
    }
    out
}

/// The events of a whole stream: `start`, each chunk, `finish(stop)`.
fn run(chunks: &[ApiStreamChunk], stop: StopReason) -> Vec<(String, Value)> {
    let mut enc = Encoder::new("gpt-5-codex", "req1");
    let mut out = Vec::new();
    enc.start(&mut out);
    for c in chunks {
        enc.chunk(c, &mut out);
    }
    enc.finish(stop, &mut out);
    events(&out)
}

/// The event names, in order.
fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

/// The whole answer the collector gives for `chunks`.
fn collect(chunks: &[ApiStreamChunk], stop: StopReason) -> Value {
    let mut c = Collector::new("gpt-5-codex", "req1");
    for chunk in chunks {
        c.chunk(chunk);
    }
    c.finish(stop)
}
