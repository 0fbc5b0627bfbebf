//! Anthropic Messages over SSE, also MiniMax's compatible endpoint: body and stream mapper.
//! Spec: R4.3, R1.3.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::cache_hints::{CacheAt, CacheHints};
use crate::config::ApiKey;
use crate::error::finish::finish_reason_error;
use crate::error::{ApiError, ErrorKind};
use crate::handler::{ForwardDialect, RequestOverrides};
use crate::message::{ContentBlock, Message, Role, ToolSpec};
use crate::providers::mapper::{Chunks, require_end};
use crate::providers::overrides;
use crate::providers::provider::{Prompt, Provider, parse_json};
use crate::providers::resolve::ResolvedMode;
use crate::stream::{ApiStreamChunk, Usage};
use crate::transport::{EventParser, WireRequest};
use crate::wire::sse::{SseEvent, SseEventRef};

/// The `max_tokens` sent when the model's is unknown, also Bedrock's `maxTokens`.
pub(crate) const DEFAULT_MAX_TOKENS: u64 = 8192;
/// The smallest thinking budget Claude accepts, in tokens, here and on Bedrock.
pub(crate) const MIN_THINKING_BUDGET: u64 = 1024;
pub(crate) const CONTEXT_1M_BETA: &str = "context-1m-2025-08-07";

pub(crate) struct Anthropic;

/// The model id sent on the wire; the `:1m` suffix is ours, not Anthropic's.
pub(crate) fn wire_model_id(model_id: &str) -> &str {
    model_id.strip_suffix(":1m").unwrap_or(model_id)
}

/// The `anthropic-beta` header a model id asks for: the 1M-token context window for `:1m` ids.
pub(crate) fn beta_header(model_id: &str) -> Option<&'static str> {
    model_id.ends_with(":1m").then_some(CONTEXT_1M_BETA)
}

/// The indices of the last two user messages, last first, where prompt caching puts its marks.
pub(crate) fn cached_user_messages(messages: &[Message], caching: bool) -> Vec<usize> {
    if !caching {
        return Vec::new();
    }
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
        .map(|(i, _)| i)
        .rev()
        .take(2)
        .collect()
}

/// `messages` mapped one by one, `map` told whether caching marks the message; `None` drops it.
pub(crate) fn marked_messages<'a>(
    messages: &'a [Message],
    caching: bool,
    mut map: impl FnMut(&'a Message, bool) -> Option<Value>,
) -> Vec<Value> {
    let marked = cached_user_messages(messages, caching);
    messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| map(m, marked.contains(&i)))
        .collect()
}

/// One content block as Anthropic takes it, without a tool use's Gemini thought signature.
fn wire_block(b: &ContentBlock) -> Value {
    let mut block = serde_json::to_value(b).unwrap_or(Value::Null);
    if let (ContentBlock::ToolUse { .. }, Some(fields)) = (b, block.as_object_mut()) {
        fields.remove("signature");
    }
    block
}

/// `messages` as Anthropic takes them, with the client's cache marks where it put them, or else
/// with the layer's on the last two user messages when `cache`. Unsigned thinking, another
/// provider's reasoning or what a Chat client echoes back, is left out, since Anthropic refuses
/// a signature that does not verify.
fn wire_messages(messages: &[Message], cache: bool, hints: &CacheHints) -> Vec<Value> {
    let layer = cached_user_messages(messages, cache && !hints.placed());
    let ephemeral = json!({ "type": "ephemeral" });
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let mut content: Vec<Value> = Vec::with_capacity(m.content.len());
        for (j, b) in m.content.iter().enumerate() {
            if !matches!(b, ContentBlock::Thinking { signature, .. } if signature.is_empty()) {
                content.push(wire_block(b));
            }
            // A mark on a block left out moves to the block before it, which ends the same prefix.
            let at = CacheAt::Block {
                message: i,
                block: j,
            };
            if let (Some(mark), Some(last)) = (hints.at(&at), content.last_mut()) {
                last["cache_control"] = mark.cache_control();
            }
        }
        if content.is_empty() {
            continue;
        }
        if layer.contains(&i) {
            if let Some(last) = content.last_mut() {
                last["cache_control"] = ephemeral.clone();
            }
        }
        out.push(json!({ "role": m.role, "content": content }));
    }
    out
}

