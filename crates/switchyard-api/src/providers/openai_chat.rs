//! OpenAI Chat Completions over SSE, for OpenAI and every OpenAI-compatible provider, with the
//! OpenRouter and DeepSeek dialects as small variations. `openai_chat/` holds the fast reading, the
//! view both readings fill, reasoning fields, tool-call assembly, and usage and cost.
//! Spec: R4.1, R4.2, R4.4, R4.5, R1.3, R7.5.

mod reasoning;
mod tool_calls;
mod usage;
mod view;
mod wire;

use serde_json::Value;

use crate::config::ApiKey;
use crate::error::body::error_from_event;
use crate::error::finish::finish_reason_error;
use crate::error::{ApiError, ErrorKind};
use crate::handler::ForwardDialect;
use crate::providers::chat_body;
use crate::providers::mapper::{Chunks, require_end};
use crate::providers::presets::ChatDialect;
use crate::providers::provider::{Prompt, Provider, parse_json};
use crate::providers::resolve::ResolvedMode;
use crate::providers::think_tags::{ThinkSplitter, ThinkTags};
use crate::stream::{ApiStreamChunk, Usage};
use crate::transport::{EventParser, WireRequest};
use crate::wire::sse::{SseEvent, SseEventRef};
use tool_calls::ToolCalls;
use view::{ChunkView, Content, usage_of};

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
        // The reference reads `<think>` anywhere in Fireworks' text, and in any other model's only
        // when its answer opens with it.
        let think = if mode.provider_id == "fireworks" {
            ThinkTags::Anywhere
        } else {
            ThinkTags::Opening
        };
        ChatParser::new(mode.preset.dialect, think)
    }

    fn forwards(&self, _mode: &ResolvedMode) -> Option<ForwardDialect> {
        Some(ForwardDialect::ChatCompletions)
    }
}

#[derive(Debug)]
pub(crate) struct ChatParser {
    dialect: ChatDialect,
    tool_calls: ToolCalls,
    think: ThinkSplitter,
    /// A finish reason arrived, so the stream is complete.
    finished: bool,
    done: bool,
    /// The error a named finish reason ends the stream with, held until the billed usage that may
    /// follow it is yielded.
    failure: Option<ApiError>,
    /// The latest usage seen, yielded once when the stream ends or before an error: a server that
    /// repeats its running totals in every chunk is counted once.
    usage: Option<Usage>,
}

impl ChatParser {
    /// A parser for `dialect`; `think` says where `<think>` in the text starts reasoning.
    pub(crate) fn new(dialect: ChatDialect, think: ThinkTags) -> Self {
        Self {
            dialect,
            tool_calls: ToolCalls::default(),
            think: ThinkSplitter::new(think),
            finished: false,
            done: false,
            failure: None,
            usage: None,
        }
    }

    fn flush_usage(&mut self, out: &mut Chunks) {
        if let Some(u) = self.usage.take() {
            out.push(Ok(ApiStreamChunk::Usage(u)));
        }
    }
    /// Yields the held failure, if any: the stream ends with it.
    fn flush_failure(&mut self, out: &mut Chunks) {
        if let Some(e) = self.failure.take() {
            self.think.finish(out);
            out.push(Err(e));
        }
    }
}

