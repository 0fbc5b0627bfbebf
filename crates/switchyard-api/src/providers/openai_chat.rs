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
//! - Request bodies, per provider and model family, are `chat_body.rs`'s (OpenRouter's and
//!   the Vercel AI Gateway's `gateway_body.rs`'s).
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

use serde_json::Value;

use crate::config::ApiKey;
use crate::error::body::error_from_event;
use crate::error::finish::finish_reason_error;
use crate::error::{ApiError, ErrorKind};
use crate::providers::chat_body;
use crate::providers::presets::ChatDialect;
use crate::providers::provider::{Prompt, Provider, parse_json};
use crate::providers::resolve::ResolvedMode;
use crate::providers::think_tags::{ThinkSplitter, ThinkTags};
use crate::stream::{ApiStreamChunk, Usage, generated_tool_call_id};
use crate::transport::{EventParser, WireRequest};
use crate::wire::sse::{SseEvent, SseEventRef};

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
        // The reference reads `<think>` anywhere in Fireworks' text (`fireworks.ts`); any
        // other model only when its answer opens with it.
        let think = if mode.provider_id == "fireworks" {
            ThinkTags::Anywhere
        } else {
            ThinkTags::Opening
        };
        ChatParser::new(mode.preset.dialect, think)
    }
}

/// A tool call being assembled from deltas.
#[derive(Debug, Default)]
struct PendingToolCall {
    /// The `index` its first fragment carried, if any.
    index: Option<u64>,
    /// The id the wire gave it, if any.
    wire_id: Option<String>,
    /// The id its chunks carry: the wire's, or one made up when the wire sent none.
    id: Option<String>,
    name: Option<String>,
    /// Every argument fragment so far (to tell a finished call from one still arriving).
    arguments: String,
    /// Argument fragments that arrived before the id and name were known.
    held: String,
    /// Gemini's thought signature (`extra_content.google.thought_signature`), not yet sent.
    signature: Option<String>,
}

impl PendingToolCall {
    /// The arguments so far are one whole JSON value: a fragment that names a tool again now
    /// starts another call.
    fn is_complete(&self) -> bool {
        serde_json::from_str::<serde::de::IgnoredAny>(&self.arguments).is_ok()
    }
}

/// Maps Chat Completions chunks to stream chunks.
#[derive(Debug)]
pub(crate) struct ChatParser {
    dialect: ChatDialect,
    /// Tool calls in the order they appeared.
    tool_calls: Vec<PendingToolCall>,
    think: ThinkSplitter,
    /// A finish reason arrived: the stream is complete.
    finished: bool,
    done: bool,
    /// The error a named finish reason ends the stream with (SPEC R7.5), held until the usage
    /// that may follow it has been yielded (those tokens were billed).
    failure: Option<ApiError>,
    /// The latest usage seen, yielded once when the stream ends (or before an error): a
    /// server that repeats its running totals in every chunk is counted once.
    usage: Option<Usage>,
}

impl ChatParser {
    /// A parser for `dialect`; `think` says where `<think>` in the text starts reasoning.
    pub(crate) fn new(dialect: ChatDialect, think: ThinkTags) -> Self {
        Self {
            dialect,
            tool_calls: Vec::new(),
            think: ThinkSplitter::new(think),
            finished: false,
            done: false,
            failure: None,
            usage: None,
        }
    }