/// The `cache_control` the system prompt gets: the client's mark, or the layer's when `cache`
/// and the client placed none.
pub(crate) fn system_mark(hints: &CacheHints, cache: bool) -> Option<Value> {
    match hints.at(&CacheAt::System) {
        Some(mark) => Some(mark.cache_control()),
        None if cache && !hints.placed() => Some(json!({ "type": "ephemeral" })),
        None => None,
    }
}

/// The tools as Anthropic takes them, with the client's cache marks.
fn wire_tools(tools: &[ToolSpec], hints: &CacheHints) -> Vec<Value> {
    let mut out: Vec<Value> = (tools.iter())
        .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.input_schema }))
        .collect();
    for mark in &hints.marks {
        if let (CacheAt::Tool(i), cache_control) = (&mark.at, mark.cache_control()) {
            if let Some(tool) = out.get_mut(*i) {
                tool["cache_control"] = cache_control;
            }
        }
    }
    out
}

/// The JSON request body, also Vertex's without `model`.
pub(crate) fn request_body(mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let info = &mode.model_info;
    let max_tokens =
        (prompt.overrides.max_tokens).unwrap_or(info.max_tokens_or(DEFAULT_MAX_TOKENS));
    let budget = mode.thinking_budget_tokens;
    let thinking = info.supports_reasoning && budget >= MIN_THINKING_BUDGET && budget < max_tokens;
    let cache = info.supports_prompt_cache;

    let hints = &prompt.overrides.cache;
    let mut system = json!({ "type": "text", "text": prompt.system_prompt });
    if let Some(mark) = system_mark(hints, cache) {
        system["cache_control"] = mark;
    }
    let wire_messages = wire_messages(prompt.messages, cache, hints);

    let mut body = json!({
        "model": wire_model_id(&mode.model_id),
        "max_tokens": max_tokens,
        "messages": wire_messages,
        "stream": true,
    });
    // A blank system text block is a 400; a gateway client may send no system message.
    if !prompt.system_prompt.trim().is_empty() {
        body["system"] = json!([system]);
    }
    if thinking {
        body["thinking"] = json!({ "type": "enabled", "budget_tokens": budget });
    } else if prompt.overrides.top_p.is_none() {
        // Not with a caller's `top_p` alone: Claude Sonnet 4.5 and later refuse both with a 400.
        body["temperature"] = json!(info.temperature.unwrap_or(0.0));
    }
    if !prompt.tools.is_empty() {
        body["tools"] = wire_tools(prompt.tools, hints).into();
    }
    apply_overrides(&mut body, prompt.overrides, thinking);
    body
}

/// A request's overrides in an Anthropic body, also SAP AI Core's: no temperature with thinking,
/// `top_p` then only from 0.95, and no forced `tool_choice`.
pub(crate) fn apply_overrides(body: &mut Value, o: &RequestOverrides, thinking: bool) {
    let Some(map) = body.as_object_mut() else {
        return;
    };
    overrides::apply_sampling(map, o, overrides::ANTHROPIC, !thinking);
    // Claude Sonnet 4.5 and later refuse the two together with a 400, and Anthropic advises
    // setting one: the temperature stays and `top_p` is reported dropped.
    if map.contains_key("temperature") {
        map.remove("top_p");
    }
    if thinking {
        overrides::thinking_top_p(map, o, overrides::ANTHROPIC.top_p);
    }
    if let (Some(choice), true) = (&o.tool_choice, map.contains_key("tools")) {
        if let Some(v) = overrides::anthropic_tool_choice(choice, thinking) {
            map.insert("tool_choice".into(), v);
        }
    }
}

