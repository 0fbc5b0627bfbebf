//! What a streamed and a whole Chat Completions answer share: the identity every object
//! carries, `finish_reason`, `usage` and the shape of a tool call.
//! Spec: R14.1, R14.2.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use switchyard_api::Usage;

use super::super::encode::StopReason;

#[derive(Debug, Clone)]
pub(super) struct Identity {
    /// `chatcmpl-` and the gateway's request id.
    id: String,
    created: u64,
    /// The model the client asked for, echoed back.
    model: String,
}

impl Identity {
    /// Takes a provider chunk's identity, so a continuation belongs to the same completion.
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

    pub(super) fn object(&self, object: &str) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("id".into(), json!(self.id));
        map.insert("object".into(), json!(object));
        map.insert("created".into(), json!(self.created));
        map.insert("model".into(), json!(self.model));
        map
    }
}

/// `finish_reason` for `stop`: `tool_calls` whenever tools were called, since clients that
/// see `stop` after tool calls drop the calls (RayBytes/ChatMock#114).
pub(super) fn finish_reason(stop: StopReason, called_tools: bool) -> &'static str {
    match stop {
        StopReason::MaxTokens => "length",
        StopReason::ToolUse => "tool_calls",
        StopReason::EndTurn if called_tools => "tool_calls",
        StopReason::EndTurn => "stop",
    }
}

/// OpenAI's `usage`, counted as OpenAI counts it. Cache writes go in
/// `prompt_tokens_details.cache_write_tokens`, which openai-python 3.x reads.
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

/// A tool call's opening, with Gemini's thought signature where its OpenAI-compatible
/// endpoint carries it, so a client that keeps the call sends it back.
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
