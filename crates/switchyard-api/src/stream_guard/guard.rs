//! [`StreamGuard`]: one answer's chunks scrubbed per channel across their boundaries, bounded.
//! Spec: R10.5, R4.0b.

use super::bounds::{StreamBounds, answer_too_large, arguments_too_large};
use super::details::Details;
use crate::error::ApiError;
use crate::secrets::Scrubber;
use crate::stream::ApiStreamChunk;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    Text,
    Reasoning,
    Tools,
}

struct ToolArguments {
    id: String,
    name: String,
    call_id: Option<String>,
    scrubber: Scrubber,
    bytes: usize,
}

/// The guard's state for one answer: feed it every chunk in order, then `finish`, and hand on
/// what they return. A bound error ends the answer; what was released before it is whole.
pub struct StreamGuard {
    bounds: StreamBounds,
    text: Scrubber,
    text_id: Option<String>,
    reasoning: Scrubber,
    reasoning_id: Option<String>,
    /// The reasoning's structured details, a channel of their own.
    details: Details,
    tools: Vec<ToolArguments>,
    /// The channel of the last content chunk; a change releases what the others hold, in order.
    last: Option<Channel>,
    answer_bytes: usize,
    /// Usage that arrived while content before it was held: handed on after that content.
    deferred: Vec<ApiStreamChunk>,
}

impl StreamGuard {
    pub fn new(bounds: StreamBounds) -> Self {
        Self {
            bounds,
            text: Scrubber::new(),
            text_id: None,
            reasoning: Scrubber::new(),
            reasoning_id: None,
            details: Details::default(),
            tools: Vec::new(),
            last: None,
            answer_bytes: 0,
            deferred: Vec::new(),
        }
    }

    /// Takes the next chunk; `out` gets the chunks to hand on now. Past a bound it returns the
    /// error after what was held, and the answer is over.
    pub fn chunk(
        &mut self,
        chunk: ApiStreamChunk,
        out: &mut Vec<ApiStreamChunk>,
    ) -> Option<ApiError> {
        let content = match &chunk {
            ApiStreamChunk::Text { text, .. } => Some((Channel::Text, text.len())),
            ApiStreamChunk::Reasoning { reasoning, .. } => {
                Some((Channel::Reasoning, reasoning.len()))
            }
            ApiStreamChunk::ToolCalls {
                arguments_delta, ..
            } => Some((Channel::Tools, arguments_delta.len())),
            ApiStreamChunk::Usage(_) => None,
            ApiStreamChunk::Finish { .. } => {
                self.finish(out);
                out.push(chunk);
                return None;
            }
            // A provider's own event: `wire::WireGuard` guards those.
            ApiStreamChunk::Wire(_) => {
                out.push(chunk);
                return None;
            }
        };
        let Some((channel, bytes)) = content else {
            if self.holding() {
                self.deferred.push(chunk);
            } else {
                out.push(chunk);
            }
            return None;
        };
        if self.last.is_some_and(|last| last != channel) {
            self.release_text(channel, out);
        }
        self.last = Some(channel);
        self.answer_bytes = self.answer_bytes.saturating_add(bytes);
        if self.answer_bytes > self.bounds.max_answer_bytes {
            self.finish(out);
            return Some(answer_too_large(self.bounds.max_answer_bytes));
        }
        match chunk {
            ApiStreamChunk::Text {
                text,
                id,
                signature,
            } => self.on_text(text, id, signature, out),
            ApiStreamChunk::Reasoning {
                reasoning,
                details,
                signature,
                redacted_data,
                id,
            } => self.on_reasoning(reasoning, details, signature, redacted_data, id, out),
            ApiStreamChunk::ToolCalls {
                call_id,
                id,
                name,
                arguments_delta,
                signature,
            } => {
                if let Some(e) =
                    self.on_tool_call(call_id, id, name, arguments_delta, signature, out)
                {
                    return Some(e);
                }
            }
            ApiStreamChunk::Usage(_) | ApiStreamChunk::Finish { .. } | ApiStreamChunk::Wire(_) => {}
        }
        if !self.deferred.is_empty() && !self.holding() {
            out.append(&mut self.deferred);
        }
        None
    }

    pub(super) fn holding(&self) -> bool {
        self.text.held_len() > 0
            || self.reasoning.held_len() > 0
            || self.details.held_len() > 0
            || self.tools.iter().any(|t| t.scrubber.held_len() > 0)
    }