impl Provider for Anthropic {
    type Parser = AnthropicParser;

    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        let body = request_body(mode, prompt);
        WireRequest::sse(format!("{}/v1/messages", mode.base_url), &body)
            .header("anthropic-version", "2023-06-01")
            .header_opt("x-api-key", mode.api_key.as_ref().map(ApiKey::expose))
            .header_opt("anthropic-beta", beta_header(&mode.model_id))
    }

    fn parser(&self, _mode: &ResolvedMode) -> AnthropicParser {
        AnthropicParser::default()
    }

    fn forwards(&self, _mode: &ResolvedMode) -> Option<ForwardDialect> {
        Some(ForwardDialect::AnthropicMessages)
    }
}

#[derive(Debug, Default)]
pub(crate) struct AnthropicParser {
    usage: Usage,
    /// Tool-use blocks by content-block index, with their id and name.
    tool_blocks: HashMap<u64, (String, String)>,
    /// Tool-use blocks started but not yet stopped, with the argument bytes received.
    open_tool_blocks: HashMap<u64, usize>,
    /// The whole `input` a tool-use block's start carried, its arguments at the stop unless deltas
    /// came, as from a relay that builds the stream from a complete answer.
    start_inputs: HashMap<u64, String>,
    stopped: bool,
}

fn opt_u64(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// Takes an Anthropic `usage` object's non-null counts into `usage`, overwriting, since
/// `message_delta`'s are cumulative. `input_tokens` is already the uncached part.
pub(crate) fn merge_usage(usage: &mut Usage, u: &Value) {
    if let Some(n) = opt_u64(u, "input_tokens") {
        usage.input_tokens = n;
    }
    if let Some(n) = opt_u64(u, "output_tokens") {
        usage.output_tokens = n;
    }
    if let Some(n) = opt_u64(u, "cache_creation_input_tokens") {
        usage.cache_write_tokens = Some(n);
    }
    if let Some(n) = opt_u64(u, "cache_read_input_tokens") {
        usage.cache_read_tokens = Some(n);
    }
}

impl AnthropicParser {
    fn merge_usage(&mut self, u: &Value) {
        merge_usage(&mut self.usage, u);
    }
}

/// The fields of a `content_block_delta` event, borrowed from where they were parsed.
struct DeltaView<'a> {
    index: u64,
    kind: Option<&'a str>,
    text: Option<&'a str>,
    thinking: Option<&'a str>,
    signature: Option<&'a str>,
    partial_json: Option<&'a str>,
}

impl AnthropicParser {
    fn on_delta(&mut self, d: DeltaView<'_>, out: &mut Chunks) {
        match d.kind {
            Some("text_delta") => {
                if let Some(t) = d.text.filter(|t| !t.is_empty()) {
                    out.push(Ok(ApiStreamChunk::text(t)));
                }
            }
            Some("thinking_delta") => {
                if let Some(t) = d.thinking.filter(|t| !t.is_empty()) {
                    out.push(Ok(ApiStreamChunk::reasoning(t)));
                }
            }
            Some("signature_delta") => {
                out.push(Ok(ApiStreamChunk::reasoning_signature(
                    d.signature.unwrap_or(""),
                )));
            }
            Some("input_json_delta") => {
                let part = d.partial_json.unwrap_or("");
                // Only an open block takes a fragment; a stray delta after its stop is dropped.
                let Some(bytes) = self.open_tool_blocks.get_mut(&d.index) else {
                    return;
                };
                *bytes = bytes.saturating_add(part.len());
                if !part.is_empty() {
                    // The deltas are the arguments: the start's input was a placeholder.
                    self.start_inputs.remove(&d.index);
                }
                if let (false, Some((id, name))) = (part.is_empty(), self.tool_blocks.get(&d.index))
                {
                    out.push(Ok(ApiStreamChunk::tool_call(
                        id.clone(),
                        name.clone(),
                        part,
                    )));
                }
            }
            _ => {}
        }
    }
}

/// The fast reading of a `content_block_delta` event, strings borrowed when they have no escapes.
mod wire {
    use std::borrow::Cow;

    use super::DeltaView;
    use crate::providers::fast_json::Scanner;

