//! Switchyard's chunks as Anthropic's non-streamed message object, its blocks in the order
//! they began.
//! Spec: R14.1.

use std::collections::HashMap;

use serde_json::{Value, json};
use switchyard_api::{ApiStreamChunk, Usage};

use super::super::encode::{ResponseCollector, StopReason};
use super::wire::{effective_stop, is_repeat, message_id, stop_reason, usage_json};

/// One content block being collected.
enum Block {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted(String),
    Tool {
        id: String,
        name: String,
        args: String,
    },
}

/// The collector of one non-streamed Anthropic answer. Text continues the last block when it
/// is text, thinking an unsigned thinking block, since a signature ends it; tool fragments
/// join per call id, wherever the call began.
pub(crate) struct Collector {
    model: String,
    id: String,
    blocks: Vec<Block>,
    /// Each call id's block position.
    tools: HashMap<String, usize>,
    usage: Usage,
}

impl Collector {
    /// The collector of an answer of `model` for request `id`.
    pub(crate) fn new(model: &str, id: &str) -> Self {
        Self {
            model: model.to_owned(),
            id: message_id(id),
            blocks: Vec::new(),
            tools: HashMap::new(),
            usage: Usage::default(),
        }
    }

    /// Thinking text and a signature: they continue the last block when it is unsigned thinking,
    /// else start one.
    fn thinking(&mut self, text: &str, sig: &str) {
        match self.blocks.last_mut() {
            Some(Block::Thinking {
                thinking,
                signature,
            }) if signature.is_empty() => {
                thinking.push_str(text);
                signature.push_str(sig);
            }
            _ => self.blocks.push(Block::Thinking {
                thinking: text.to_owned(),
                signature: sig.to_owned(),
            }),
        }
    }

    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.blocks.last_mut() {
            Some(Block::Text(t)) => t.push_str(text),
            _ => self.blocks.push(Block::Text(text.to_owned())),
        }
    }

    fn tool(&mut self, id: &str, name: &str, delta: &str) {
        if let Some(&at) = self.tools.get(id) {
            if let Some(Block::Tool { args, .. }) = self.blocks.get_mut(at) {
                if !is_repeat(args, delta) {
                    args.push_str(delta);
                }
            }
            return;
        }
        self.tools.insert(id.to_owned(), self.blocks.len());
        self.blocks.push(Block::Tool {
            id: id.to_owned(),
            name: name.to_owned(),
            args: delta.to_owned(),
        });
    }
}

/// A tool call's `input`: its arguments parsed, `{}` when there are none. Arguments that are
/// not JSON are kept as a string, so the client sees what the model sent rather than an input
/// made up.
fn tool_input(args: &str) -> Value {
    if args.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.to_owned()))
}

fn block_json(block: &Block) -> Value {
    match block {
        Block::Text(text) => json!({"type": "text", "text": text}),
        Block::Thinking {
            thinking,
            signature,
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
        Block::Redacted(data) => json!({"type": "redacted_thinking", "data": data}),
        Block::Tool { id, name, args } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": tool_input(args)})
        }
    }
}

impl ResponseCollector for Collector {
    fn chunk(&mut self, chunk: &ApiStreamChunk) {
        match chunk {
            ApiStreamChunk::Text { text, .. } => self.text(text),
            ApiStreamChunk::Reasoning {
                reasoning,
                signature,
                redacted_data,
                ..
            } => {
                if let Some(data) = redacted_data {
                    self.blocks.push(Block::Redacted(data.clone()));
                }
                let sig = signature.as_deref().unwrap_or("");
                if !reasoning.is_empty() || !sig.is_empty() {
                    self.thinking(reasoning, sig);
                }
            }
            ApiStreamChunk::ToolCalls {
                id,
                name,
                arguments_delta,
                ..
            } => self.tool(id, name, arguments_delta),
            ApiStreamChunk::Usage(usage) => self.usage = usage.clone(),
            // How a cut answer ended reaches the encoder as `finish`'s stop reason.
            ApiStreamChunk::Finish { .. } | ApiStreamChunk::Wire(_) => {}
        }
    }

    fn finish(&mut self, stop: StopReason) -> Value {
        let stop = effective_stop(stop, !self.tools.is_empty());
        let content: Vec<Value> = self.blocks.iter().map(block_json).collect();
        json!({
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop_reason(stop),
            "stop_sequence": null,
            "usage": usage_json(&self.usage),
        })
    }
}
