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
//!   are cache reads (api-docs.deepseek.com guides/reasoning_model, guides/kv_cache).
//! - Request bodies, per provider and model family, are `chat_body.rs`'s (OpenRouter's and
//!   the Vercel AI Gateway's `gateway_body.rs`'s).
//!
//! Usage rule (SPEC R1.3): `prompt_tokens` includes cached tokens, so
//! `input_tokens = prompt_tokens − cached` where cached is
//! `prompt_tokens_details.cached_tokens` (OpenAI, OpenRouter) or `prompt_cache_hit_tokens`
//! (DeepSeek); `cache_read_tokens` = cached; `thoughts_tokens` =
//! `completion_tokens_details.reasoning_tokens` (already inside `output_tokens`).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::config::ApiKey;
use crate::error::{ApiError, ErrorKind};
use crate::providers::chat_body;
use crate::providers::presets::ChatDialect;
use crate::providers::provider::{Prompt, Provider, parse_json};
use crate::providers::resolve::ResolvedMode;
use crate::stream::{ApiStreamChunk, Usage};
use crate::transport::{EventParser, WireRequest};
use crate::wire::sse::SseEvent;

/// OpenAI Chat Completions and the OpenAI-compatible family.
pub(crate) struct OpenAiChat;

fn is_azure(base_url: &str) -> bool {
    base_url.contains(".openai.azure.com") || base_url.contains(".cognitiveservices.azure.com")
}

impl Provider for OpenAiChat {
    type Parser = ChatParser;

    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        let body = chat_body::request_body(mode, prompt);
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
}

impl ChatParser {
    pub(crate) fn new(dialect: ChatDialect) -> Self {
        Self {
            dialect,
            tool_calls: BTreeMap::new(),
            finished: false,
            done: false,
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

    fn usage(&self, u: &Value) -> Usage {
        let prompt = u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0);
        let cached = match self.dialect {
            ChatDialect::DeepSeek => u
                .get("prompt_cache_hit_tokens")
                .and_then(Value::as_u64)
                .or_else(|| {
                    u.pointer("/prompt_tokens_details/cached_tokens")
                        .and_then(Value::as_u64)
                }),
            _ => u
                .pointer("/prompt_tokens_details/cached_tokens")
                .and_then(Value::as_u64),
        };
        Usage {
            input_tokens: prompt.saturating_sub(cached.unwrap_or(0)),
            output_tokens: u
                .get("completion_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            cache_write_tokens: None,
            cache_read_tokens: cached,
            thoughts_tokens: u
                .pointer("/completion_tokens_details/reasoning_tokens")
                .and_then(Value::as_u64),
            total_cost_usd: u.get("cost").and_then(Value::as_f64),
            id: None,
        }
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
                    return out.push(Err(ApiError::new(
                        ErrorKind::Server,
                        "the provider ended the stream with an error (finish_reason \"error\")",
                    )));
                }
                Some("length") if !self.tool_calls.is_empty() => {
                    // A tool call cut off by the token limit is half a JSON object: never hand
                    // it over as a call to run (tests/cases C22).
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
            out.push(Ok(ApiStreamChunk::Usage(self.usage(u))));
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
            return;
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
            Err(e) => return out.push(Err(*e)),
        };
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return out.push(Err(in_stream_error(&v)));
        }
        if v.get("object").and_then(Value::as_str) == Some("error") {
            // vLLM and similar servers: a bare error object as an event (tests/cases C31c).
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

    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
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
}
