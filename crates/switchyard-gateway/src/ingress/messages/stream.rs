//! Switchyard's chunks as Anthropic's server-sent events, as Claude Code and the SDKs read
//! them: each event has an `event:` line, blocks have consecutive indices and never overlap,
//! and a failure is `event: error` with no `message_stop`.
//! Spec: R14.1, R14.4.

use serde_json::{Value, json};
use switchyard_api::{ApiError, ApiStreamChunk, ErrorKind, Usage};

use super::super::encode::{StopReason, StreamEncoder};
use super::wire::{
    effective_stop, error_body, is_repeat, is_whole_json, message_id, stop_reason, usage_json,
};

/// One tool call as the encoder has it: its id, name and the argument bytes so far.
struct Call {
    id: String,
    name: String,
    args: String,
}

impl Call {
    /// The arguments are one whole JSON value; until then they may still come, interleaved.
    fn is_complete(&self) -> bool {
        is_whole_json(&self.args)
    }
}

enum Open {
    Text,
    /// A thinking block; `signed` once its signature went out, which closes the thinking.
    Thinking {
        signed: bool,
    },
    Tool(Call),
}

/// The Anthropic stream encoder of one answer. A call whose fragments arrive while the open
/// call is incomplete is held and sent whole after it: Anthropic's blocks cannot interleave.
/// A repeat of a closed call's whole arguments is ignored: bifrost#5128 sent calls twice.
pub(crate) struct Encoder {
    model: String,
    id: String,
    started: bool,
    done: bool,
    /// The index the next block gets.
    next_index: u64,
    open: Option<Open>,
    /// Calls held while an earlier call is open and incomplete.
    held: Vec<Call>,
    /// Calls whose block is closed, kept to recognise a repeat.
    closed: Vec<Call>,
    /// The latest usage chunk; each is cumulative.
    usage: Usage,
}

impl Encoder {
    pub(crate) fn new(model: &str, id: &str) -> Self {
        Self {
            model: model.to_owned(),
            id: message_id(id),
            started: false,
            done: false,
            next_index: 0,
            open: None,
            held: Vec::new(),
            closed: Vec::new(),
            usage: Usage::default(),
        }
    }
}

fn event(out: &mut Vec<u8>, name: &str, data: &Value) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(data.to_string().as_bytes());
    out.extend_from_slice(b"\n\n");
}

impl Encoder {
    fn block_start(&mut self, block: Value, out: &mut Vec<u8>) -> u64 {
        let index = self.next_index;
        self.next_index += 1;
        let data = json!({"type": "content_block_start", "index": index, "content_block": block});
        event(out, "content_block_start", &data);
        index
    }

    fn delta(&self, delta: Value, out: &mut Vec<u8>) {
        let index = self.next_index.saturating_sub(1);
        let data = json!({"type": "content_block_delta", "index": index, "delta": delta});
        event(out, "content_block_delta", &data);
    }

    fn block_stop(index: u64, out: &mut Vec<u8>) {
        let data = json!({"type": "content_block_stop", "index": index});
        event(out, "content_block_stop", &data);
    }

