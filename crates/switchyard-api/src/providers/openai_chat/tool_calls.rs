//! Chat Completions tool calls assembled from their streamed fragments, each call's chunk going out
//! once its id and name are known. Arguments that arrive before the name are held, bounded by
//! `max_tool_arguments_bytes` per call and `max_answer_bytes` in all.
//! Spec: R1.2, R10.5, R4.0b.

use serde_json::Value;

use crate::providers::mapper::Chunks;
use crate::stream::{ApiStreamChunk, generated_tool_call_id};
use crate::stream_guard::{StreamBounds, answer_too_large, arguments_too_large};

#[derive(Debug, Default)]
struct PendingToolCall {
    index: Option<u64>,
    wire_id: Option<String>,
    /// The id its chunks carry: the wire's, or one made up when the wire sent none.
    id: Option<String>,
    name: Option<String>,
    /// Every argument fragment so far, to tell a finished call from one still arriving.
    arguments: String,
    /// Argument fragments that arrived before the id and name were known.
    held: String,
    /// Gemini's thought signature, not yet sent.
    signature: Option<String>,
}

impl PendingToolCall {
    /// Whether the arguments so far are one whole JSON value, so a renaming fragment starts a new
    /// call.
    fn is_complete(&self) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(&self.arguments).is_ok()
    }
}

/// The tool calls of one response, in the order they appeared.
#[derive(Debug, Default)]
pub(super) struct ToolCalls {
    calls: Vec<PendingToolCall>,
    /// The wire has sent several index-less fragments in one chunk, so from then on such a fragment
    /// is placed by its position in its chunk, as the reference's `tool-call-processor.ts` does.
    positional: bool,
    bounds: StreamBounds,
    /// Bytes held in all calls' `held` now.
    held_bytes: usize,
}

impl ToolCalls {
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    pub(super) fn set_bounds(&mut self, bounds: StreamBounds) {
        self.bounds = bounds;
    }

    /// Whether arguments that arrived before their call's name are held now.
    pub(super) fn holding(&self) -> bool {
        self.held_bytes > 0
    }

    /// The call a tool-call fragment belongs to, keyed by `index`, then `id`, then the open call.
    ///
    /// * A fragment with an `id` continues the call with that id, else names the call at its
    ///   `index` that has no id yet, else starts a new call: Ollama sends two calls that share an
    ///   index with different ids.
    /// * A fragment without an id continues the call at its `index`, unless it names a tool again
    ///   after that call's arguments are complete. NVIDIA NIM repeats the name in every fragment.
    /// * A fragment with neither id nor name continues the most recent call; a name without id at
    ///   an unseen index starts a new call.
    fn slot(
        &mut self,
        index: Option<u64>,
        id: Option<&str>,
        name: Option<&str>,
        args: &str,
    ) -> usize {
        let calls = &mut self.calls;
        let at_index = index.and_then(|i| calls.iter().rposition(|c| c.index == Some(i)));
        if let Some(id) = id {
            if let Some(p) = calls.iter().rposition(|c| c.wire_id.as_deref() == Some(id)) {
                return p;
            }
            if let Some(p) = at_index.filter(|&p| calls[p].wire_id.is_none()) {
                calls[p].wire_id = Some(id.to_owned());
                return p;
            }
        } else if let Some(p) = at_index.or(if index.is_none() || name.is_none() {
            calls.len().checked_sub(1)
        } else {
            None
        }) {
            let call = &calls[p];
            let renamed = match (name, call.name.as_deref()) {
                (Some(new), Some(old)) => new != old || !args.is_empty(),
                _ => false,
            };
            if !(renamed && call.is_complete()) {
                return p;
            }
        }
        calls.push(PendingToolCall {
            index,
            wire_id: id.map(str::to_owned),
            ..PendingToolCall::default()
        });
        calls.len() - 1
    }

    /// One chunk's `tool_calls` fragments in order. Once two or more in a chunk lack an `index`,
    /// fragments without one are placed by their position in the chunk from then on.
    pub(super) fn on_fragments(&mut self, fragments: &[Value], out: &mut Chunks) {
        let without_index = fragments
            .iter()
            .filter(|tc| tc.get("index").is_none())
            .count();
        self.positional |= without_index > 1;
        for (position, tc) in fragments.iter().enumerate() {
            self.on_delta(tc, position as u64, out);
        }
    }

    fn on_delta(&mut self, tc: &Value, position: u64, out: &mut Chunks) {
        fn non_empty(v: Option<&Value>) -> Option<&str> {
            v.and_then(Value::as_str).filter(|s| !s.is_empty())
        }
        let function = &tc["function"];
        let id = non_empty(tc.get("id"));
        let name = non_empty(function.get("name"));
        let args = function
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or("");
        let index = tc
            .get("index")
            .and_then(Value::as_u64)
            .or(self.positional.then_some(position));
        let at = self.slot(index, id, name, args);
        let call = &mut self.calls[at];
        if call.name.is_none() {
            call.name = name.map(str::to_owned);
        }
        if let Some(sig) = non_empty(tc.pointer("/extra_content/google/thought_signature")) {
            call.signature.get_or_insert_with(|| sig.to_owned());
        }
        call.arguments.push_str(args);
        let Some(name) = call.name.clone() else {
            call.held.push_str(args);
            self.held_bytes += args.len();
            if call.held.len() > self.bounds.max_tool_arguments_bytes {
                let limit = self.bounds.max_tool_arguments_bytes;
                out.push(Err(arguments_too_large(None, limit)));
            } else if self.held_bytes > self.bounds.max_answer_bytes {
                out.push(Err(answer_too_large(self.bounds.max_answer_bytes)));
            }
            return;
        };
        // A call the wire sends without an id gets one made up, unique in the process.
        let id = call
            .id
            .get_or_insert_with(|| call.wire_id.clone().unwrap_or_else(generated_tool_call_id))
            .clone();
        let mut delta = std::mem::take(&mut call.held);
        self.held_bytes -= delta.len();
        delta.push_str(args);
        let first = delta.len() == call.arguments.len();
        let signature = call.signature.take();
        if first || !delta.is_empty() || signature.is_some() {
            out.push(Ok(ApiStreamChunk::ToolCalls {
                call_id: None,
                id,
                name,
                arguments_delta: delta,
                signature,
            }));
        }
    }
}
