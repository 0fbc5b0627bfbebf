//! OpenAI Chat Completions over SSE, for OpenAI and every OpenAI-compatible provider
//! (SPEC R4.1, R4.2, R4.4, R4.5).
//!
//! Request: `POST {base_url}/chat/completions` with `stream: true` and
//! `stream_options.include_usage` (platform.openai.com/docs/api-reference/chat-streaming).
//! Stream: `data: {chat.completion.chunk}` lines, `data: [DONE]` at the end.
//!
//! Dialects, all handled here because they are small variations of one format:
//! - OpenRouter (R4.4): `: OPENROUTER PROCESSING` comments (dropped by the SSE decoder), a
//!   chunk carrying an `error` object or `finish_reason: "error"` is an error,
//!   `delta.reasoning` and `delta.reasoning_details[]` are reasoning, `usage.cost` is the cost
//!   (OpenRouter docs: api-reference/streaming, usage-accounting, reasoning-tokens).
//! - DeepSeek (R4.5): `delta.reasoning_content` is reasoning; `usage.prompt_cache_hit_tokens`
//!   are cache reads, the misses cache writes (api-docs.deepseek.com guides/reasoning_model,
//!   guides/kv_cache; see the usage rule).
//! - Reasoning-family model ids (o1/o3/o4/gpt-5, not "chat"): `developer` role, no
//!   temperature, `reasoning_effort`, `max_completion_tokens` (R4.5).
//!
//! Usage rule (SPEC R1.3): `prompt_tokens` includes cached tokens, so
//! `input_tokens = max(0, prompt_tokens − cache reads − cache writes)`, where
//! - cache reads are `prompt_tokens_details.cached_tokens` (OpenAI, OpenRouter), else
//!   `cache_read_input_tokens` (Anthropic-style gateways: LiteLLM, Vercel AI Gateway);
//! - cache writes are `prompt_tokens_details.cache_write_tokens` (OpenRouter, for models that
//!   bill them), else `cache_creation_input_tokens` (Anthropic-style gateways);
//! - DeepSeek: reads are `prompt_cache_hit_tokens`, and the misses (`prompt_cache_miss_tokens`,
//!   else `prompt_tokens − hits`) are reported as cache writes, as the reference does: its
//!   DeepSeek table prices input at $0 and misses as cache writes ("all input is either a
//!   cache hit or miss"), so the input tokens come to 0.
//!
//! `output_tokens` is `completion_tokens`, plus `completion_tokens_details.reasoning_tokens`
//! when the provider counts them outside it (xAI: `total_tokens` = prompt + completion +
//! reasoning, tests/cases C45); `thoughts_tokens` is the reasoning count as sent. The
//! provider's cost is `usage.cost` (plus the upstream cost of a bring-your-own-key request,
//! see `reported_cost`). A count sent as a negative number reads as 0. Usage is yielded once,
//! at the end of the stream (or just before an error), with the latest values: a server
//! that repeats running totals in every chunk is counted once.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::config::{ApiKey, ReasoningEffort};
use crate::error::{ApiError, ErrorKind};
use crate::message::{ContentBlock, Message, Role, ToolSpec};
use crate::providers::presets::ChatDialect;
use crate::providers::provider::{Prompt, Provider, parse_json};
use crate::providers::resolve::ResolvedMode;
use crate::stream::{ApiStreamChunk, Usage};
use crate::transport::{EventParser, WireRequest};
use crate::wire::sse::SseEvent;

/// OpenAI Chat Completions and the OpenAI-compatible family.
pub(crate) struct OpenAiChat;

/// True for OpenAI reasoning-family model ids: o1/o3/o4/gpt-5, but not "chat" variants
/// (SPEC R4.5). Provider prefixes such as `openai/` are ignored.
pub(crate) fn is_reasoning_family(model_id: &str) -> bool {
    let id = model_id
        .rsplit('/')
        .next()
        .unwrap_or(model_id)
        .to_ascii_lowercase();
    let family = ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|p| id.starts_with(p));
    family && !id.contains("chat")
}

fn is_azure(base_url: &str) -> bool {
    base_url.contains(".openai.azure.com") || base_url.contains(".cognitiveservices.azure.com")
}

