//! Switchyard's chunks as Gemini's stream of `GenerateContentResponse`s: server-sent events
//! with `alt=sse`, else one JSON array. The last response has the finish reason and the usage;
//! a failure is Google's error object, which the Gemini SDKs throw.
//! Spec: R14.12, R14.4, R14.5.

use serde_json::Value;
use switchyard_api::{ApiError, ApiStreamChunk, Usage};

use super::super::encode::{StopReason, StreamEncoder};
use super::parts::Parts;
use super::wire::{error_response, finish_reason, response};

/// The Gemini stream encoder of one answer.
pub(crate) struct Encoder {
    model: String,
    id: String,
    /// Server-sent events, else the elements of one JSON array.
    sse: bool,
    parts: Parts,
    /// The latest usage chunk; each is cumulative.
    usage: Usage,
    /// The JSON array's `[` went out.
    opened: bool,
    done: bool,
}

impl Encoder {
    pub(crate) fn new(model: &str, id: &str, sse: bool, hide_thoughts: bool) -> Self {
        Self {
            model: model.to_owned(),
            id: id.to_owned(),
            sse,
            parts: Parts::new(hide_thoughts),
            usage: Usage::default(),
            opened: false,
            done: false,
        }
    }

    fn write(&mut self, event: &Value, out: &mut Vec<u8>) {
        let data = event.to_string();
        if self.sse {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(data.as_bytes());
            out.extend_from_slice(b"\r\n\r\n");
        } else {
            self.element(data.as_bytes(), out);
        }
    }

    /// One element of the JSON array, after its `[` or the comma before it.
    fn element(&mut self, data: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(if self.opened { b",\r\n" } else { b"[" });
        self.opened = true;
        out.extend_from_slice(data);
    }

    fn close_array(&mut self, out: &mut Vec<u8>) {
        if !self.sse {
            if !self.opened {
                out.push(b'[');
            }
            out.extend_from_slice(b"\r\n]");
        }
    }
}

impl StreamEncoder for Encoder {
    /// Gemini sends nothing before the first response.
    fn start(&mut self, _out: &mut Vec<u8>) {}

    fn chunk(&mut self, chunk: &ApiStreamChunk, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        if let ApiStreamChunk::Usage(usage) = chunk {
            self.usage = usage.clone();
            return;
        }
        self.parts.push(chunk);
        let parts = self.parts.take();
        if !parts.is_empty() {
            let event = response(parts, None, &self.model, &self.id);
            self.write(&event, out);
        }
    }

    /// The last response: the calls still open, the finish reason and the usage.
    fn finish(&mut self, stop: StopReason, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.done = true;
        let parts = self.parts.close();
        let reason = finish_reason(stop, self.parts.malformed);
        let event = response(parts, Some((reason, &self.usage)), &self.model, &self.id);
        self.write(&event, out);
        self.close_array(out);
    }

    /// Google's error object and nothing after it. In server-sent events it is no `data:`
    /// event but the object itself, as Google sends it mid-stream and the Gemini SDKs throw it;
    /// in the array, its last element.
    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.done = true;
        let (_, body) = error_response(error);
        let data = body.to_string();
        if self.sse {
            out.extend_from_slice(data.as_bytes());
            out.push(b'\n');
        } else {
            self.element(data.as_bytes(), out);
            self.close_array(out);
        }
    }

    /// The provider's events carry the parts, which the encoder must not send again.
    fn mirror(&mut self, chunk: &ApiStreamChunk) {
        if let ApiStreamChunk::Usage(usage) = chunk {
            self.usage = usage.clone();
        }
    }

    /// A Gemini event as it came: in the JSON array, its data as an element.
    fn relay(&mut self, event: &[u8], out: &mut Vec<u8>) {
        if self.sse {
            return out.extend_from_slice(event);
        }
        let text = String::from_utf8_lossy(event);
        let data: Vec<&str> = (text.lines())
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        let data = data.join("\n");
        if !data.trim().is_empty() {
            self.element(data.as_bytes(), out);
        }
    }

    fn end_relayed(&mut self, out: &mut Vec<u8>) {
        if !self.done {
            self.done = true;
            self.close_array(out);
        }
    }
}