impl ChatParser {
    /// Maps one chunk's reasoning, text, tool-call deltas, finish reason and usage.
    fn on_chunk(&mut self, c: ChunkView<'_>, out: &mut Chunks) {
        // Usage first: a chunk may carry it with the finish reason that ends the stream in an
        // error, and those tokens were billed.
        if let Some(u) = c.usage.filter(|u| u.is_object()) {
            self.usage = Some(usage::usage(self.dialect, u));
        }
        if c.has_choice && self.failure.is_none() {
            reasoning::on_reasoning(&c, out);
            match c.content {
                Content::Text(t) => self.think.push(t, out),
                Content::Parts(parts) => reasoning::on_content_parts(&mut self.think, parts, out),
                Content::None => {}
            }
            self.tool_calls.on_fragments(c.tool_calls, out);
            match c.finish_reason {
                Some("error") => {
                    self.flush_usage(out);
                    out.push(Err(ApiError::new(
                        ErrorKind::Server,
                        "the provider ended the stream with an error (finish_reason \"error\")",
                    )));
                }
                Some("length") if !self.tool_calls.is_empty() => {
                    // A tool call cut off by the token limit is half a JSON object: never run it.
                    self.flush_usage(out);
                    out.push(Err(ApiError::new(
                        ErrorKind::Decode,
                        "the response hit its max_tokens limit while writing a tool call's arguments; the incomplete call was dropped",
                    )));
                }
                Some(reason) => {
                    self.think.finish(out);
                    if reason == "length" && !self.finished {
                        out.push(Ok(ApiStreamChunk::max_tokens()));
                    }
                    self.finished = true;
                    self.failure = finish_reason_error(reason);
                }
                None => {}
            }
        }
    }
}

impl ChatParser {
    /// A chunk the fast reading leaves, such as an error, read as a `serde_json::Value`.
    fn on_general(&mut self, data: &str, out: &mut Chunks) {
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
            // vLLM and similar servers send a bare error object as an event.
            self.flush_usage(out);
            return out.push(Err(error_from_event(&v)));
        }
        let choice = v
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        if let Some(e) = choice.and_then(|c| c.get("error")).filter(|e| !e.is_null()) {
            // OpenRouter sends an upstream failure mid-stream as `choices[0].error`.
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
                usage: usage_of(
                    v.get("usage"),
                    v.get("x_groq"),
                    choice.and_then(|c| c.get("usage")),
                ),
            },
            out,
        );
    }
}

impl EventParser for ChatParser {
    type Event = SseEvent;

    fn failing(&self) -> bool {
        self.failure.is_some()
    }

    fn on_event(&mut self, event: SseEventRef<'_>, out: &mut Chunks) {
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
        // Fast path: fields borrowed from `data`; a `Value` tree per event was most of the CPU.
        if let Some(chunk) = wire::Chunk::read(data) {
            return self.on_chunk(chunk.view(), out);
        }
        self.on_general(data, out);
    }

    fn on_error(&mut self, out: &mut Chunks) {
        self.flush_usage(out);
    }

    fn set_bounds(&mut self, bounds: crate::stream_guard::StreamBounds) {
        self.tool_calls.set_bounds(bounds);
    }

    fn holds_content(&self) -> bool {
        self.tool_calls.holding()
    }

    fn on_end(&mut self, out: &mut Chunks) {
        self.think.finish(out);
        self.flush_usage(out);
        if self.failure.is_some() {
            self.flush_failure(out);
        } else {
            require_end(self.done || self.finished, "finish_reason or [DONE]", out);
        }
    }
}