/// The JSON request body.
pub(crate) fn request_body(mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let info = &mode.model_info;
    let reasoning = is_reasoning_family(&mode.model_id);
    let deepseek_reasoner = mode.model_id.contains("deepseek-reasoner");
    let system_role = if reasoning { "developer" } else { "system" };
    let mut wire = vec![json!({ "role": system_role, "content": prompt.system_prompt })];
    wire.extend(convert_messages(prompt.messages));

    let mut body = json!({
        "model": mode.model_id,
        "messages": wire,
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    if reasoning {
        if let Some(effort) = mode
            .reasoning_effort
            .filter(|e| *e != ReasoningEffort::None)
        {
            body["reasoning_effort"] = json!(effort.as_str());
        }
        if info.max_tokens > 0 {
            body["max_completion_tokens"] = json!(info.max_tokens);
        }
    } else {
        if !deepseek_reasoner {
            body["temperature"] = json!(info.temperature.unwrap_or(0.0));
        }
        if info.max_tokens > 0 {
            body["max_tokens"] = json!(info.max_tokens);
        }
    }
    if mode.preset.dialect == ChatDialect::OpenRouter {
        body["usage"] = json!({ "include": true });
        if mode.thinking_budget_tokens > 0 {
            body["reasoning"] = json!({ "max_tokens": mode.thinking_budget_tokens });
        }
    }
    if !prompt.tools.is_empty() {
        body["tools"] = function_tools(prompt.tools);
    }
    body
}

/// Tools in the Chat Completions shape, `[{type: function, function: {name, description,
/// parameters}}]` (also Ollama's `/api/chat`).
pub(crate) fn function_tools(tools: &[ToolSpec]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({ "type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.input_schema } })
        })
        .collect()
}

/// Converts Anthropic-shaped messages into Chat Completions messages: tool results become
/// `tool` messages (before the user's text), tool uses become `tool_calls`, images become
/// `image_url` data URLs; thinking blocks are not sent back.
fn convert_messages(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages {
        let mut texts: Vec<&str> = Vec::new();
        let mut images: Vec<Value> = Vec::new();
        let mut tool_calls: Vec<Value> = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::Text { text } => texts.push(text),
                ContentBlock::Image { source } => images.push(json!({
                    "type": "image_url",
                    "image_url": { "url": format!("data:{};base64,{}", source.media_type, source.data) },
                })),
                ContentBlock::ToolUse { id, name, input } => tool_calls.push(json!({
                    "id": id, "type": "function",
                    "function": { "name": name, "arguments": input.to_string() },
                })),
                ContentBlock::ToolResult { tool_use_id, content, .. } => {
                    out.push(json!({ "role": "tool", "tool_call_id": tool_use_id, "content": content }));
                }
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {}
            }
        }
        let text = texts.join("\n\n");
        match m.role {
            Role::User => {
                if images.is_empty() {
                    if !text.is_empty() {
                        out.push(json!({ "role": "user", "content": text }));
                    }
                } else {
                    let mut parts = vec![json!({ "type": "text", "text": text })];
                    parts.extend(images);
                    out.push(json!({ "role": "user", "content": parts }));
                }
            }
            Role::Assistant => {
                let mut msg = json!({ "role": "assistant", "content": text });
                if !tool_calls.is_empty() {
                    msg["tool_calls"] = Value::Array(tool_calls);
                }
                out.push(msg);
            }
        }
    }
    out
}

impl Provider for OpenAiChat {
    type Parser = ChatParser;

    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        let body = request_body(mode, prompt);
        let key = mode.api_key.as_ref().map(ApiKey::expose);
        let request = WireRequest::sse(format!("{}/chat/completions", mode.base_url), &body);
        let request = if is_azure(&mode.base_url) {
            request.header_opt("api-key", key)
        } else {
            request.bearer(key)
        };
        if mode.preset.dialect == ChatDialect::OpenRouter {
            request
                .header("HTTP-Referer", "https://github.com/switchyard")
                .header("X-Title", "Switchyard")
        } else {
            request
        }
    }

    fn parser(&self, mode: &ResolvedMode) -> ChatParser {
        ChatParser::new(mode.preset.dialect)
    }
}

