//! The Chat Completions stream, as OpenAI sends it and the SDKs accumulate it. A failure is
//! an error event and no `[DONE]`, never a clean end.
//! Spec: R14.1, R14.4.

use std::collections::HashMap;

use serde_json::{Value, json};
use switchyard_api::{ApiError, ApiStreamChunk, Usage};

use super::super::encode::{StopReason, StreamEncoder};
use super::error::error_body;
use super::wire::{self, Identity};

#[derive(Debug)]
pub(crate) struct Encoder {
    identity: Identity,
    include_usage: bool,
    opened: bool,
    /// Each call id's `index`, fixed in order of first appearance.
    index_of: HashMap<String, usize>,
    /// Per call, in `index` order: whether any arguments went out.
    has_arguments: Vec<bool>,
    /// The latest usage, sent at the end: the layer may report it more than once.
    usage: Option<Usage>,
    /// Whether the stream ended: nothing more is written.
    ended: bool,
    /// Whether the identity is a forwarded provider chunk's.
    adopted: bool,
}

impl Encoder {
    pub(crate) fn new(model: &str, id: &str) -> Self {
        Self {
            identity: Identity::new(model, id),
            include_usage: false,
            opened: false,
            index_of: HashMap::new(),
            has_arguments: Vec::new(),
            usage: None,
            ended: false,
            adopted: false,
        }
    }

    /// With `on`, the stream ends with a usage chunk, as `stream_options.include_usage` asks.
    pub(crate) fn include_usage(mut self, on: bool) -> Self {
        self.include_usage = on;
        self
    }

    fn event(&self, choices: Value, usage: Option<Value>, out: &mut Vec<u8>) {
        let mut chunk = self.identity.object("chat.completion.chunk");
        chunk.insert("choices".into(), choices);
        if let Some(usage) = usage {
            chunk.insert("usage".into(), usage);
        }
        data(&Value::Object(chunk), out);
    }

    fn delta(&mut self, delta: Value, finish_reason: Option<&str>, out: &mut Vec<u8>) {
        if !self.opened {
            self.opened = true;
            let role = json!({"role": "assistant", "content": ""});
            self.event(choice(role, None), None, out);
        }
        self.event(choice(delta, finish_reason), None, out);
    }

    /// One fragment of tool call `id`: the opening the first time the id is seen, else its
    /// arguments alone.
    fn tool_fragment(
        &mut self,
        id: &str,
        name: &str,
        arguments: &str,
        signature: Option<&str>,
        out: &mut Vec<u8>,
    ) {
        let call = match self.index_of.get(id) {
            Some(_) if arguments.is_empty() => return,
            Some(&index) => {
                self.has_arguments[index] = true;
                json!({"index": index, "function": {"arguments": arguments}})
            }
            None => {
                let index = self.has_arguments.len();
                self.index_of.insert(id.to_owned(), index);
                self.has_arguments.push(!arguments.is_empty());
                let mut call = wire::tool_call(id, name, arguments, signature);
                if let Value::Object(map) = &mut call {
                    map.insert("index".into(), json!(index));
                }
                call
            }
        };
        self.delta(json!({"tool_calls": [call]}), None, out);
    }
}

impl StreamEncoder for Encoder {
    fn start(&mut self, _out: &mut Vec<u8>) {}

    /// The first forwarded chunk's identity: a continuation's chunks carry the same `id`.
    fn adopt(&mut self, event: &[u8]) {
        if self.adopted {
            return;
        }
        let data = std::str::from_utf8(event)
            .ok()
            .and_then(|e| e.trim_end().strip_prefix("data: "));
        if let Some(chunk) = data.and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            && chunk
                .get("id")
                .is_some_and(|id| id.as_str().is_some_and(|id| !id.is_empty()))
        {
            self.identity.adopt(&chunk);
            self.adopted = true;
        }
    }

    fn chunk(&mut self, chunk: &ApiStreamChunk, out: &mut Vec<u8>) {
        if self.ended {
            return;
        }
        match chunk {
            ApiStreamChunk::Usage(usage) => self.usage = Some(usage.clone()),
            ApiStreamChunk::Text { text, .. } if !text.is_empty() => {
                self.delta(json!({"content": text}), None, out);
            }
            ApiStreamChunk::Reasoning { reasoning, .. } if !reasoning.is_empty() => {
                self.delta(json!({"reasoning_content": reasoning}), None, out);
            }
            ApiStreamChunk::ToolCalls {
                id,
                name,
                arguments_delta,
                signature,
                ..
            } => self.tool_fragment(id, name, arguments_delta, signature.as_deref(), out),
            // Empty text, a thinking signature or redacted thinking: no delta field holds them.
            ApiStreamChunk::Text { .. } | ApiStreamChunk::Reasoning { .. } => {}
            // How a cut answer ended reaches the encoder as `finish`'s stop reason.
            ApiStreamChunk::Finish { .. } | ApiStreamChunk::Wire(_) => {}
        }
    }

    /// The end: calls that got no arguments get `{}`, since an empty string is not the JSON
    /// object the client parses; then the finish chunk, the usage chunk and `[DONE]`.
    fn finish(&mut self, stop: StopReason, out: &mut Vec<u8>) {
        if self.ended {
            return;
        }
        for index in 0..self.has_arguments.len() {
            if !self.has_arguments[index] {
                let call = json!({"index": index, "function": {"arguments": "{}"}});
                self.delta(json!({"tool_calls": [call]}), None, out);
            }
        }
        let reason = wire::finish_reason(stop, !self.has_arguments.is_empty());
        self.delta(json!({}), Some(reason), out);
        if self.include_usage {
            if let Some(usage) = &self.usage {
                self.event(json!([]), Some(wire::usage(usage)), out);
            }
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
        self.ended = true;
    }

    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        if self.ended {
            return;
        }
        data(&error_body(error), out);
        self.ended = true;
    }
}

/// One choice. `finish_reason` is on every chunk, null until the end, as OpenAI sends it
/// (vllm-project/vllm#19662).
fn choice(delta: Value, finish_reason: Option<&str>) -> Value {
    json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}])
}

fn data(value: &Value, out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(value.to_string().as_bytes());
    out.extend_from_slice(b"\n\n");
}