#[cfg(test)]
mod nameless_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::mapper::testing::sse;
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

    crate::providers::mapper::testing::agreement_tests!(ChatParser);

    fn map(data: &str) -> Vec<Result<ApiStreamChunk, ApiError>> {
        let mut parser = ChatParser::new(ChatDialect::Generic, ThinkTags::Opening);
        let mut out = Vec::new();
        parser.on_event(sse("message", data), &mut out);
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
            parser.on_event(sse("message", data), &mut out);
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

    /// An OpenRouter chunk with `reasoning_details` (the reference's
    /// `{ type: "reasoning", reasoning: "", details: delta.reasoning_details }`, Cline v4.0.10
    /// `openrouter.ts`): the details stay whole, an array, on the delta's reasoning chunk —
    /// with its text, or with empty text for a delta whose details carry only a signature.
    /// Its usage's cost is `cost` plus `cost_details.upstream_inference_cost` (0.002 + 0.0123
    /// = 0.0143) when the upstream cost is not already inside `cost` (BYOK: Cline v4.0.12
    /// `gateway.test.ts`, "adds OpenRouter BYOK account fee and upstream provider cost").
    #[test]
    fn openrouter_reasoning_details_stay_an_array_and_the_upstream_cost_is_added() {
        let text_details = json!([
            {"type": "reasoning.text", "text": "Let me think", "format": "anthropic-claude-v1", "index": 0}
        ]);
        let signed = json!([
            {"type": "reasoning.text", "signature": "c2ln", "format": "anthropic-claude-v1", "index": 0}
        ]);
        let mut parser = ChatParser::new(ChatDialect::OpenRouter, ThinkTags::Opening);
        let mut out = Vec::new();
        let delta = |reasoning: Value, details: &Value| json!({"choices": [{"index": 0, "delta": {"reasoning": reasoning, "reasoning_details": details}}]});
        parser.on_event(
            sse(
                "message",
                &delta(json!("Let me think"), &text_details).to_string(),
            ),
            &mut out,
        );
        let mut last = delta(Value::Null, &signed);
        last["usage"] = json!({"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.002,
                               "cost_details": {"upstream_inference_cost": 0.0123}});
        parser.on_event(sse("message", &last.to_string()), &mut out);
        parser.on_event(sse("message", STOP), &mut out);
        parser.on_end(&mut out);
        let reasoning: Vec<(&str, Option<&Value>, Option<&str>)> = out
            .iter()
            .filter_map(|c| match c {
                Ok(ApiStreamChunk::Reasoning {
                    reasoning,
                    details,
                    signature,
                    ..
                }) => Some((reasoning.as_str(), details.as_ref(), signature.as_deref())),
                _ => None,
            })
            .collect();
        assert_eq!(
            reasoning,
            [
                ("Let me think", Some(&text_details), None),
                ("", Some(&signed), Some("c2ln"))
            ],
            "the details whole, as arrays: {out:?}"
        );
        let cost = out.iter().find_map(|c| match c {
            Ok(ApiStreamChunk::Usage(u)) => u.total_cost_usd,
            _ => None,
        });
        assert!((cost.unwrap() - 0.0143).abs() < 1e-12, "{out:?}");
    }

    /// The reference places an index-less fragment by its position in the chunk's
    /// `tool_calls` (`toolCallDelta.index ?? fallbackIndex`, Cline v4.0.12
    /// `apps/vscode/src/core/api/transform/tool-call-processor.ts`, whose test "should preserve
    /// tool call id/name for interleaved parallel deltas" this is without the indices): two
    /// calls, `call_p0` / `a` then `call_p1` / `b`, each with its own arguments.
    #[test]
    fn index_less_fragments_are_placed_by_position() {
        let chunk = |fragments: Value| {
            json!({"choices": [{"index": 0, "delta": {"tool_calls": fragments}}]}).to_string()
        };
        let (calls, _) = stream(&[
            &chunk(json!([
                {"id": "call_p0", "function": {"name": "a"}},
                {"id": "call_p1", "function": {"name": "b"}},
            ])),
            &chunk(json!([
                {"function": {"arguments": "{\"x\":1}"}},
                {"function": {"arguments": "{\"y\":2}"}},
            ])),
            STOP,
        ]);
        assert_eq!(
            calls,
            [
                ("call_p0".into(), "a".into(), "{\"x\":1}".into()),
                ("call_p1".into(), "b".into(), "{\"y\":2}".into())
            ]
        );
        // Whole calls, ids and arguments together, in one chunk.
        let (calls, _) = stream(&[
            &chunk(json!([
                {"id": "call_p0", "function": {"name": "a", "arguments": "{}"}},
                {"id": "call_p1", "function": {"name": "b", "arguments": "{\"q\":1}"}},
            ])),
            STOP,
        ]);
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(calls[1], ("call_p1".into(), "b".into(), "{\"q\":1}".into()));
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