/// A tool call being assembled from deltas, by its `index`.
#[derive(Debug, Default)]
struct PendingToolCall {
    id: Option<String>,
    name: Option<String>,
    /// Argument fragments that arrived before the id and name were known.
    held: String,
}

/// Maps Chat Completions chunks to stream chunks.
#[derive(Debug)]
pub(crate) struct ChatParser {
    dialect: ChatDialect,
    tool_calls: BTreeMap<u64, PendingToolCall>,
    finished: bool,
    done: bool,
    /// The latest usage seen, yielded once when the stream ends (or before an error): a
    /// server that repeats its running totals in every chunk is counted once.
    usage: Option<Usage>,
}

impl ChatParser {
    pub(crate) fn new(dialect: ChatDialect) -> Self {
        Self {
            dialect,
            tool_calls: BTreeMap::new(),
            finished: false,
            done: false,
            usage: None,
        }
    }

    fn on_tool_call_delta(&mut self, tc: &Value, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        let index = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
        let pending = self.tool_calls.entry(index).or_default();
        if let Some(id) = tc
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            pending.id.get_or_insert_with(|| id.to_owned());
        }
        let function = &tc["function"];
        if let Some(name) = function
            .get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            pending.name.get_or_insert_with(|| name.to_owned());
        }
        let args = function
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or("");
        match (&pending.id, &pending.name) {
            (Some(id), Some(name)) => {
                let mut delta = std::mem::take(&mut pending.held);
                delta.push_str(args);
                out.push(Ok(ApiStreamChunk::ToolCalls {
                    call_id: None,
                    id: id.clone(),
                    name: name.clone(),
                    arguments_delta: delta,
                }));
            }
            _ => pending.held.push_str(args),
        }
    }

    /// The usage of one `usage` object (see the module docs' usage rule).
    fn usage(&self, u: &Value) -> Usage {
        // A count the provider sent as a negative number (or not a number) reads as absent.
        let n = |pointer: &str| u.pointer(pointer).and_then(Value::as_u64);
        let prompt = n("/prompt_tokens").unwrap_or(0);
        let completion = n("/completion_tokens").unwrap_or(0);
        let reasoning = n("/completion_tokens_details/reasoning_tokens");
        let (cache_read, cache_write) = match self.dialect {
            ChatDialect::DeepSeek => {
                let hit = n("/prompt_cache_hit_tokens")
                    .or_else(|| n("/prompt_tokens_details/cached_tokens"));
                let miss = n("/prompt_cache_miss_tokens")
                    .unwrap_or_else(|| prompt.saturating_sub(hit.unwrap_or(0)));
                (hit, Some(miss))
            }
            _ => (
                n("/prompt_tokens_details/cached_tokens").or_else(|| n("/cache_read_input_tokens")),
                n("/prompt_tokens_details/cache_write_tokens")
                    .or_else(|| n("/cache_creation_input_tokens")),
            ),
        };
        let cached = cache_read
            .unwrap_or(0)
            .saturating_add(cache_write.unwrap_or(0));
        // xAI counts reasoning outside `completion_tokens` (its total is prompt + completion +
        // reasoning, tests/cases C45); OpenAI inside (total = prompt + completion).
        let reasoning_outside =
            reasoning.is_some_and(|r| r > 0 && n("/total_tokens") == Some(prompt + completion + r));
        Usage {
            input_tokens: prompt.saturating_sub(cached),
            output_tokens: completion
                + if reasoning_outside {
                    reasoning.unwrap_or(0)
                } else {
                    0
                },
            cache_write_tokens: cache_write,
            cache_read_tokens: cache_read,
            thoughts_tokens: reasoning,
            total_cost_usd: reported_cost(u),
            id: None,
        }
    }

    /// Pushes the usage held back (see `usage` on [`ChatParser`]), once.
    fn flush_usage(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        if let Some(u) = self.usage.take() {
            out.push(Ok(ApiStreamChunk::Usage(u)));
        }
    }
}