    #[derive(Default)]
    pub(super) struct BlockDelta<'a> {
        index: Option<u64>,
        kind: Option<Cow<'a, str>>,
        text: Option<Cow<'a, str>>,
        thinking: Option<Cow<'a, str>>,
        signature: Option<Cow<'a, str>>,
        partial_json: Option<Cow<'a, str>>,
    }

    impl<'a> BlockDelta<'a> {
        /// Reads a `content_block_delta` event; `None` for anything the general path must read.
        pub(super) fn read(data: &'a str) -> Option<Self> {
            let mut d = BlockDelta::default();
            let mut is_delta = false;
            Scanner::new(data).document(&["type", "index", "delta"], |s, name| match name {
                "type" => {
                    is_delta = s.maybe_str()?.as_deref() == Some("content_block_delta");
                    // Any other event is read by the general path: no need to read on.
                    is_delta.then_some(())
                }
                "index" => {
                    d.index = s.opt_u64()?;
                    Some(())
                }
                _ => {
                    if s.null() {
                        Some(())
                    } else {
                        d.read_delta(s)
                    }
                }
            })?;
            is_delta.then_some(d)
        }

        fn read_delta(&mut self, s: &mut Scanner<'a>) -> Option<()> {
            let names = ["type", "text", "thinking", "signature", "partial_json"];
            s.fields(&names, |s, name| {
                let field = match name {
                    "type" => &mut self.kind,
                    "text" => &mut self.text,
                    "thinking" => &mut self.thinking,
                    "signature" => &mut self.signature,
                    _ => &mut self.partial_json,
                };
                *field = s.maybe_str()?;
                Some(())
            })
        }

        pub(super) fn view(&'a self) -> DeltaView<'a> {
            DeltaView {
                index: self.index.unwrap_or(0),
                kind: self.kind.as_deref(),
                text: self.text.as_deref(),
                thinking: self.thinking.as_deref(),
                signature: self.signature.as_deref(),
                partial_json: self.partial_json.as_deref(),
            }
        }
    }
}

impl AnthropicParser {
    /// Reads an event the fast reading leaves as a `serde_json::Value`.
    fn on_general(&mut self, event: SseEventRef<'_>, out: &mut Chunks) {
        let v = match parse_json(event.data) {
            Ok(v) => v,
            Err(e) => return out.push(Err(*e)),
        };
        let index = || opt_u64(&v, "index").unwrap_or(0);
        match v.get("type").and_then(Value::as_str).unwrap_or(event.event) {
            "message_start" => {
                if let Some(u) = v.pointer("/message/usage") {
                    self.merge_usage(u);
                }
            }
            "content_block_start" => self.on_block_start(index(), &v["content_block"], out),
            "content_block_delta" => {
                let delta = &v["delta"];
                let text = |key: &str| delta.get(key).and_then(Value::as_str);
                let view = DeltaView {
                    index: index(),
                    kind: text("type"),
                    text: text("text"),
                    thinking: text("thinking"),
                    signature: text("signature"),
                    partial_json: text("partial_json"),
                };
                self.on_delta(view, out);
            }
            "content_block_stop" => self.on_block_stop(index(), out),
            "message_delta" => self.on_message_delta(&v, out),
            "message_stop" => self.stopped = true,
            "error" => out.push(Err(event_error(&v))),
            _ => {} // ping, and future event types.
        }
    }

