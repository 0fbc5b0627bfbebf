//! What a streamed and a whole Chat Completions answer share (SPEC R14.1): the identity every
//! object carries (`id`, `created`, `model`), `finish_reason`, `usage` and the shape of a
//! tool call, as OpenAI's reference and the official SDKs define them.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use switchyard_api::Usage;

use super::super::encode::StopReason;

/// The `id`, `created` and `model` of one answer's objects.
#[derive(Debug, Clone)]
pub(super) struct Identity {
    /// `chatcmpl-` and the gateway's request id (kept as is when it already starts so).
    id: String,
    /// Unix time in seconds when the answer started.
    created: u64,
    /// The model the client asked for, echoed back.
    model: String,
}

impl Identity {
    /// Takes the `id`, `created` and `model` of a provider's own chunk (SPEC R14.2), so the
    /// chunks that continue its answer belong to the same completion.
    pub(super) fn adopt(&mut self, chunk: &serde_json::Value) {
        if let Some(id) = chunk.get("id").and_then(serde_json::Value::as_str) {
            self.id = id.to_owned();
        }
        if let Some(created) = chunk.get("created").and_then(serde_json::Value::as_u64) {
            self.created = created;
        }
        if let Some(model) = chunk.get("model").and_then(serde_json::Value::as_str) {
            self.model = model.to_owned();
        }
    }

    /// The identity of the answer to request `id` for `model`, created now.
    pub(super) fn new(model: &str, id: &str) -> Self {
        let id = if id.starts_with("chatcmpl-") {
            id.to_owned()
        } else {
            format!("chatcmpl-{id}")
        };
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Self {
            id,
            created,
            model: model.to_owned(),
        }
    }

    /// `{"id", "object": object, "created", "model"}`, for the caller to complete.
    pub(super) fn object(&self, object: &str) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("id".into(), json!(self.id));
        map.insert("object".into(), json!(object));
        map.insert("created".into(), json!(self.created));
        map.insert("model".into(), json!(self.model));
        map
    }
}

/// `finish_reason` for `stop`: `stop`, `tool_calls` or `length`. An answer that called tools
/// ends in `tool_calls` even when the layer reports a plain end: clients that see `stop` after
/// tool calls drop the calls (RayBytes/ChatMock#114).
pub(super) fn finish_reason(stop: StopReason, called_tools: bool) -> &'static str {
    match stop {
        StopReason::MaxTokens => "length",
        StopReason::ToolUse => "tool_calls",
        StopReason::EndTurn if called_tools => "tool_calls",
        StopReason::EndTurn => "stop",
    }
}

/// OpenAI's `usage` for `usage`, in tokens: `prompt_tokens` is all the input (Switchyard's
/// non-cached input plus cache reads and writes), `prompt_tokens_details.cached_tokens` the
/// cache reads, `prompt_tokens_details.cache_write_tokens` the cache writes when the provider
/// reported them (a field openai-python 3.x reads), `completion_tokens` the output (reasoning
/// included, as OpenAI counts it) and `completion_tokens_details.reasoning_tokens` the
/// reasoning.
pub(super) fn usage(usage: &Usage) -> Value {
    let cached = usage.cache_read_tokens.unwrap_or(0);
    let prompt = usage
        .input_tokens
        .saturating_add(cached)
        .saturating_add(usage.cache_write_tokens.unwrap_or(0));
    let mut prompt_details = json!({"cached_tokens": cached});
    if let Some(written) = usage.cache_write_tokens {
        prompt_details["cache_write_tokens"] = json!(written);
    }
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt.saturating_add(usage.output_tokens),
        "prompt_tokens_details": prompt_details,
        "completion_tokens_details": {"reasoning_tokens": usage.thoughts_tokens.unwrap_or(0)},
    })
}

/// A tool call's opening: `{"id", "type": "function", "function": {"name", "arguments"}}`,
/// with Gemini's thought signature as its OpenAI-compatible endpoint carries it
/// (`extra_content.google.thought_signature`) so that a client that keeps the call sends it
/// back. The stream adds `index` in front.
pub(super) fn tool_call(id: &str, name: &str, arguments: &str, signature: Option<&str>) -> Value {
    let mut call = json!({
        "id": id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    });
    if let Some(signature) = signature {
        call["extra_content"] = json!({"google": {"thought_signature": signature}});
    }
    call
}