/// The cost a gateway reports (OpenRouter, Vercel AI Gateway): `usage.cost`, plus
/// `usage.cost_details.upstream_inference_cost` when the request ran on the user's own
/// provider key (bring-your-own-key), where `cost` is only the gateway's fee. The upstream cost
/// is added when `usage.is_byok` is true, or — without `is_byok` — when it exceeds `cost`: on
/// a request billed through the gateway `cost` already includes the upstream cost, and adding
/// it again doubles the bill (the reference always adds it; see lean-ctx#746,
/// freebuff#1164, Kilo-Org/kilocode#13841).
fn reported_cost(u: &Value) -> Option<f64> {
    let cost = u.get("cost").and_then(Value::as_f64).filter(|c| *c >= 0.0);
    let upstream = u
        .pointer("/cost_details/upstream_inference_cost")
        .and_then(Value::as_f64)
        .filter(|c| *c >= 0.0);
    let byok = match u.get("is_byok").and_then(Value::as_bool) {
        Some(b) => b,
        None => matches!((cost, upstream), (Some(c), Some(up)) if up > c),
    };
    match (cost, upstream) {
        (Some(c), Some(up)) if byok => Some(c + up),
        (None, Some(up)) => Some(up),
        (c, _) => c,
    }
}

fn in_stream_error(v: &Value) -> ApiError {
    let e = &v["error"];
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the provider reported an error mid-stream");
    let (status, code) = match e.get("code") {
        Some(Value::Number(n)) => (n.as_u64().and_then(|n| u16::try_from(n).ok()), None),
        Some(Value::String(s)) => (None, Some(s.as_str())),
        _ => (None, e.get("type").and_then(Value::as_str)),
    };
    let mut err = ApiError::from_provider(status, code, message, None);
    if err.kind == ErrorKind::InvalidRequest && status.is_none() && code.is_none() {
        err.kind = ErrorKind::Server;
    }
    err
}

impl ChatParser {
    /// Maps one chunk's reasoning, text, tool-call deltas, finish reason and usage.
    fn on_chunk(&mut self, c: ChunkView<'_>, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        if c.has_choice {
            if let Some(r) = c.reasoning_content.filter(|s| !s.is_empty()) {
                out.push(Ok(ApiStreamChunk::reasoning(r)));
            }
            let details = c
                .reasoning_details
                .filter(|d| d.as_array().is_some_and(|a| !a.is_empty()));
            let reasoning_text = c.reasoning.filter(|s| !s.is_empty());
            if let Some(r) = reasoning_text {
                out.push(Ok(ApiStreamChunk::Reasoning {
                    reasoning: r.to_owned(),
                    details: details.cloned(),
                    signature: None,
                    redacted_data: None,
                    id: None,
                }));
            }
            for d in details.and_then(Value::as_array).into_iter().flatten() {
                let text = d
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                let signature = d
                    .get("signature")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                let encrypted = (d.get("type").and_then(Value::as_str)
                    == Some("reasoning.encrypted"))
                .then(|| d.get("data").and_then(Value::as_str))
                .flatten();
                if reasoning_text.is_none() && text.is_some() {
                    out.push(Ok(ApiStreamChunk::Reasoning {
                        reasoning: text.unwrap_or_default().to_owned(),
                        details: Some(d.clone()),
                        signature: signature.map(str::to_owned),
                        redacted_data: None,
                        id: None,
                    }));
                } else if signature.is_some() || encrypted.is_some() {
                    out.push(Ok(ApiStreamChunk::Reasoning {
                        reasoning: String::new(),
                        details: Some(d.clone()),
                        signature: signature.map(str::to_owned),
                        redacted_data: encrypted.map(str::to_owned),
                        id: None,
                    }));
                }
            }
            if let Some(t) = c.content.filter(|s| !s.is_empty()) {
                out.push(Ok(ApiStreamChunk::text(t)));
            }
            for tc in c.tool_calls {
                self.on_tool_call_delta(tc, out);
            }
            match c.finish_reason {
                Some("error") => {
                    self.flush_usage(out);
                    return out.push(Err(ApiError::new(
                        ErrorKind::Server,
                        "the provider ended the stream with an error (finish_reason \"error\")",
                    )));
                }
                Some("length") if !self.tool_calls.is_empty() => {
                    // A tool call cut off by the token limit is half a JSON object: never hand
                    // it over as a call to run (tests/cases C22).
                    self.flush_usage(out);
                    return out.push(Err(ApiError::new(
                        ErrorKind::Decode,
                        "the response hit its max_tokens limit while writing a tool call's arguments; the incomplete call was dropped",
                    )));
                }
                Some(_) => self.finished = true,
                None => {}
            }
        }
        if let Some(u) = c.usage.filter(|u| u.is_object()) {
            self.usage = Some(self.usage(u));
        }
    }
}