    fn on_tool_call(
        &mut self,
        call_id: Option<String>,
        id: String,
        name: String,
        arguments_delta: String,
        signature: Option<String>,
        out: &mut Vec<ApiStreamChunk>,
    ) -> Option<ApiError> {
        let limit = self.bounds.max_tool_arguments_bytes;
        let call = self.tool(call_id.as_deref(), &id, &name);
        call.bytes += arguments_delta.len();
        if call.bytes > limit {
            self.finish(out);
            return Some(arguments_too_large(Some(&name), limit));
        }
        out.push(ApiStreamChunk::ToolCalls {
            arguments_delta: release(&mut call.scrubber, arguments_delta),
            call_id,
            id,
            name,
            signature,
        });
        None
    }

    fn on_text(
        &mut self,
        text: String,
        id: Option<String>,
        signature: Option<String>,
        out: &mut Vec<ApiStreamChunk>,
    ) {
        let mut shown = release(&mut self.text, text);
        if signature.is_some() {
            // A signature closes the part it belongs to: nothing of it stays held.
            shown.push_str(&self.text.finish());
        }
        if id.is_some() {
            self.text_id.clone_from(&id);
        }
        if !shown.is_empty() || signature.is_some() {
            out.push(ApiStreamChunk::Text {
                text: shown,
                id,
                signature,
            });
        }
    }

    fn on_reasoning(
        &mut self,
        reasoning: String,
        details: Option<serde_json::Value>,
        signature: Option<String>,
        redacted_data: Option<String>,
        id: Option<String>,
        out: &mut Vec<ApiStreamChunk>,
    ) {
        let mut shown = release(&mut self.reasoning, reasoning);
        // OpenRouter's structured details, sent with every piece, are a channel of their own.
        let mut details = details.map(|d| self.details.push(d));
        // A signature or redacted block closes the thinking block: nothing of it stays held.
        let closes = signature.is_some() || redacted_data.is_some();
        if closes {
            shown.push_str(&self.reasoning.finish());
            details = joined_details(details, self.details.finish());
        }
        if id.is_some() {
            self.reasoning_id.clone_from(&id);
        }
        if !shown.is_empty() || closes || details.is_some() {
            out.push(ApiStreamChunk::Reasoning {
                reasoning: shown,
                details,
                signature,
                redacted_data,
                id,
            });
        }
    }

    fn tool(&mut self, call_id: Option<&str>, id: &str, name: &str) -> &mut ToolArguments {
        let at = match self.tools.iter().position(|t| t.id == id) {
            Some(at) => at,
            None => {
                self.tools.push(ToolArguments {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    call_id: None,
                    scrubber: Scrubber::new(),
                    bytes: 0,
                });
                self.tools.len() - 1
            }
        };
        let call = &mut self.tools[at];
        if call.call_id.is_none() {
            call.call_id = call_id.map(str::to_owned);
        }
        call
    }

    /// Releases the text and the reasoning held, except `next`'s own channel.
    fn release_text(&mut self, next: Channel, out: &mut Vec<ApiStreamChunk>) {
        if next != Channel::Text {
            let text = self.text.finish();
            if !text.is_empty() {
                out.push(ApiStreamChunk::Text {
                    text,
                    id: self.text_id.clone(),
                    signature: None,
                });
            }
        }
        if next != Channel::Reasoning {
            let reasoning = self.reasoning.finish();
            let tail = self.details.finish();
            if !reasoning.is_empty() || tail.is_some() {
                let mut chunk = ApiStreamChunk::reasoning(reasoning);
                if let ApiStreamChunk::Reasoning { id, details, .. } = &mut chunk {
                    id.clone_from(&self.reasoning_id);
                    *details = tail;
                }
                out.push(chunk);
            }
        }
    }

    /// The answer ended or failed: everything still held, scrubbed, in `out`.
    pub fn finish(&mut self, out: &mut Vec<ApiStreamChunk>) {
        self.release_text(Channel::Tools, out);
        for call in &mut self.tools {
            let rest = call.scrubber.finish();
            if !rest.is_empty() {
                out.push(ApiStreamChunk::ToolCalls {
                    call_id: call.call_id.clone(),
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments_delta: rest,
                    signature: None,
                });
            }
        }
        out.append(&mut self.deferred);
        self.last = None;
    }
}

/// A chunk's details with the details channel's held `tail` after them.
fn joined_details(
    details: Option<serde_json::Value>,
    tail: Option<serde_json::Value>,
) -> Option<serde_json::Value> {
    match (details, tail) {
        (Some(serde_json::Value::Array(mut items)), Some(serde_json::Value::Array(tail))) => {
            items.extend(tail);
            Some(serde_json::Value::Array(items))
        }
        // Details that are not an array keep their shape, and the tail goes on its own.
        (Some(details), Some(tail)) => Some(serde_json::json!([details, tail])),
        (details, tail) => details.or(tail),
    }
}

fn release(scrubber: &mut Scrubber, piece: String) -> String {
    match scrubber.push(&piece) {
        std::borrow::Cow::Borrowed(_) => piece,
        std::borrow::Cow::Owned(shown) => shown,
    }
}
