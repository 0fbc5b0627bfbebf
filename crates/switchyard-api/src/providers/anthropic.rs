//! Anthropic Messages over SSE (SPEC R4.3); also MiniMax's Anthropic-compatible endpoint.
//!
//! Request: `POST {base_url}/v1/messages` with `x-api-key` and `anthropic-version: 2023-06-01`
//! (docs.claude.com/en/api/messages). Stream events (docs.claude.com "Streaming messages"):
//! `message_start` (usage), `content_block_start` / `_delta` / `_stop` for text, thinking,
//! redacted thinking and tool use, `message_delta` (stop reason, cumulative usage),
//! `message_stop`, `ping`, and `error`.
//!
//! Usage rule (SPEC R1.3): Anthropic's `input_tokens` is already the uncached part, so it is
//! passed through; `cache_creation_input_tokens` → `cache_write_tokens`,
//! `cache_read_input_tokens` → `cache_read_tokens`. `message_delta` usage is cumulative: its
//! non-null fields overwrite those of `message_start` (never added), and one usage chunk is
//! yielded when `message_delta` arrives.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::config::ResolvedMode;
use crate::error::ApiError;
use crate::handler::ApiHandler;
use crate::message::{Message, Role, ToolSpec};
use crate::stream::{ApiStream, ApiStreamChunk, Usage};
use crate::transport::{self, EventParser, RequestControls};
use crate::wire::sse::SseEvent;

/// `max_tokens` sent when the model's is unknown (SPEC R4.3).
const DEFAULT_MAX_TOKENS: u64 = 8192;
/// The smallest thinking budget the API accepts, in tokens.
const MIN_THINKING_BUDGET: u64 = 1024;
/// Beta header value enabling the 1M-token context window for `:1m` model ids.
const CONTEXT_1M_BETA: &str = "context-1m-2025-08-07";

/// A handler for the Anthropic Messages API.
pub struct AnthropicHandler {
    mode: ResolvedMode,
    controls: RequestControls,
}

impl AnthropicHandler {
    /// Builds the handler; no network request is made (SPEC R3.5).
    pub fn new(mode: ResolvedMode) -> Self {
        Self {
            mode,
            controls: RequestControls::default(),
        }
    }

    /// The model id sent on the wire (the `:1m` suffix is ours, not Anthropic's).
    fn wire_model_id(&self) -> &str {
        self.mode
            .model_id
            .strip_suffix(":1m")
            .unwrap_or(&self.mode.model_id)
    }

    /// The JSON request body (public within the crate for request-shape tests).
    pub(crate) fn request_body(
        &self,
        system_prompt: &str,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Value {
        let info = &self.mode.model_info;
        let max_tokens = if info.max_tokens > 0 {
            info.max_tokens
        } else {
            DEFAULT_MAX_TOKENS
        };
        let budget = self.mode.thinking_budget_tokens;
        let thinking =
            info.supports_reasoning && budget >= MIN_THINKING_BUDGET && budget < max_tokens;
        let cache = info.supports_prompt_cache;

        let mut system = json!({ "type": "text", "text": system_prompt });
        if cache {
            system["cache_control"] = json!({ "type": "ephemeral" });
        }
        // Prompt caching marks the last block of the last two user messages (SPEC R4.3).
        let user_indices: Vec<usize> = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::User)
            .map(|(i, _)| i)
            .collect();
        let cached_users: Vec<usize> = if cache {
            user_indices.iter().rev().take(2).copied().collect()
        } else {
            Vec::new()
        };
        let wire_messages: Vec<Value> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let mut content: Vec<Value> = m
                    .content
                    .iter()
                    .map(|b| serde_json::to_value(b).unwrap_or(Value::Null))
                    .collect();
                if cached_users.contains(&i) {
                    if let Some(last) = content.last_mut() {
                        last["cache_control"] = json!({ "type": "ephemeral" });
                    }
                }
                json!({ "role": m.role, "content": content })
            })
            .collect();

        let mut body = json!({
            "model": self.wire_model_id(),
            "max_tokens": max_tokens,
            "system": [system],
            "messages": wire_messages,
            "stream": true,
        });
        if thinking {
            body["thinking"] = json!({ "type": "enabled", "budget_tokens": budget });
        } else {
            body["temperature"] = json!(info.temperature.unwrap_or(0.0));
        }
        if !tools.is_empty() {
            body["tools"] = tools
                .iter()
                .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.input_schema }))
                .collect();
        }
        body
    }
}