impl EventParser for ChatParser {
    type Event = SseEvent;

    fn on_event(&mut self, event: SseEvent, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        let data = event.data.trim();
        if data.is_empty() {
            return;
        }
        if data == "[DONE]" {
            self.done = true;
            return self.flush_usage(out);
        }
        // Fast path: the fields we read, borrowed from `data` (bench/README.md: building a
        // `Value` tree per event was most of the CPU). Errors, and shapes the typed reading
        // does not accept, take the general path below with the same mapping.
        if let Ok(chunk) = serde_json::from_str::<wire::Chunk<'_>>(data) {
            if chunk.error.is_none() && chunk.object.as_deref() != Some("error") {
                return self.on_chunk(chunk.view(), out);
            }
        }
        let v = match parse_json(data) {
            Ok(v) => v,
            Err(e) => {
                self.flush_usage(out);
                return out.push(Err(*e));
            }
        };
        if v.get("error").is_some_and(|e| !e.is_null()) {
            self.flush_usage(out);
            return out.push(Err(in_stream_error(&v)));
        }
        if v.get("object").and_then(Value::as_str) == Some("error") {
            // vLLM and similar servers: a bare error object as an event (tests/cases C31c).
            self.flush_usage(out);
            let wrapped = serde_json::json!({ "error": v });
            return out.push(Err(in_stream_error(&wrapped)));
        }
        let choice = v
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        let delta = choice.and_then(|c| c.get("delta"));
        let text = |key: &str| delta.and_then(|d| d.get(key)).and_then(Value::as_str);
        self.on_chunk(
            ChunkView {
                has_choice: choice.is_some(),
                reasoning_content: text("reasoning_content"),
                reasoning: text("reasoning"),
                reasoning_details: delta.and_then(|d| d.get("reasoning_details")),
                content: text("content"),
                tool_calls: delta
                    .and_then(|d| d.get("tool_calls"))
                    .and_then(Value::as_array)
                    .map_or(&[], Vec::as_slice),
                finish_reason: choice
                    .and_then(|c| c.get("finish_reason"))
                    .and_then(Value::as_str),
                usage: v.get("usage"),
            },
            out,
        );
    }

    fn on_error(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        self.flush_usage(out);
    }

    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        self.flush_usage(out);
        if !self.done && !self.finished {
            out.push(Err(ApiError::new(
                ErrorKind::Network,
                "the stream ended before the response was complete (no finish_reason or [DONE])",
            )));
        }
    }
}

/// The parts of one stream chunk the mapping reads, borrowed from where they were parsed:
/// the typed fast path ([`wire::Chunk`]) or a `serde_json::Value`.
struct ChunkView<'a> {
    /// `choices[0]` exists; the delta fields and `finish_reason` are read from it.
    has_choice: bool,
    reasoning_content: Option<&'a str>,
    reasoning: Option<&'a str>,
    reasoning_details: Option<&'a Value>,
    content: Option<&'a str>,
    tool_calls: &'a [Value],
    finish_reason: Option<&'a str>,
    usage: Option<&'a Value>,
}

/// The typed reading of a `chat.completion.chunk`: only the fields the mapping reads, strings
/// borrowed from the event when they have no escapes, everything else skipped without being
/// built. String fields accept any JSON value (a non-string reads as absent, as the general
/// path's `as_str` does), so only a chunk of an odd shape (`choices` not an array, say) falls
/// back to the general path.
mod wire {
    use serde::Deserialize;
    use serde::de::IgnoredAny;
    use serde_json::Value;

    use super::ChunkView;
    use crate::providers::fast_json::MaybeStr;