    /// `content_block_start`: first text or thinking, redacted thinking, or a tool use's id and
    /// name.
    #[inline]
    fn on_block_start(&mut self, index: u64, block: &Value, out: &mut Chunks) {
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
                let data = block["data"].as_str().unwrap_or("");
                out.push(Ok(ApiStreamChunk::redacted_reasoning(data)));
            }
            Some("tool_use" | "server_tool_use") => {
                let id = block["id"].as_str().unwrap_or("").to_owned();
                let name = block["name"].as_str().unwrap_or("").to_owned();
                out.push(Ok(ApiStreamChunk::tool_call(
                    id.clone(),
                    name.clone(),
                    String::new(),
                )));
                if let Some(input) = block
                    .get("input")
                    .and_then(Value::as_object)
                    .filter(|o| !o.is_empty())
                {
                    self.start_inputs
                        .insert(index, Value::Object(input.clone()).to_string());
                }
                self.tool_blocks.insert(index, (id, name));
                self.open_tool_blocks.insert(index, 0);
            }
            _ => {}
        }
    }

    /// `content_block_stop`: a tool use with a whole start input and no deltas hands it over.
    fn on_block_stop(&mut self, index: u64, out: &mut Chunks) {
        self.open_tool_blocks.remove(&index);
        if let (Some(input), Some((id, name))) = (
            self.start_inputs.remove(&index),
            self.tool_blocks.get(&index),
        ) {
            out.push(Ok(ApiStreamChunk::tool_call(
                id.clone(),
                name.clone(),
                input,
            )));
        }
    }

    /// `message_delta`: the stop reason and the cumulative usage.
    /// Spec: R7.5.
    #[inline]
    fn on_message_delta(&mut self, v: &Value, out: &mut Chunks) {
        // A tool call cut off by max_tokens is half a JSON object: never hand it over to run.
        let stop_reason = v.pointer("/delta/stop_reason").and_then(Value::as_str);
        if stop_reason == Some("max_tokens") {
            // The lowest open index, so the same events give the same error.
            let first_open = self
                .open_tool_blocks
                .iter()
                .min_by_key(|(index, _)| **index);
            if let Some((index, bytes)) = first_open {
                let name = self.tool_blocks.get(index).map_or("", |(_, n)| n.as_str());
                return out.push(Err(ApiError::new(
                    ErrorKind::Decode,
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
        if stop_reason == Some("max_tokens") {
            out.push(Ok(ApiStreamChunk::max_tokens()));
        }
        // `refusal` and the like: a named error after the billed usage.
        if let Some(e) = stop_reason.and_then(finish_reason_error) {
            out.push(Err(e));
        }
    }
}

fn event_error(v: &Value) -> ApiError {
    let e = &v["error"];
    let code = e.get("type").and_then(Value::as_str);
    let message = e.get("message").and_then(Value::as_str).unwrap_or("");
    let mut err = ApiError::from_provider(None, code, message, None);
    err.request_id = v
        .get("request_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    err
}

impl EventParser for AnthropicParser {
    type Event = SseEvent;

    fn on_event(&mut self, event: SseEventRef<'_>, out: &mut Chunks) {
        if event.data.is_empty() {
            return;
        }
        // Fast path: a `Value` tree per `content_block_delta` was most of the CPU.
        if let Some(d) = wire::BlockDelta::read(event.data) {
            return self.on_delta(d.view(), out);
        }
        self.on_general(event, out);
    }

    fn on_end(&mut self, out: &mut Chunks) {
        require_end(self.stopped, "message_stop", out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::mapper::testing::sse;

    impl crate::providers::agreement::TwoReadings for AnthropicParser {
        fn fresh() -> Self {
            AnthropicParser::default()
        }
        fn general(
            &mut self,
            event: SseEventRef<'_>,
            out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
        ) {
            if !event.data.is_empty() {
                self.on_general(event, out);
            }
        }
    }

    crate::providers::mapper::testing::agreement_tests!(AnthropicParser);

    fn thinking(text: &str, signature: &str) -> ContentBlock {
        ContentBlock::Thinking {
            thinking: text.into(),
            signature: signature.into(),
        }
    }

    /// Thinking without a signature (Cline's echoed `reasoning_content` through the gateway's
    /// Chat Completions ingress, another provider's reasoning) is not sent: Anthropic refuses
    /// it. Signed thinking is sent as it came, and a message of unsigned thinking alone goes.
    #[test]
    fn unsigned_thinking_is_left_out_and_signed_thinking_kept() {
        let call = ContentBlock::ToolUse {
            id: "call_1".into(),
            name: "editor".into(),
            input: json!({"path": "hello.txt", "new_text": "hi"}),
            signature: None,
        };
        let messages = [
            Message::user_text("create hello.txt containing hi"),
            Message {
                role: Role::Assistant,
                content: vec![thinking("Thinking.", ""), call],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "File created.".into(),
                    is_error: false,
                }],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    thinking("Signed.", "EqQBCkYIBRgCKkD"),
                    ContentBlock::Text {
                        text: "Done.".into(),
                    },
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![thinking("Alone.", "")],
            },
            Message::user_text("thanks"),
        ];
        let wire = wire_messages(&messages, false, &CacheHints::default());
        let kinds: Vec<Vec<&str>> = (wire.iter())
            .map(|m| {
                (m["content"].as_array().unwrap().iter())
                    .map(|b| b["type"].as_str().unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(
            kinds,
            [
                vec!["text"],
                vec!["tool_use"],
                vec!["tool_result"],
                vec!["thinking", "text"],
                vec!["text"]
            ]
        );
        assert_eq!(
            wire[3]["content"][0],
            json!({"type": "thinking", "thinking": "Signed.", "signature": "EqQBCkYIBRgCKkD"})
        );
        // Caching still marks the last two user messages' last blocks.
        let cached = wire_messages(&messages, true, &CacheHints::default());
        assert_eq!(
            cached[4]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            cached[2]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
    }

    fn body_with(system_prompt: &str, overrides: &RequestOverrides) -> Value {
        let text = "[act]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n";
        let config =
            crate::config::ApiConfiguration::from_toml(text, "t", |_| Some("k".into())).unwrap();
        let mode = crate::providers::resolve_mode(&config, crate::config::Mode::Act).unwrap();
        let messages = [Message::user_text("hi")];
        let prompt = Prompt {
            system_prompt,
            messages: &messages,
            tools: &[],
            overrides,
        };
        request_body(&mode, &prompt)
    }

    /// A client's own breakpoints on a translated route: where it put them, with their TTL, and
    /// none of the layer's; a mark on unsigned thinking, which is left out, moves to the block
    /// before it.
    #[test]
    fn a_clients_cache_marks_replace_the_layers() {
        let mut cache = CacheHints::default();
        cache.mark(CacheAt::System, Some("1h".into()));
        cache.mark(CacheAt::Tool(0), None);
        cache.mark(
            CacheAt::Block {
                message: 0,
                block: 0,
            },
            None,
        );
        cache.mark(
            CacheAt::Block {
                message: 1,
                block: 1,
            },
            None,
        );
        let messages = [
            Message::user_text("one"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text { text: "two".into() },
                    thinking("unsigned", ""),
                ],
            },
            Message::user_text("three"),
        ];
        let wire = wire_messages(&messages, true, &cache);
        let eph = json!({"type": "ephemeral"});
        assert_eq!(wire[0]["content"][0]["cache_control"], eph);
        assert_eq!(
            wire[1]["content"][0]["cache_control"], eph,
            "moved off the thinking"
        );
        assert!(
            wire[2]["content"][0].get("cache_control").is_none(),
            "no layer mark"
        );
        assert_eq!(
            system_mark(&cache, true),
            Some(json!({"type": "ephemeral", "ttl": "1h"}))
        );
        let tools = [ToolSpec {
            name: "t".into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
        }];
        assert_eq!(wire_tools(&tools, &cache)[0]["cache_control"], eph);
        // Without client marks the layer's placement stands, and a client without a system mark
        // gets none there.
        assert_eq!(system_mark(&CacheHints::default(), true), Some(eph.clone()));
        let mut message_only = CacheHints::default();
        message_only.mark(
            CacheAt::Block {
                message: 2,
                block: 0,
            },
            None,
        );
        assert_eq!(system_mark(&message_only, true), None);
    }

    fn body_with_system(system_prompt: &str) -> Value {
        body_with(system_prompt, &RequestOverrides::default())
    }

    #[test]
    fn a_top_p_alone_gets_no_default_temperature() {
        // A client through `switchyard serve` that sets only `top_p`: with the default
        // temperature beside it, Claude Sonnet 4.5 and later answer a 400.
        let top_p = RequestOverrides {
            top_p: Some(0.9),
            ..RequestOverrides::default()
        };
        let body = body_with("s", &top_p);
        assert_eq!(body["top_p"], 0.9, "{body}");
        assert!(body.get("temperature").is_none(), "{body}");
        // Both set by the caller, as Copilot CLI does: the temperature alone, since Claude
        // Sonnet 4.5 and later refuse the pair; neither: the default temperature.
        let both = RequestOverrides {
            temperature: Some(0.5),
            ..top_p
        };
        let body = body_with("s", &both);
        assert_eq!(body["temperature"], 0.5, "{body}");
        assert!(body.get("top_p").is_none(), "{body}");
        assert_eq!(body_with_system("s")["temperature"], 0.0);
    }

    #[test]
    fn a_blank_system_prompt_sends_no_system_block() {
        // A Chat Completions client with no system message, through `switchyard serve` to an
        // Anthropic route: Anthropic refuses `system: [{"type": "text", "text": ""}]` with a 400.
        for blank in ["", "  \n"] {
            let body = body_with_system(blank);
            assert!(body.get("system").is_none(), "{body}");
        }
        let body = body_with_system("Be brief.");
        assert_eq!(body["system"][0]["text"], "Be brief.", "{body}");
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    }

    fn map(parser: &mut AnthropicParser, data: &str) -> Vec<Result<ApiStreamChunk, ApiError>> {
        let mut out = Vec::new();
        parser.on_event(sse("content_block_delta", data), &mut out);
        out
    }

    /// Two tool blocks open when max_tokens cuts the answer: the error names the one of the lower
    /// index, every time (a HashMap's order made it either; found by fuzzing, issue 27:
    /// tests/fuzz/map_anthropic/).
    #[test]
    fn a_cut_with_two_open_tool_blocks_names_the_first_every_time() {
        for _ in 0..16 {
            let mut p = AnthropicParser::default();
            for (i, name) in [(3, "second"), (1, "first")] {
                let start = format!(
                    r#"{{"type":"content_block_start","index":{i},"content_block":{{"type":"tool_use","id":"toolu_{i}","name":"{name}","input":{{}}}}}}"#
                );
                let mut out = Vec::new();
                p.on_event(sse("content_block_start", &start), &mut out);
            }
            let mut out = Vec::new();
            let cut = r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":5}}"#;
            p.on_event(sse("message_delta", cut), &mut out);
            let [Err(e)] = &out[..] else {
                panic!("{out:?}")
            };
            assert!(e.message.contains("tool `first`"), "{}", e.message);
        }
    }

    #[test]
    fn deltas_read_alike_with_escapes_odd_shapes_and_tool_blocks() {
        let mut p = AnthropicParser::default();
        let out = map(
            &mut p,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\n\"b\""}}"#,
        );
        assert!(matches!(&out[..], [Ok(ApiStreamChunk::Text { text, .. })] if text == "a\n\"b\""));
        // A delta that is not an object, or a text that is not a string: nothing, no error.
        assert!(
            map(
                &mut p,
                r#"{"type":"content_block_delta","index":0,"delta":"x"}"#
            )
            .is_empty()
        );
        assert!(
            map(
                &mut p,
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":[1]}}"#
            )
            .is_empty()
        );
        // Argument fragments go to the tool block of their index.
        p.tool_blocks.insert(2, ("toolu_1".into(), "read".into()));
        p.open_tool_blocks.insert(2, 0);
        let out = map(
            &mut p,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"p\":"}}"#,
        );
        assert!(
            matches!(&out[..], [Ok(ApiStreamChunk::ToolCalls { id, arguments_delta, .. })] if id == "toolu_1" && arguments_delta == "{\"p\":"),
            "{out:?}"
        );
        assert_eq!(p.open_tool_blocks[&2], 5);
        // After the block's stop a fragment is dropped: the arguments were complete.
        let stop = map(&mut p, r#"{"type":"content_block_stop","index":2}"#);
        assert!(stop.is_empty(), "{stop:?}");
        let late = map(
            &mut p,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"1}"}}"#,
        );
        assert!(late.is_empty(), "{late:?}");
    }
}