impl ApiHandler for AnthropicHandler {
    fn create_message(
        &self,
        system_prompt: &str,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> ApiStream {
        let body = self.request_body(system_prompt, messages, tools);
        let mut request = transport::client()
            .post(format!("{}/v1/messages", self.mode.base_url))
            .header("anthropic-version", "2023-06-01")
            .header("accept", "text/event-stream")
            .header("content-type", "application/json");
        if let Some(key) = &self.mode.api_key {
            request = request.header("x-api-key", key.expose());
        }
        if self.mode.model_id.ends_with(":1m") {
            request = request.header("anthropic-beta", CONTEXT_1M_BETA);
        }
        let request = request.body(body.to_string());
        self.controls
            .post_sse(&self.mode, request, AnthropicParser::default())
    }

    handler_plumbing!();
}

/// Maps Anthropic stream events to chunks.
#[derive(Debug, Default)]
pub(crate) struct AnthropicParser {
    usage: Usage,
    /// Tool-use blocks by content-block index: (id, name).
    tool_blocks: HashMap<u64, (String, String)>,
    /// Tool-use blocks started but not yet stopped, with the argument bytes received.
    open_tool_blocks: HashMap<u64, usize>,
    stopped: bool,
}

fn opt_u64(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

impl AnthropicParser {
    fn merge_usage(&mut self, u: &Value) {
        if let Some(n) = opt_u64(u, "input_tokens") {
            self.usage.input_tokens = n;
        }
        if let Some(n) = opt_u64(u, "output_tokens") {
            self.usage.output_tokens = n;
        }
        if let Some(n) = opt_u64(u, "cache_creation_input_tokens") {
            self.usage.cache_write_tokens = Some(n);
        }
        if let Some(n) = opt_u64(u, "cache_read_input_tokens") {
            self.usage.cache_read_tokens = Some(n);
        }
    }
}

impl EventParser for AnthropicParser {
    type Event = SseEvent;

    fn on_event(&mut self, event: SseEvent, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        if event.data.is_empty() {
            return;
        }
        let v = match transport::parse_json(&event.data) {
            Ok(v) => v,
            Err(e) => return out.push(Err(*e)),
        };
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                if let Some(u) = v.pointer("/message/usage") {
                    self.merge_usage(u);
                }
            }
            "content_block_start" => {
                let index = opt_u64(&v, "index").unwrap_or(0);
                let block = &v["content_block"];
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = block["text"].as_str().filter(|t| !t.is_empty()) {
                            out.push(Ok(ApiStreamChunk::text(t)));
                        }
                    }
                    Some("thinking") => {
                        if let Some(t) = block["thinking"].as_str().filter(|t| !t.is_empty()) {
                            out.push(Ok(ApiStreamChunk::reasoning(t)));
                        }
                    }
                    Some("redacted_thinking") => {
                        let data = block["data"].as_str().unwrap_or("").to_owned();
                        out.push(Ok(ApiStreamChunk::Reasoning {
                            reasoning: String::new(),
                            details: None,
                            signature: None,
                            redacted_data: Some(data),
                            id: None,
                        }));
                    }
                    Some("tool_use") | Some("server_tool_use") => {
                        let id = block["id"].as_str().unwrap_or("").to_owned();
                        let name = block["name"].as_str().unwrap_or("").to_owned();
                        out.push(Ok(ApiStreamChunk::ToolCalls {
                            call_id: None,
                            id: id.clone(),
                            name: name.clone(),
                            arguments_delta: String::new(),
                        }));
                        self.tool_blocks.insert(index, (id, name));
                        self.open_tool_blocks.insert(index, 0);
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = opt_u64(&v, "index").unwrap_or(0);
                let delta = &v["delta"];
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        if let Some(t) = delta["text"].as_str().filter(|t| !t.is_empty()) {
                            out.push(Ok(ApiStreamChunk::text(t)));
                        }
                    }
                    Some("thinking_delta") => {
                        if let Some(t) = delta["thinking"].as_str().filter(|t| !t.is_empty()) {
                            out.push(Ok(ApiStreamChunk::reasoning(t)));
                        }
                    }
                    Some("signature_delta") => {
                        let sig = delta["signature"].as_str().unwrap_or("").to_owned();
                        out.push(Ok(ApiStreamChunk::Reasoning {
                            reasoning: String::new(),
                            details: None,
                            signature: Some(sig),
                            redacted_data: None,
                            id: None,
                        }));
                    }
                    Some("input_json_delta") => {
                        let part = delta["partial_json"].as_str().unwrap_or("");
                        if let Some(bytes) = self.open_tool_blocks.get_mut(&index) {
                            *bytes += part.len();
                        }
                        if let (false, Some((id, name))) =
                            (part.is_empty(), self.tool_blocks.get(&index))
                        {
                            out.push(Ok(ApiStreamChunk::ToolCalls {
                                call_id: None,
                                id: id.clone(),
                                name: name.clone(),
                                arguments_delta: part.to_owned(),
                            }));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = opt_u64(&v, "index").unwrap_or(0);
                self.open_tool_blocks.remove(&index);
            }
            "message_delta" => {
                // A tool call cut off by max_tokens is half a JSON object: never hand it over
                // as a call to run (shared/cases C22).
                let stop_reason = v.pointer("/delta/stop_reason").and_then(Value::as_str);
                if stop_reason == Some("max_tokens") {
                    if let Some((index, bytes)) = self.open_tool_blocks.iter().next() {
                        let name = self.tool_blocks.get(index).map_or("", |(_, n)| n.as_str());
                        return out.push(Err(ApiError::new(
                            crate::error::ErrorKind::Decode,
                            format!(
                                "the response hit its max_tokens limit while writing the arguments of tool `{name}` ({bytes} bytes received); the incomplete call was dropped"
                            ),
                        )));
                    }
                }
                if let Some(u) = v.get("usage") {
                    self.merge_usage(u);
                    out.push(Ok(ApiStreamChunk::Usage(self.usage.clone())));
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let e = &v["error"];
                let code = e.get("type").and_then(Value::as_str);
                let message = e.get("message").and_then(Value::as_str).unwrap_or("");
                let mut err = ApiError::from_provider(None, code, message, None);
                err.request_id = v
                    .get("request_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                out.push(Err(err));
            }
            _ => {} // ping, content_block_stop, and future event types.
        }
    }

    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        if !self.stopped {
            out.push(Err(ApiError::new(
                crate::error::ErrorKind::Network,
                "the stream ended before the response was complete (no message_stop)",
            )));
        }
    }
}
