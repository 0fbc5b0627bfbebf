//! The Responses stream encoder and whole-answer collector: events numbered from 0, opened by
//! `response.created` and always ended by one terminal event, `response.completed` or
//! `response.failed`.
//! Spec: R14.1, R14.4.

use serde_json::Value;
use switchyard_api::{ApiError, ApiStreamChunk};

use super::output::{Event, Output};
use crate::ingress::encode::{ResponseCollector, StopReason, StreamEncoder};
use crate::ingress::request::ClientTool;

#[derive(Debug)]
pub(crate) struct Encoder {
    output: Output,
    sequence: u64,
    started: bool,
    /// A terminal event was written; later calls write nothing.
    ended: bool,
    events: Vec<Event>,
}

impl Encoder {
    /// The encoder of an answer of `model` for gateway request `id`.
    pub(crate) fn new(model: &str, id: &str) -> Self {
        Self {
            output: Output::new(model, id),
            sequence: 0,
            started: false,
            ended: false,
            events: Vec::new(),
        }
    }

    /// Sends the calls of `tools` in the client's form.
    pub(crate) fn client_tools(mut self, tools: &[ClientTool]) -> Self {
        self.output.set_client_tools(tools);
        self
    }

    /// Writes `name` with `body`, its `type` and `sequence_number` added, as one SSE event.
    fn write(&mut self, name: &'static str, mut body: Value, out: &mut Vec<u8>) {
        body["type"] = Value::from(name);
        body["sequence_number"] = Value::from(self.sequence);
        self.sequence += 1;
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\ndata: ");
        out.extend_from_slice(body.to_string().as_bytes());
        out.extend_from_slice(b"\n\n");
    }

    fn flush(&mut self, out: &mut Vec<u8>) {
        for Event { name, body } in std::mem::take(&mut self.events) {
            self.write(name, body, out);
        }
    }

    /// Writes the opening events once, before anything else.
    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.started = true;
            for name in ["response.created", "response.in_progress"] {
                let response = self.output.response("in_progress");
                self.write(name, serde_json::json!({ "response": response }), out);
            }
        }
    }
}

impl StreamEncoder for Encoder {
    fn start(&mut self, out: &mut Vec<u8>) {
        self.ensure_started(out);
    }

    fn chunk(&mut self, chunk: &ApiStreamChunk, out: &mut Vec<u8>) {
        if self.ended {
            return;
        }
        self.ensure_started(out);
        self.output.push(chunk, &mut self.events);
        self.flush(out);
    }

    fn finish(&mut self, stop: StopReason, out: &mut Vec<u8>) {
        if self.ended {
            return;
        }
        self.ensure_started(out);
        self.ended = true;
        let response = self.output.finish(stop, &mut self.events);
        self.flush(out);
        // `response.completed` even for an answer the output limit cut: Codex CLI retries a stream
        // that ends without it, re-sending its history (openai/codex#38831), and the SDKs'
        // `final_response()` is set only by it.
        self.write(
            "response.completed",
            serde_json::json!({ "response": response }),
            out,
        );
    }

    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        if self.ended {
            return;
        }
        self.ensure_started(out);
        self.ended = true;
        let response = self.output.failed(error);
        self.write(
            "response.failed",
            serde_json::json!({ "response": response }),
            out,
        );
    }
}

/// Collects one answer into the response object `response.completed` would carry.
#[derive(Debug)]
pub(crate) struct Collector {
    output: Output,
    /// Scratch for the events the builder makes; a whole answer has no use for them.
    events: Vec<Event>,
}

impl Collector {
    pub(crate) fn new(model: &str, id: &str) -> Self {
        Self {
            output: Output::new(model, id),
            events: Vec::new(),
        }
    }

    pub(crate) fn client_tools(mut self, tools: &[ClientTool]) -> Self {
        self.output.set_client_tools(tools);
        self
    }
}

impl ResponseCollector for Collector {
    fn chunk(&mut self, chunk: &ApiStreamChunk) {
        self.output.push(chunk, &mut self.events);
        self.events.clear();
    }

    fn finish(&mut self, stop: StopReason) -> Value {
        let response = self.output.finish(stop, &mut self.events);
        self.events.clear();
        response
    }
}
