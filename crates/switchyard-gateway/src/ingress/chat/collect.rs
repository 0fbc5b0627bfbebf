//! The non-streamed Chat Completions answer: a `chat.completion` object, its reasoning in
//! `reasoning_content`, the field DeepSeek and vLLM use and Cline reads.
//! Spec: R14.1.

use serde_json::{Value, json};
use switchyard_api::{ApiStreamChunk, ToolCallAccumulator, Usage};

use super::super::encode::{ResponseCollector, StopReason};
use super::wire::{self, Identity};

/// Collects one answer into a `chat.completion` object.
#[derive(Debug)]
pub(crate) struct Collector {
    identity: Identity,
    text: String,
    reasoning: String,
    calls: ToolCallAccumulator,
    usage: Option<Usage>,
}

impl Collector {
    /// The collector of an answer of `model` to request `id`.
    pub(crate) fn new(model: &str, id: &str) -> Self {
        Self {
            identity: Identity::new(model, id),
            text: String::new(),
            reasoning: String::new(),
            calls: ToolCallAccumulator::default(),
            usage: None,
        }
    }
}

impl ResponseCollector for Collector {
    fn chunk(&mut self, chunk: &ApiStreamChunk) {
        match chunk {
            ApiStreamChunk::Text { text, .. } => self.text.push_str(text),
            ApiStreamChunk::Reasoning { reasoning, .. } => self.reasoning.push_str(reasoning),
            ApiStreamChunk::Usage(usage) => self.usage = Some(usage.clone()),
            ApiStreamChunk::ToolCalls { .. } => self.calls.push_chunk(chunk),
            // How a cut answer ended reaches the encoder as `finish`'s stop reason.
            ApiStreamChunk::Finish { .. } | ApiStreamChunk::Wire(_) => {}
        }
    }

    fn finish(&mut self, stop: StopReason) -> Value {
        let calls = std::mem::take(&mut self.calls).finish();
        let content = if self.text.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            json!(std::mem::take(&mut self.text))
        };
        let mut message = json!({"role": "assistant", "content": content, "refusal": null});
        if !self.reasoning.is_empty() {
            message["reasoning_content"] = json!(std::mem::take(&mut self.reasoning));
        }
        if !calls.is_empty() {
            let calls: Vec<Value> = calls
                .iter()
                .map(|c| wire::tool_call(&c.id, &c.name, &c.arguments, c.signature.as_deref()))
                .collect();
            message["tool_calls"] = Value::Array(calls);
        }
        let reason = wire::finish_reason(stop, message.get("tool_calls").is_some());
        let mut object = self.identity.object("chat.completion");
        object.insert(
            "choices".into(),
            json!([{"index": 0, "message": message, "logprobs": null, "finish_reason": reason}]),
        );
        if let Some(usage) = &self.usage {
            object.insert("usage".into(), wire::usage(usage));
        }
        Value::Object(object)
    }
}