    /// The call a tool-call fragment belongs to (issue 12 item 1): keyed by `index`, then by
    /// `id`, then "continue the open call".
    ///
    /// * A fragment with an `id` continues the call with that id; else it names the call at
    ///   its `index` that has no id yet; else it starts a new call — two calls that share an
    ///   index but carry different ids are two calls (Ollama, tests/cases C39).
    /// * A fragment without an id continues the call at its `index`; one that names a tool
    ///   again after that call's arguments are complete starts a new call (id-less calls
    ///   sharing an index). NVIDIA NIM repeats the name in every fragment of one call (H10).
    /// * A fragment with neither id nor name continues the most recent call, whatever its
    ///   index; a name without id at an unseen index starts a new call.
    fn slot(
        &mut self,
        index: Option<u64>,
        id: Option<&str>,
        name: Option<&str>,
        args: &str,
    ) -> usize {
        let calls = &mut self.tool_calls;
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

    fn on_tool_call_delta(&mut self, tc: &Value, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
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
        let index = tc.get("index").and_then(Value::as_u64);
        let at = self.slot(index, id, name, args);
        let call = &mut self.tool_calls[at];
        if call.name.is_none() {
            call.name = name.map(str::to_owned);
        }
        if let Some(sig) = non_empty(tc.pointer("/extra_content/google/thought_signature")) {
            call.signature.get_or_insert_with(|| sig.to_owned());
        }
        call.arguments.push_str(args);
        let Some(name) = call.name.clone() else {
            call.held.push_str(args);
            return;
        };
        // A call the wire sends without an id gets one made up (unique in the process).
        let id = call
            .id
            .get_or_insert_with(|| call.wire_id.clone().unwrap_or_else(generated_tool_call_id))
            .clone();
        let mut delta = std::mem::take(&mut call.held);
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
    /// Yields the held failure, if any: the stream ends with it.
    fn flush_failure(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        if let Some(e) = self.failure.take() {
            self.think.finish(out);
            out.push(Err(e));
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

impl ChatParser {
    /// Maps one chunk's reasoning, text, tool-call deltas, finish reason and usage.
    fn on_chunk(&mut self, c: ChunkView<'_>, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        if c.has_choice && self.failure.is_none() {
            self.on_reasoning(&c, out);
            match c.content {
                Content::Text(t) => self.think.push(t, out),
                Content::Parts(parts) => self.on_content_parts(parts, out),
                Content::None => {}
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
                Some(reason) => {
                    self.finished = true;
                    self.think.finish(out);
                    self.failure = finish_reason_error(reason);
                }
                None => {}
            }
        }
        if let Some(u) = c.usage.filter(|u| u.is_object()) {
            self.usage = Some(self.usage(u));
        }
    }

    /// Reasoning, from the first field that carries it: `reasoning_content` (DeepSeek, vLLM,
    /// Z.ai, xAI), `reasoning` (OpenRouter, Ollama), or the text of `reasoning_details`
    /// (OpenRouter). Some servers send the same text in two of them; it is shown once.
    /// `reasoning_details` also carry signatures and encrypted reasoning, kept for replay.
    fn on_reasoning(&self, c: &ChunkView<'_>, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        let details = c
            .reasoning_details
            .filter(|d| d.as_array().is_some_and(|a| !a.is_empty()));
        let reasoning_text = c
            .reasoning_content
            .filter(|s| !s.is_empty())
            .or(c.reasoning.filter(|s| !s.is_empty()));
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
                .or_else(|| d.get("summary"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            let signature = d
                .get("signature")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            let encrypted = (d.get("type").and_then(Value::as_str) == Some("reasoning.encrypted"))
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
    }

    /// `delta.content` as an array of typed parts (Mistral's Magistral, tests/cases C47):
    /// `text` parts are text, `thinking` parts (a string, or parts of their own) reasoning.
    fn on_content_parts(
        &mut self,
        parts: &[Value],
        out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
    ) {
        for part in parts {
            match part.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(t) = part.get("text").and_then(Value::as_str) {
                        self.think.push(t, out);
                    }
                }
                Some("thinking" | "reasoning") => {
                    let inner = part.get("thinking").or_else(|| part.get("reasoning"));
                    let text = match inner {
                        Some(Value::String(t)) => t.clone(),
                        Some(Value::Array(items)) => items
                            .iter()
                            .filter_map(|i| i.get("text").and_then(Value::as_str))
                            .collect(),
                        _ => String::new(),
                    };
                    if !text.is_empty() {
                        out.push(Ok(ApiStreamChunk::reasoning(text)));
                    }
                }
                _ => {} // images, references and future part types
            }
        }
    }
}

impl ChatParser {
    /// A chunk the fast reading leaves (an error, an odd shape): read as a `serde_json::Value`.
    fn on_general(&mut self, data: &str, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        let v = match parse_json(data) {
            Ok(v) => v,
            Err(e) => {
                self.flush_usage(out);
                return out.push(Err(*e));
            }
        };
        if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
            self.flush_usage(out);
            return out.push(Err(error_from_event(e)));
        }
        if v.get("object").and_then(Value::as_str) == Some("error") {
            // vLLM and similar servers: a bare error object as an event (tests/cases C31c).
            self.flush_usage(out);
            return out.push(Err(error_from_event(&v)));
        }
        let choice = v
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        if let Some(e) = choice.and_then(|c| c.get("error")).filter(|e| !e.is_null()) {
            // OpenRouter: an upstream failure mid-stream as `choices[0].error` (issue 12).
            self.flush_usage(out);
            return out.push(Err(error_from_event(e)));
        }
        let delta = choice.and_then(|c| c.get("delta"));
        let text = |key: &str| delta.and_then(|d| d.get(key)).and_then(Value::as_str);
        let content = match delta.and_then(|d| d.get("content")) {
            Some(Value::String(t)) => Content::Text(t),
            Some(Value::Array(parts)) => Content::Parts(parts),
            _ => Content::None,
        };
        self.on_chunk(
            ChunkView {
                has_choice: choice.is_some(),
                reasoning_content: text("reasoning_content"),
                reasoning: text("reasoning"),
                reasoning_details: delta.and_then(|d| d.get("reasoning_details")),
                content,
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
}

impl EventParser for ChatParser {
    type Event = SseEvent;

    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
    ) {
        let data = event.data.trim();
        if data.is_empty() {
            return;
        }
        if data == "[DONE]" {
            self.done = true;
            self.flush_usage(out);
            self.flush_failure(out);
            return;
        }
        // Fast path: the fields we read, borrowed from `data` (bench/README.md: building a
        // `Value` tree per event was most of the CPU). Errors, and shapes the fast reading
        // does not accept, take the general path (`on_general`) with the same mapping.
        if let Some(chunk) = wire::Chunk::read(data) {
            return self.on_chunk(chunk.view(), out);
        }
        self.on_general(data, out);
    }

    fn on_error(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        self.flush_usage(out);
    }

    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        self.think.finish(out);
        self.flush_usage(out);
        if self.failure.is_some() {
            self.flush_failure(out);
        } else if !self.done && !self.finished {
            out.push(Err(ApiError::new(
                ErrorKind::Network,
                "the stream ended before the response was complete (no finish_reason or [DONE])",
            )));
        }
    }
}

/// `delta.content`: a string, an array of typed parts, or nothing.
#[derive(Clone, Copy)]
enum Content<'a> {
    None,
    Text(&'a str),
    Parts(&'a [Value]),
}

/// The parts of one stream chunk the mapping reads, borrowed from where they were parsed:
/// the typed fast path ([`wire::Chunk`]) or a `serde_json::Value`.
struct ChunkView<'a> {
    /// `choices[0]` exists; the delta fields and `finish_reason` are read from it.
    has_choice: bool,
    reasoning_content: Option<&'a str>,
    reasoning: Option<&'a str>,
    reasoning_details: Option<&'a Value>,
    content: Content<'a>,
    tool_calls: &'a [Value],
    finish_reason: Option<&'a str>,
    usage: Option<&'a Value>,
}

/// The fast reading of a `chat.completion.chunk` ([`Scanner`](crate::providers::fast_json)):
/// only the fields the mapping reads, strings borrowed from the event when they have no
/// escapes, everything else skipped without being built. String fields accept any JSON value (a
/// non-string reads as absent, as the general path's `as_str` does). A chunk carrying an error,
/// of an odd shape (`choices` not an array, more than one choice) or that the scanner leaves
/// to serde is read by the general path.
mod wire {
    use std::borrow::Cow;

    use serde_json::Value;

    use super::{ChunkView, Content};
    use crate::providers::fast_json::Scanner;

    /// `delta.content`: a string, typed parts (tests/cases C47), or absent (any other value).
    #[derive(Default)]
    enum StrOrParts<'a> {
        #[default]
        Absent,
        Str(Cow<'a, str>),
        Parts(Vec<Value>),
    }

    #[derive(Default)]
    pub(super) struct Chunk<'a> {
        has_choice: bool,
        finish_reason: Option<Cow<'a, str>>,
        content: StrOrParts<'a>,
        reasoning_content: Option<Cow<'a, str>>,
        reasoning: Option<Cow<'a, str>>,
        reasoning_details: Option<Value>,
        tool_calls: Vec<Value>,
        usage: Option<Value>,
    }

    impl<'a> Chunk<'a> {
        /// Reads one chunk, or `None` when the general path must (see the module docs): a
        /// non-null `error` at the top or in `choices[0]`, or `object: "error"`, is its.
        pub(super) fn read(data: &'a str) -> Option<Self> {
            let mut chunk = Chunk::default();
            let names = ["choices", "usage", "error", "object"];
            Scanner::new(data).document(&names, |s, name| match name {
                "choices" => {
                    if s.null() {
                        return Some(());
                    }
                    s.array(|s, i| if i == 0 { chunk.read_choice(s) } else { None })
                }
                "usage" => {
                    chunk.usage = s.opt_value()?;
                    Some(())
                }
                "error" => s.null().then_some(()),
                _ => (s.maybe_str()?.as_deref() != Some("error")).then_some(()),
            })?;
            Some(chunk)
        }

        fn read_choice(&mut self, s: &mut Scanner<'a>) -> Option<()> {
            self.has_choice = true;
            let names = ["delta", "finish_reason", "error"];
            s.fields(&names, |s, name| match name {
                "delta" => {
                    if s.null() {
                        Some(())
                    } else {
                        self.read_delta(s)
                    }
                }
                "finish_reason" => {
                    self.finish_reason = s.maybe_str()?;
                    Some(())
                }
                _ => s.null().then_some(()),
            })
        }

        fn read_delta(&mut self, s: &mut Scanner<'a>) -> Option<()> {
            let names = [
                "content",
                "reasoning_content",
                "reasoning",
                "reasoning_details",
                "tool_calls",
            ];
            s.fields(&names, |s, name| {
                match name {
                    "content" if s.at_array() => self.content = StrOrParts::Parts(s.values()?),
                    "content" => {
                        self.content = s.maybe_str()?.map_or(StrOrParts::Absent, StrOrParts::Str);
                    }
                    "reasoning_content" => self.reasoning_content = s.maybe_str()?,
                    "reasoning" => self.reasoning = s.maybe_str()?,
                    "reasoning_details" => self.reasoning_details = s.opt_value()?,
                    _ => {
                        if !s.null() {
                            self.tool_calls = s.values()?;
                        }
                    }
                }
                Some(())
            })
        }

        pub(super) fn view(&'a self) -> ChunkView<'a> {
            ChunkView {
                has_choice: self.has_choice,
                reasoning_content: self.reasoning_content.as_deref(),
                reasoning: self.reasoning.as_deref(),
                reasoning_details: self.reasoning_details.as_ref(),
                content: match &self.content {
                    StrOrParts::Str(t) => Content::Text(t),
                    StrOrParts::Parts(parts) => Content::Parts(parts),
                    StrOrParts::Absent => Content::None,
                },
                tool_calls: &self.tool_calls,
                finish_reason: self.finish_reason.as_deref(),
                usage: self.usage.as_ref(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    impl crate::providers::agreement::TwoReadings for ChatParser {
        fn fresh() -> Self {
            ChatParser::new(ChatDialect::Generic, ThinkTags::Opening)
        }
        fn general(
            &mut self,
            event: SseEventRef<'_>,
            out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
        ) {
            let data = event.data.trim();
            if data == "[DONE]" {
                self.on_event(event, out);
            } else if !data.is_empty() {
                self.on_general(data, out);
            }
        }
    }

    /// The fast reading maps every recorded event, and every changed copy of it, exactly as
    /// the general `serde_json::Value` path does (issue 17).
    #[test]
    fn the_fast_reading_agrees_with_the_general_path_on_every_recorded_event() {
        crate::providers::agreement::assert_agreement_on_recorded_events::<ChatParser>();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// One byte changed in any recorded event (the events before it as recorded): the fast
        /// reading and the general path still map it alike.
        #[test]
        fn one_changed_byte_in_a_recorded_event_maps_alike(
            file: proptest::sample::Index,
            event: proptest::sample::Index,
            at: proptest::sample::Index,
            edit: u8,
        ) {
            crate::providers::agreement::agreement_after_one_changed_byte::<ChatParser>(
                file, event, at, edit,
            )?;
        }
    }

    fn map(data: &str) -> Vec<Result<ApiStreamChunk, ApiError>> {
        let mut parser = ChatParser::new(ChatDialect::Generic, ThinkTags::Opening);
        let mut out = Vec::new();
        parser.on_event(
            SseEventRef {
                event: "message",
                data,
                id: None,
                retry: None,
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

    /// Tool calls assembled as `(id, name, arguments)`, and every other item.
    type Streamed = (
        Vec<(String, String, String)>,
        Vec<Result<ApiStreamChunk, ApiError>>,
    );

    /// Feeds `events` (the `data` of each) through one parser and its end.
    fn stream(events: &[&str]) -> Streamed {
        let mut parser = ChatParser::new(ChatDialect::Generic, ThinkTags::Opening);
        let mut out = Vec::new();
        // As the transport does: the stream ends at its first error.
        for &data in events {
            parser.on_event(
                SseEventRef {
                    event: "message",
                    data,
                    id: None,
                    retry: None,
                },
                &mut out,
            );
            if out.iter().any(Result::is_err) {
                break;
            }
        }
        if !out.iter().any(Result::is_err) {
            parser.on_end(&mut out);
        }
        let mut calls = crate::stream::ToolCallAccumulator::default();
        let mut rest = Vec::new();
        for item in out {
            match item {
                Ok(chunk @ ApiStreamChunk::ToolCalls { .. }) => calls.push_chunk(&chunk),
                other => rest.push(other),
            }
        }
        let calls = calls
            .finish()
            .into_iter()
            .map(|c| (c.id, c.name, c.arguments))
            .collect();
        (calls, rest)
    }

    fn call(index: Option<u64>, id: Option<&str>, name: Option<&str>, args: &str) -> String {
        let mut tc = json!({"function": {"arguments": args}});
        if let Some(i) = index {
            tc["index"] = json!(i);
        }
        if let Some(id) = id {
            tc["id"] = json!(id);
        }
        if let Some(name) = name {
            tc["function"]["name"] = json!(name);
        }
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [tc]}}]}).to_string()
    }

    const STOP: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#;

    #[test]
    fn tool_call_fragments_are_keyed_by_index_then_id_then_the_open_call() {
        // OpenAI: one call by index, the id and name on the first fragment only.
        let (calls, _) = stream(&[
            &call(Some(0), Some("a"), Some("read"), "{\"p\":"),
            &call(Some(0), None, None, "1}"),
            &call(Some(1), Some("b"), Some("read"), "{}"),
            STOP,
        ]);
        assert_eq!(
            calls,
            [
                ("a".into(), "read".into(), "{\"p\":1}".into()),
                ("b".into(), "read".into(), "{}".into())
            ]
        );
        // C39: one index, two ids: two calls.
        let (calls, _) = stream(&[
            &call(Some(0), Some("a"), Some("w"), "{\"f\":1}"),
            &call(Some(0), Some("b"), Some("w"), "{\"f\":2}"),
            STOP,
        ]);
        assert_eq!(calls.len(), 2, "{calls:?}");
        // H11: no index at all, keyed by id.
        let (calls, _) = stream(&[
            &call(None, Some("a"), Some("read"), "{\"p\":1}"),
            &call(None, Some("b"), Some("read"), "{\"p\":2}"),
            STOP,
        ]);
        assert_eq!(calls.len(), 2, "{calls:?}");
        // A fragment with neither id nor name continues the most recent call, whatever its
        // index (here a server that counts continuation fragments from 1).
        let (calls, _) = stream(&[
            &call(Some(0), Some("a"), Some("read"), "{\"p\":"),
            &call(Some(1), None, None, "7}"),
            STOP,
        ]);
        assert_eq!(calls, [("a".into(), "read".into(), "{\"p\":7}".into())]);
        // H10: the name repeated in every fragment of one call is set once.
        let (calls, _) = stream(&[
            &call(Some(0), Some("a"), Some("read_file"), ""),
            &call(Some(0), None, Some("read_file"), "{\"p\":"),
            &call(Some(0), None, Some("read_file"), "1}"),
            &call(Some(0), None, Some("read_file"), ""),
            STOP,
        ]);
        assert_eq!(
            calls,
            [("a".into(), "read_file".into(), "{\"p\":1}".into())]
        );
        // Two id-less calls sharing index 0: the second starts when a name comes with new
        // arguments after the first's are complete; each gets a made-up id.
        let (calls, _) = stream(&[
            &call(Some(0), None, Some("get_weather"), "{\"city\":\"London\"}"),
            &call(Some(0), None, Some("get_weather"), "{\"city\":\"Paris\"}"),
            STOP,
        ]);
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_ne!(calls[0].0, calls[1].0);
        assert!(calls.iter().all(|c| c.0.starts_with("call_")), "{calls:?}");
        // An id that arrives after the name keeps the call it names together.
        let (calls, _) = stream(&[
            &call(Some(0), None, Some("read"), "{\"p\":"),
            &call(Some(0), Some("late"), None, "1}"),
            STOP,
        ]);
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0].2, "{\"p\":1}");
    }

    #[test]
    fn content_parts_reasoning_fields_and_think_tags() {
        let chunk = |delta: serde_json::Value| {
            json!({"choices": [{"index": 0, "delta": delta}]}).to_string()
        };
        let (_, items) = stream(&[
            // The same reasoning in two fields is shown once.
            &chunk(json!({"reasoning_content": "a", "reasoning": "a"})),
            // C47's typed parts, a thinking part holding a plain string, an unknown part.
            &chunk(
                json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "b"}]}]}),
            ),
            &chunk(
                json!({"content": [{"type": "thinking", "thinking": "c"}, {"type": "image_url"}]}),
            ),
            &chunk(json!({"content": [{"type": "text", "text": "d"}]})),
            &chunk(json!({"content": "e"})),
            STOP,
        ]);
        let shown: Vec<String> = items
            .iter()
            .map(|i| match i {
                Ok(ApiStreamChunk::Text { text, .. }) => format!("text {text}"),
                Ok(ApiStreamChunk::Reasoning { reasoning, .. }) => format!("reasoning {reasoning}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            shown,
            [
                "reasoning a",
                "reasoning b",
                "reasoning c",
                "text d",
                "text e"
            ]
        );
        // A stream that opens with `<think>`, the tag split across chunks.
        let (_, items) = stream(&[
            &chunk(json!({"content": "<thi"})),
            &chunk(json!({"content": "nk>plan</think>"})),
            &chunk(json!({"content": "\n\nanswer"})),
            STOP,
        ]);
        assert!(
            matches!(&items[..], [
                Ok(ApiStreamChunk::Reasoning { reasoning, .. }),
                Ok(ApiStreamChunk::Text { text, .. }),
            ] if reasoning == "plan" && text == "answer"),
            "{items:?}"
        );
    }

    #[test]
    fn named_finish_reasons_end_the_stream_after_their_usage() {
        let (_, items) = stream(&[
            r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}"#,
        ]);
        assert!(
            matches!(&items[..], [Ok(ApiStreamChunk::Text { .. }), Err(e)] if e.kind == ErrorKind::ContentBlocked && e.code.as_deref() == Some("content_filter")),
            "{items:?}"
        );
        // The usage in a later chunk comes first (it was billed), then the error.
        let (_, items) = stream(&[
            r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"model_context_window_exceeded"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2}}"#,
            "[DONE]",
        ]);
        assert!(
            matches!(&items[..], [Ok(ApiStreamChunk::Text { .. }), Ok(ApiStreamChunk::Usage(_)), Err(e)] if e.kind == ErrorKind::ContextWindowExceeded),
            "{items:?}"
        );
        // Near miss: `stop` and `length` (without a tool call) end the answer normally.
        for reason in ["stop", "length"] {
            let end =
                format!(r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#);
            let (_, items) =
                stream(&[r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#, &end]);
            assert!(items.iter().all(Result::is_ok), "{reason}: {items:?}");
        }
    }

    #[test]
    fn an_error_in_choices_or_with_its_status_in_a_field() {
        // OpenRouter: the upstream's error inside choices[0] mid-stream.
        let (_, items) = stream(&[
            r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error","error":{"code":400,"message":"This endpoint's maximum context length is 8192 tokens."}}]}"#,
        ]);
        assert!(
            matches!(items.last(), Some(Err(e)) if e.kind == ErrorKind::ContextWindowExceeded),
            "{items:?}"
        );
        // Vercel AI Gateway: the status in `statusCode`.
        let out = map(r#"{"error":{"message":"Too many requests, slow down","statusCode":429}}"#);
        assert!(
            matches!(&out[..], [Err(e)] if e.kind == ErrorKind::RateLimited && e.status == Some(429)),
            "{out:?}"
        );
    }

    #[test]
    fn reasoning_outside_completion_tokens_is_billed_output() {
        let usage = |u: &str| {
            let (_, items) = stream(&[&format!(r#"{{"choices":[],"usage":{u}}}"#), "[DONE]"]);
            match &items[..] {
                [Ok(ApiStreamChunk::Usage(u))] => (u.output_tokens, u.thoughts_tokens),
                other => panic!("{other:?}"),
            }
        };
        // C45 (xAI): 32 + 9 + 94 = 135: the reasoning is on top of the completion.
        assert_eq!(
            usage(
                r#"{"prompt_tokens":32,"completion_tokens":9,"total_tokens":135,"completion_tokens_details":{"reasoning_tokens":94}}"#
            ),
            (103, Some(94))
        );
        // OpenAI: the reasoning is inside completion_tokens (20 + 100 = 120).
        assert_eq!(
            usage(
                r#"{"prompt_tokens":20,"completion_tokens":100,"total_tokens":120,"completion_tokens_details":{"reasoning_tokens":64}}"#
            ),
            (100, Some(64))
        );
        // No total: the OpenAI convention.
        assert_eq!(
            usage(
                r#"{"prompt_tokens":20,"completion_tokens":10,"completion_tokens_details":{"reasoning_tokens":64}}"#
            ),
            (10, Some(64))
        );
    }
}
