//! OpenAI Responses over SSE, for models whose `api_format` is `responses`. Events are dispatched
//! on their JSON `type`, and a final `data: [DONE]` may or may not come.
//! Spec: R4.1, R1.3.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::config::{ApiKey, ReasoningEffort};
use crate::error::finish::finish_reason_error;
use crate::error::{ApiError, ErrorKind};
use crate::handler::RequestOverrides;
use crate::message::{ContentBlock, Message, Role, ToolSpec};
use crate::providers::mapper::{Chunks, JsonEvents, require_end};
use crate::providers::overrides;
use crate::providers::provider::{Prompt, Provider};
use crate::providers::resolve::ResolvedMode;
use crate::stream::{ApiStreamChunk, Usage};
use crate::transport::WireRequest;

pub(crate) struct OpenAiResponses;

pub(crate) fn request_body(mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let info = &mode.model_info;
    let mut body = json!({
        "model": mode.model_id,
        "instructions": prompt.system_prompt,
        "input": convert_messages(prompt.messages),
        "stream": true,
        "store": false,
    });
    if info.supports_reasoning {
        let effort = mode.reasoning_effort.unwrap_or_default();
        if effort != ReasoningEffort::None {
            body["reasoning"] = json!({ "effort": effort.as_str(), "summary": "auto" });
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
    } else {
        body["temperature"] = json!(info.temperature.unwrap_or(0.0));
    }
    if info.max_tokens > 0 {
        body["max_output_tokens"] = json!(info.max_tokens);
    }
    if !prompt.tools.is_empty() {
        body["tools"] = function_tools(prompt.tools, None);
    }
    // Only OpenAI's own API is known to take a key the client did not send.
    let session =
        (mode.provider_id == "openai-native").then_some((prompt.system_prompt, prompt.messages));
    apply_overrides(
        &mut body,
        prompt.overrides,
        !info.supports_reasoning,
        session,
    );
    body
}

/// A request's overrides in a Responses body: the limit, the temperature and `top_p` when
/// `sampling`, which a reasoning model refuses, `tool_choice` when the body has tools, and
/// the cache key, derived from `session` when the client sent none.
pub(crate) fn apply_overrides(
    body: &mut Value,
    o: &RequestOverrides,
    sampling: bool,
    session: Option<(&str, &[Message])>,
) {
    let Some(map) = body.as_object_mut() else {
        return;
    };
    if let (Some(choice), true) = (&o.tool_choice, map.contains_key("tools")) {
        map.insert(
            "tool_choice".into(),
            overrides::responses_tool_choice(choice),
        );
    }
    overrides::apply_sampling(map, o, overrides::RESPONSES, sampling);
    o.cache.insert_key(map, session);
}

/// Tools as Responses functions, with the `strict` flag the ChatGPT backend's requests carry.
pub(crate) fn function_tools(tools: &[ToolSpec], strict: Option<bool>) -> Value {
    tools
        .iter()
        .map(|t| {
            let mut tool = json!({ "type": "function", "name": t.name,
                                   "description": t.description, "parameters": t.input_schema });
            if let Some(strict) = strict {
                tool["strict"] = json!(strict);
            }
            tool
        })
        .collect()
}

/// Anthropic-shaped messages as Responses input items. A tool use becomes a `function_call` in its
/// place among the assistant's text, tool results go before the user's other content, and thinking
/// is not sent back since `store` is off.
pub(crate) fn convert_messages(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::new();
    for m in messages {
        let (role, text_type) = match m.role {
            Role::User => ("user", "input_text"),
            Role::Assistant => ("assistant", "output_text"),
        };
        let mut content = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::Text { text } => {
                    content.push(json!({ "type": text_type, "text": text }))
                }
                ContentBlock::Image { source } => content.push(json!({
                    "type": "input_image",
                    "image_url": format!("data:{};base64,{}", source.media_type, source.data),
                })),
                ContentBlock::ToolUse {
                    id, name, input, ..
                } => {
                    // In the order the model gave them: text before a call stays before it.
                    flush(&mut items, role, &mut content);
                    items.push(json!({
                        "type": "function_call", "call_id": id, "name": name,
                        "arguments": input.to_string(),
                    }));
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content: output,
                    ..
                } => items.push(json!({
                    "type": "function_call_output", "call_id": tool_use_id, "output": output,
                })),
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {}
            }
        }
        flush(&mut items, role, &mut content);
    }
    items
}