    #[derive(Deserialize)]
    pub(super) struct Chunk<'a> {
        #[serde(default, borrow)]
        choices: Option<Vec<Choice<'a>>>,
        #[serde(default)]
        usage: Option<Value>,
        #[serde(default)]
        pub(super) error: Option<IgnoredAny>,
        #[serde(default, borrow)]
        pub(super) object: MaybeStr<'a>,
    }

    #[derive(Deserialize)]
    struct Choice<'a> {
        #[serde(default, borrow)]
        delta: Option<Delta<'a>>,
        #[serde(default, borrow)]
        finish_reason: MaybeStr<'a>,
    }

    #[derive(Deserialize)]
    struct Delta<'a> {
        #[serde(default, borrow)]
        content: MaybeStr<'a>,
        #[serde(default, borrow)]
        reasoning_content: MaybeStr<'a>,
        #[serde(default, borrow)]
        reasoning: MaybeStr<'a>,
        #[serde(default)]
        reasoning_details: Option<Value>,
        #[serde(default)]
        tool_calls: Option<Vec<Value>>,
    }

    impl<'a> Chunk<'a> {
        pub(super) fn view(&'a self) -> ChunkView<'a> {
            let choice = self.choices.as_deref().and_then(<[Choice<'a>]>::first);
            let delta = choice.and_then(|c| c.delta.as_ref());
            ChunkView {
                has_choice: choice.is_some(),
                reasoning_content: delta.and_then(|d| d.reasoning_content.as_deref()),
                reasoning: delta.and_then(|d| d.reasoning.as_deref()),
                reasoning_details: delta.and_then(|d| d.reasoning_details.as_ref()),
                content: delta.and_then(|d| d.content.as_deref()),
                tool_calls: delta
                    .and_then(|d| d.tool_calls.as_deref())
                    .unwrap_or_default(),
                finish_reason: choice.and_then(|c| c.finish_reason.as_deref()),
                usage: self.usage.as_ref(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(data: &str) -> Vec<Result<ApiStreamChunk, ApiError>> {
        let mut parser = ChatParser::new(ChatDialect::Generic);
        let mut out = Vec::new();
        parser.on_event(
            SseEvent {
                data: data.to_owned(),
                ..SseEvent::default()
            },
            &mut out,
        );
        out
    }

    fn texts(out: &[Result<ApiStreamChunk, ApiError>]) -> Vec<String> {
        out.iter()
            .map(|c| match c {
                Ok(ApiStreamChunk::Text { text, .. }) => text.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn the_typed_reading_keeps_escaped_and_borrowed_text_alike() {
        let out = map(r#"{"choices":[{"index":0,"delta":{"content":"a\nb \"q\" \u00e9"}}]}"#);
        assert_eq!(texts(&out), ["a\nb \"q\" \u{e9}"]);
        let out = map(r#"{"choices":[{"index":0,"delta":{"content":"plain"}}]}"#);
        assert_eq!(texts(&out), ["plain"]);
    }

    #[test]
    fn odd_shapes_read_as_the_general_path_reads_them() {
        // A non-string content is absent, as `as_str` reads it; never an error.
        assert!(map(r#"{"choices":[{"delta":{"content":["x",{"y":1}],"role":7}}]}"#).is_empty());
        assert!(map(r#"{"choices":[{"delta":{"content":null},"finish_reason":null}]}"#).is_empty());
        // `choices` that is not an array: the general path, which finds no choice.
        assert!(map(r#"{"choices":"weird","x":[1,2]}"#).is_empty());
        assert!(map(r#"{"choices":[{"delta":null}]}"#).is_empty());
        // Broken JSON is still a decode error.
        let out = map(r#"{"choices":[{"delta":{"content":"x"}"#);
        assert!(
            matches!(&out[..], [Err(e)] if e.kind == ErrorKind::Decode),
            "{out:?}"
        );
        // An error object still wins over the fast path.
        let out = map(r#"{"error":{"message":"boom","code":502},"choices":[]}"#);
        assert!(matches!(&out[..], [Err(_)]), "{out:?}");
    }

    #[test]
    fn reasoning_family_ids() {
        for id in [
            "o1",
            "o3-mini",
            "o4-mini",
            "gpt-5",
            "gpt-5-mini",
            "openai/o3",
        ] {
            assert!(is_reasoning_family(id), "{id}");
        }
        for id in [
            "gpt-4o",
            "gpt-5-chat-latest",
            "gpt-4.1",
            "deepseek-chat",
            "smollm2",
        ] {
            assert!(!is_reasoning_family(id), "{id}");
        }
    }
}