    fn start_tool(&mut self, call: &Call, out: &mut Vec<u8>) {
        let block = json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}});
        self.block_start(block, out);
        if !call.args.is_empty() {
            self.delta(
                json!({"type": "input_json_delta", "partial_json": call.args}),
                out,
            );
        }
    }

    /// Closes the open block, then sends each held call whole, in order.
    fn close_open(&mut self, out: &mut Vec<u8>) {
        if let Some(open) = self.open.take() {
            Self::block_stop(self.next_index - 1, out);
            if let Open::Tool(call) = open {
                self.closed.push(call);
            }
        }
        for call in std::mem::take(&mut self.held) {
            self.start_tool(&call, out);
            Self::block_stop(self.next_index - 1, out);
            self.closed.push(call);
        }
    }

    fn text(&mut self, text: &str, out: &mut Vec<u8>) {
        if text.is_empty() {
            return;
        }
        if !matches!(self.open, Some(Open::Text)) {
            self.close_open(out);
            self.block_start(json!({"type": "text", "text": ""}), out);
            self.open = Some(Open::Text);
        }
        self.delta(json!({"type": "text_delta", "text": text}), out);
    }

    fn open_thinking(&mut self, out: &mut Vec<u8>) {
        if !matches!(self.open, Some(Open::Thinking { signed: false })) {
            self.close_open(out);
            let block = json!({"type": "thinking", "thinking": "", "signature": ""});
            self.block_start(block, out);
            self.open = Some(Open::Thinking { signed: false });
        }
    }

    /// Reasoning: thinking text, a signature closing the thinking it signs, or a whole redacted
    /// block. A signature alone still gets its block: litellm#38809 lost signature-only blocks.
    fn reasoning(
        &mut self,
        reasoning: &str,
        signature: Option<&str>,
        redacted: Option<&str>,
        out: &mut Vec<u8>,
    ) {
        if let Some(data) = redacted {
            self.close_open(out);
            let index = self.block_start(json!({"type": "redacted_thinking", "data": data}), out);
            Self::block_stop(index, out);
        }
        if !reasoning.is_empty() {
            self.open_thinking(out);
            self.delta(
                json!({"type": "thinking_delta", "thinking": reasoning}),
                out,
            );
        }
        if let Some(sig) = signature.filter(|s| !s.is_empty()) {
            self.open_thinking(out);
            self.delta(json!({"type": "signature_delta", "signature": sig}), out);
            self.open = Some(Open::Thinking { signed: true });
        }
    }

    fn tool(&mut self, id: &str, name: &str, delta: &str, out: &mut Vec<u8>) {
        if let Some(Open::Tool(call)) = &mut self.open {
            if call.id == id {
                if is_repeat(&call.args, delta) {
                    return; // the whole call again while its block is open
                }
                call.args.push_str(delta);
                if !delta.is_empty() {
                    self.delta(
                        json!({"type": "input_json_delta", "partial_json": delta}),
                        out,
                    );
                }
                return;
            }
        }
        if let Some(call) = self.held.iter_mut().find(|c| c.id == id) {
            return call.args.push_str(delta);
        }
        if let Some(call) = self.closed.iter().find(|c| c.id == id) {
            if delta.trim().is_empty() || is_repeat(&call.args, delta) {
                return; // nothing new, or the whole call again
            }
            let message = format!(
                "the model sent more arguments for tool call `{name}` after its block ended, so the call cannot be delivered whole."
            );
            return self.error(&ApiError::new(ErrorKind::Decode, message), out);
        }
        let call = Call {
            id: id.to_owned(),
            name: name.to_owned(),
            args: delta.to_owned(),
        };
        let open_incomplete = matches!(&self.open, Some(Open::Tool(c)) if !c.is_complete());
        if open_incomplete || !self.held.is_empty() {
            return self.held.push(call);
        }
        self.close_open(out);
        self.start_tool(&call, out);
        self.open = Some(Open::Tool(call));
    }
}

impl StreamEncoder for Encoder {
    /// `message_start` with zero usage, the real usage following in `message_delta`, and a
    /// `ping`, as Anthropic sends them.
    fn start(&mut self, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        let message = json!({
            "id": self.id, "type": "message", "role": "assistant", "model": self.model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        });
        event(
            out,
            "message_start",
            &json!({"type": "message_start", "message": message}),
        );
        event(out, "ping", &json!({"type": "ping"}));
    }

    fn chunk(&mut self, chunk: &ApiStreamChunk, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.start(out);
        match chunk {
            ApiStreamChunk::Text { text, .. } => self.text(text, out),
            ApiStreamChunk::Reasoning {
                reasoning,
                signature,
                redacted_data,
                ..
            } => self.reasoning(
                reasoning,
                signature.as_deref(),
                redacted_data.as_deref(),
                out,
            ),
            ApiStreamChunk::ToolCalls {
                id,
                name,
                arguments_delta,
                ..
            } => self.tool(id, name, arguments_delta, out),
            ApiStreamChunk::Usage(usage) => self.usage = usage.clone(),
            // How a cut answer ended reaches the encoder as `finish`'s stop reason.
            ApiStreamChunk::Finish { .. } | ApiStreamChunk::Wire(_) => {}
        }
    }

    /// Closes the open block, then `message_delta` with the stop reason and the latest usage,
    /// cache counts included, which envoyproxy/ai-gateway#2352 lost, and `message_stop`.
    fn finish(&mut self, stop: StopReason, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.start(out);
        self.close_open(out);
        self.done = true;
        let stop = effective_stop(stop, !self.closed.is_empty());
        let data = json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(stop), "stop_sequence": null},
            "usage": usage_json(&self.usage),
        });
        event(out, "message_delta", &data);
        event(out, "message_stop", &json!({"type": "message_stop"}));
    }

    /// `event: error` and nothing after it: the answer is not complete.
    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.done = true;
        event(out, "error", &error_body(error));
    }
}