/// `content` so far, when there is any, as one message item of `role`.
fn flush(items: &mut Vec<Value>, role: &str, content: &mut Vec<Value>) {
    if !content.is_empty() {
        items.push(json!({ "role": role, "content": std::mem::take(content) }));
    }
}

impl Provider for OpenAiResponses {
    type Parser = ResponsesParser;

    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        let body = request_body(mode, prompt);
        WireRequest::sse(format!("{}/responses", mode.base_url), &body)
            .bearer(mode.api_key.as_ref().map(ApiKey::expose))
    }

    fn parser(&self, _mode: &ResolvedMode) -> ResponsesParser {
        ResponsesParser::default()
    }
}

#[derive(Debug)]
struct FunctionCall {
    call_id: String,
    name: String,
    /// The argument bytes yielded so far.
    arguments: String,
    /// Its `.done` or `output_item.done` arrived.
    done: bool,
}

impl FunctionCall {
    fn push(&mut self, delta: &str, out: &mut Chunks) {
        if delta.is_empty() {
            return;
        }
        self.arguments.push_str(delta);
        out.push(Ok(ApiStreamChunk::ToolCalls {
            call_id: Some(self.call_id.clone()),
            id: self.call_id.clone(),
            name: self.name.clone(),
            arguments_delta: delta.to_owned(),
            signature: None,
        }));
    }
}

#[derive(Debug, Default)]
pub(crate) struct ResponsesParser {
    /// Function-call items by item id.
    calls: HashMap<String, FunctionCall>,
    completed: bool,
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

impl ResponsesParser {
    /// `response.function_call_arguments.delta`: more of `item_id`'s arguments. A stray delta after
    /// the call's `.done`, which non-conforming proxies send, is dropped.
    fn arguments(&mut self, item_id: &str, delta: &str, out: &mut Chunks) {
        if let Some(call) = self.calls.get_mut(item_id).filter(|c| !c.done) {
            call.push(delta, out);
        }
    }

    /// A call's complete arguments from `.done` or `output_item.done`, authoritative when fewer
    /// delta bytes arrived, even none: what is missing is yielded.
    fn arguments_done(&mut self, item_id: &str, full: Option<&str>, out: &mut Chunks) {
        let Some(call) = self.calls.get_mut(item_id) else {
            return;
        };
        call.done = true;
        let Some(full) = full else {
            return;
        };
        if call.arguments.len() >= full.len() {
            return;
        }
        match full.strip_prefix(call.arguments.as_str()) {
            Some(rest) => call.push(rest, out),
            None => tracing::warn!(
                "the arguments of tool call {} differ from the fragments streamed before; the streamed ones are kept",
                call.call_id
            ),
        }
    }

    /// The usage of the response in `v`. `input_tokens` includes the cached ones, which are
    /// subtracted; reasoning tokens are inside `output_tokens`.
    fn usage(v: &Value) -> Option<ApiStreamChunk> {
        let u = v.pointer("/response/usage").filter(|u| u.is_object())?;
        let input = u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0);
        let cached = u
            .pointer("/input_tokens_details/cached_tokens")
            .and_then(Value::as_u64);
        Some(ApiStreamChunk::Usage(Usage {
            input_tokens: input.saturating_sub(cached.unwrap_or(0)),
            output_tokens: u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
            cache_write_tokens: None,
            cache_read_tokens: cached,
            thoughts_tokens: u
                .pointer("/output_tokens_details/reasoning_tokens")
                .and_then(Value::as_u64),
            total_cost_usd: None,
            id: None,
        }))
    }

    /// `response.incomplete`: the usage, then by reason: `max_output_tokens` marks the answer cut,
    /// as Chat's `length`, unless inside a tool call; a named reason such as `content_filter` is
    /// its error, any other an error naming it.
    /// Spec: R7.5.
    fn incomplete(&mut self, v: &Value, out: &mut Chunks) {
        self.completed = true;
        out.extend(Self::usage(v).map(Ok));
        let reason = str_at(v, "/response/incomplete_details/reason").unwrap_or("unknown");
        if let Some(e) = finish_reason_error(reason) {
            return out.push(Err(e));
        }
        if reason == "max_output_tokens" {
            // The first open call by item id, so the same events give the same error.
            let open = (self.calls.iter())
                .filter(|(_, c)| !c.done)
                .min_by_key(|(id, _)| *id);
            if let Some((_, call)) = open {
                out.push(Err(ApiError::new(
                    ErrorKind::Decode,
                    format!(
                        "the response hit its max_output_tokens limit while writing the arguments of tool `{}` ({} bytes received); the incomplete call was dropped",
                        call.name,
                        call.arguments.len()
                    ),
                )));
            } else {
                out.push(Ok(ApiStreamChunk::max_tokens()));
            }
            return;
        }
        out.push(Err(ApiError::new(
            ErrorKind::Decode,
            format!("the response ended incomplete ({reason})"),
        )
        .with_code(reason.to_owned())));
    }
}

fn error_from(e: &Value) -> ApiError {
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the provider reported an error");
    let code = e
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| e.get("type").and_then(Value::as_str));
    ApiError::from_provider(None, code, message, None)
}

impl ResponsesParser {
    /// `response.output_item.added`: a function call's ids, name and any first arguments.
    #[inline]
    fn on_item_added(&mut self, item: &Value, out: &mut Chunks) {
        if str_at(item, "/type") != Some("function_call") {
            return;
        }
        let item_id = str_at(item, "/id").unwrap_or_default().to_owned();
        let call_id = str_at(item, "/call_id").unwrap_or(&item_id).to_owned();
        let name = str_at(item, "/name").unwrap_or_default().to_owned();
        let initial = str_at(item, "/arguments").unwrap_or_default().to_owned();
        out.push(Ok(ApiStreamChunk::ToolCalls {
            call_id: Some(call_id.clone()),
            id: call_id.clone(),
            name: name.clone(),
            arguments_delta: initial.clone(),
            signature: None,
        }));
        let call = FunctionCall {
            call_id,
            name,
            arguments: initial,
            done: false,
        };
        self.calls.insert(item_id, call);
    }

    /// `response.output_item.done`: a reasoning item's encrypted content or a call's full
    /// arguments.
    #[inline]
    fn on_item_done(&mut self, item: &Value, out: &mut Chunks) {
        match str_at(item, "/type") {
            Some("reasoning") => {
                if let Some(enc) = str_at(item, "/encrypted_content").filter(|e| !e.is_empty()) {
                    out.push(Ok(ApiStreamChunk::Reasoning {
                        reasoning: String::new(),
                        details: None,
                        signature: None,
                        redacted_data: Some(enc.to_owned()),
                        id: str_at(item, "/id").map(str::to_owned),
                    }));
                }
            }
            Some("function_call") => {
                let item_id = str_at(item, "/id").unwrap_or_default();
                self.arguments_done(item_id, str_at(item, "/arguments"), out);
            }
            _ => {}
        }
    }
}

#[inline]
fn delta(v: &Value) -> Option<&str> {
    str_at(v, "/delta").filter(|d| !d.is_empty())
}

impl JsonEvents for ResponsesParser {
    fn on_json(&mut self, name: &str, v: &Value, out: &mut Chunks) {
        match v.get("type").and_then(Value::as_str).unwrap_or(name) {
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(d) = delta(v) {
                    out.push(Ok(ApiStreamChunk::reasoning(d)));
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(d) = delta(v) {
                    out.push(Ok(ApiStreamChunk::text(d)));
                }
            }
            "response.output_item.added" => self.on_item_added(&v["item"], out),
            "response.function_call_arguments.delta" => {
                let item_id = str_at(v, "/item_id").unwrap_or_default();
                self.arguments(item_id, str_at(v, "/delta").unwrap_or_default(), out);
            }
            "response.function_call_arguments.done" => {
                let item_id = str_at(v, "/item_id").unwrap_or_default();
                self.arguments_done(item_id, str_at(v, "/arguments"), out);
            }
            "response.output_item.done" => self.on_item_done(&v["item"], out),
            "response.completed" => {
                self.completed = true;
                out.extend(Self::usage(v).map(Ok));
            }
            "response.incomplete" => self.incomplete(v, out),
            "response.failed" => {
                let e = v.pointer("/response/error").unwrap_or(&Value::Null);
                out.push(Err(error_from(e)));
            }
            "error" => out.push(Err(error_from(v.get("error").unwrap_or(v)))),
            _ => {}
        }
    }

    fn on_json_end(&mut self, out: &mut Chunks) {
        require_end(self.completed, "response.completed", out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> ContentBlock {
        ContentBlock::Text { text: t.into() }
    }

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: "weather".into(),
            input: json!({"city": "Paris"}),
            signature: None,
        }
    }

    /// Found by the ingress_responses fuzz target (issue 27): an assistant turn of text, a call,
    /// text and a call went out as both calls, then one message of both texts, so the model
    /// read its own words after the calls they led to (the input:
    /// `tests/fuzz/ingress_responses/calls_among_assistant_text.body`, also in the target's
    /// corpus, which CI's smoke replays). The same defect, reported in another library:
    /// <https://github.com/zendev-sh/goai/issues/141>.
    #[test]
    fn an_assistant_turns_calls_stay_in_their_place_among_its_text() {
        let messages = [Message {
            role: Role::Assistant,
            content: vec![text("Checking."), call("c1"), text("Again."), call("c2")],
        }];
        let kinds: Vec<String> = convert_messages(&messages)
            .iter()
            .map(|item| match item["type"].as_str() {
                Some(kind) => format!("{kind} {}", item["call_id"].as_str().unwrap_or("")),
                None => format!(
                    "message {}",
                    item["content"][0]["text"].as_str().unwrap_or("")
                ),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "message Checking.",
                "function_call c1",
                "message Again.",
                "function_call c2"
            ]
        );
    }

    /// A user turn's tool results go first, before its text (the Responses body's order: each
    /// output follows its call).
    #[test]
    fn a_user_turns_tool_results_go_before_its_text() {
        let messages = [Message {
            role: Role::User,
            content: vec![
                text("And now?"),
                ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: "18C".into(),
                    is_error: false,
                },
            ],
        }];
        let items = convert_messages(&messages);
        assert_eq!(items[0]["type"], "function_call_output");
        assert_eq!(items[1]["content"][0]["text"], "And now?");
        assert_eq!(items.len(), 2);
    }

    /// The arguments a call ends with: a `.done` without `arguments` leaves the rest to
    /// `output_item.done`, which still yields what is missing; a delta after either `.done` is
    /// dropped (tests/cases H35).
    #[test]
    fn a_done_call_takes_no_more_deltas_but_its_item_done_fills_the_rest() {
        let mut p = ResponsesParser::default();
        let mut out = Vec::new();
        for v in [
            json!({"type": "response.output_item.added", "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{\"a\":"}),
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_1"}),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "}}"}),
            json!({"type": "response.output_item.done", "item": {"type": "function_call", "id": "fc_1", "arguments": "{\"a\":1}"}}),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "}"}),
        ] {
            p.on_json("", &v, &mut out);
        }
        let arguments: String = (out.iter())
            .map(|c| match c {
                Ok(ApiStreamChunk::ToolCalls {
                    arguments_delta, ..
                }) => arguments_delta.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(arguments, "{\"a\":1}");
    }
}
