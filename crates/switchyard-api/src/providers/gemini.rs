//! Gemini `streamGenerateContent?alt=sse`: the request body and the stream mapper. Each event is a
//! `GenerateContentResponse`; parts with `thought: true` are reasoning and `functionCall` parts
//! whole tool calls.
//! Spec: R4.1, R4.7, R1.3.

use serde_json::{Value, json};

use crate::config::{ApiKey, ReasoningEffort};
use crate::error::finish::finish_reason_error;
use crate::error::{ApiError, ErrorKind};
use crate::handler::ForwardDialect;
use crate::message::{ContentBlock, Message, Role};
use crate::providers::mapper::{Chunks, JsonEvents, require_end};
use crate::providers::overrides;
use crate::providers::provider::{Prompt, Provider};
use crate::providers::resolve::ResolvedMode;
use crate::stream::{ApiStreamChunk, Usage, generated_tool_call_id};
use crate::transport::WireRequest;

/// The thinking budget cap when the model table gives none, in tokens.
pub(crate) const DEFAULT_MAX_THINKING_BUDGET: u64 = 24_576;

pub(crate) struct Gemini;

/// The JSON request body, also Vertex's for Gemini models.
pub(crate) fn request_body(mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let info = &mode.model_info;
    let mut generation = json!({ "temperature": info.temperature.unwrap_or(0.0) });
    if info.max_tokens > 0 {
        generation["maxOutputTokens"] = json!(info.max_tokens);
    }
    if mode.model_id.contains("gemini-3") {
        // Gemini 3 takes a thinking level instead of a budget.
        let level = match mode.reasoning_effort.unwrap_or_default() {
            ReasoningEffort::None | ReasoningEffort::Low => "low",
            _ => "high",
        };
        generation["thinkingConfig"] = json!({ "thinkingLevel": level, "includeThoughts": true });
    } else if mode.thinking_budget_tokens > 0
        || info.supports_reasoning
        || info.thinking_config.is_some()
    {
        // A thinking model: the catalogue marks it `supports_reasoning` or, as the
        // reference's Gemini table does, with a `thinking_config`.
        let max = info
            .thinking_config
            .as_ref()
            .and_then(|t| t.max_budget)
            .unwrap_or(DEFAULT_MAX_THINKING_BUDGET);
        let mut config = json!({ "includeThoughts": true });
        if mode.thinking_budget_tokens > 0 {
            config["thinkingBudget"] = json!(mode.thinking_budget_tokens.min(max));
        } else if stops_thinking(mode, prompt) {
            config = json!({ "thinkingBudget": 0 });
        }
        generation["thinkingConfig"] = config;
    }
    overrides::apply_sampling_to(&mut generation, prompt.overrides, overrides::GEMINI, true);
    let mut body = body(prompt.messages, prompt.system_prompt, generation);
    if !prompt.tools.is_empty() {
        let declarations: Vec<Value> = prompt.tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "parameters": t.input_schema }))
            .collect();
        body["tools"] = json!([{ "functionDeclarations": declarations }]);
        if let Some(choice) = &prompt.overrides.tool_choice {
            body["toolConfig"] = overrides::gemini_tool_config(choice);
        }
    }
    body
}

/// Whether the caller turns thinking off with a budget of 0 on a model that can stop thinking. The
/// Pro models refuse `thinkingBudget: 0`, so there it is reported dropped.
fn stops_thinking(mode: &ResolvedMode, prompt: &Prompt<'_>) -> bool {
    prompt.overrides.thinking_budget_tokens == Some(0) && !mode.model_id.contains("-pro")
}

/// A Gemini body of `messages`, system prompt and `generationConfig`, also SAP AI Core's.
pub(crate) fn body(messages: &[Message], system_prompt: &str, generation: Value) -> Value {
    json!({
        "contents": convert_messages(messages),
        "systemInstruction": { "parts": [{ "text": system_prompt }] },
        "generationConfig": generation,
    })
}

/// Anthropic-shaped messages as Gemini `contents`, tool results named after their call.
pub(crate) fn convert_messages(messages: &[Message]) -> Vec<Value> {
    let mut tool_names: Vec<(&str, &str)> = Vec::new();
    let mut contents = Vec::new();
    for m in messages {
        let mut parts = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::Text { text } => parts.push(json!({ "text": text })),
                ContentBlock::Image { source } => parts.push(json!({
                    "inlineData": { "mimeType": source.media_type, "data": source.data },
                })),
                ContentBlock::ToolUse {
                    id,
                    name,
                    input,
                    signature,
                } => {
                    tool_names.push((id, name));
                    // The call's id goes back, since Gemini 3 pairs the response with it, and so
                    // does its thought signature, which Gemini 3 requires.
                    let mut part =
                        json!({ "functionCall": { "name": name, "args": input, "id": id } });
                    if let Some(sig) = signature {
                        part["thoughtSignature"] = json!(sig);
                    }
                    parts.push(part);
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => {
                    let name = tool_names
                        .iter()
                        .find(|(id, _)| id == tool_use_id)
                        .map_or(tool_use_id.as_str(), |(_, n)| n);
                    parts.push(json!({
                        "functionResponse": {
                            "id": tool_use_id,
                            "name": name,
                            "response": { "content": content },
                        },
                    }));
                }
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {}
            }
        }
        if !parts.is_empty() {
            let role = if m.role == Role::Assistant {
                "model"
            } else {
                "user"
            };
            contents.push(json!({ "role": role, "parts": parts }));
        }
    }
    contents
}

impl Provider for Gemini {
    type Parser = GeminiParser;

    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        let body = request_body(mode, prompt);
        let url = format!(
            "{}/v1beta/models/{}:streamGenerateContent?alt=sse",
            mode.base_url, mode.model_id
        );
        // The key goes in a header, never in the URL, where error messages and logs would carry it.
        WireRequest::sse(url, &body)
            .header_opt("x-goog-api-key", mode.api_key.as_ref().map(ApiKey::expose))
    }

    fn parser(&self, _mode: &ResolvedMode) -> GeminiParser {
        GeminiParser::default()
    }

    fn forwards(&self, _mode: &ResolvedMode) -> Option<ForwardDialect> {
        Some(ForwardDialect::Gemini)
    }
}

#[derive(Debug, Default)]
pub(crate) struct GeminiParser {
    finished: bool,
}

fn count(meta: &Value, key: &str) -> Option<u64> {
    meta.get(key).and_then(Value::as_u64)
}

/// The usage of one `usageMetadata`. `promptTokenCount` includes the cached tokens, which are
/// subtracted; `candidatesTokenCount` excludes the thoughts, which are billed as output and added.
fn usage(meta: &Value) -> ApiStreamChunk {
    let prompt = count(meta, "promptTokenCount").unwrap_or(0);
    let cached = count(meta, "cachedContentTokenCount");
    let thoughts = count(meta, "thoughtsTokenCount");
    ApiStreamChunk::Usage(Usage {
        input_tokens: prompt.saturating_sub(cached.unwrap_or(0)),
        output_tokens: count(meta, "candidatesTokenCount").unwrap_or(0) + thoughts.unwrap_or(0),
        cache_write_tokens: None,
        cache_read_tokens: cached,
        thoughts_tokens: thoughts,
        total_cost_usd: None,
        id: None,
    })
}

impl GeminiParser {
    /// One part of `candidates[0].content.parts`: a tool call, reasoning or text, with any
    /// signature.
    #[inline]
    fn on_part(part: &Value, out: &mut Chunks) {
        let signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(call) = part.get("functionCall") {
            return out.push(Ok(Self::tool_call(call, signature)));
        }
        let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
        if text.is_empty() && signature.is_none() {
            return;
        }
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            out.push(Ok(ApiStreamChunk::Reasoning {
                reasoning: text.to_owned(),
                details: None,
                signature,
                redacted_data: None,
                id: None,
            }));
        } else {
            out.push(Ok(ApiStreamChunk::Text {
                text: text.to_owned(),
                id: None,
                signature,
            }));
        }
    }

    /// A `functionCall` part as one whole tool call, with an id made up for models before Gemini 3,
    /// which send none; the thought signature goes back with the call.
    #[inline]
    fn tool_call(call: &Value, signature: Option<String>) -> ApiStreamChunk {
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map_or_else(generated_tool_call_id, str::to_owned);
        ApiStreamChunk::ToolCalls {
            call_id: None,
            id,
            name: call
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            arguments_delta: call
                .get("args")
                .map_or_else(|| "{}".to_owned(), Value::to_string),
            signature,
        }
    }

    /// A candidate's `finishReason`, after the usage that came with it. SAFETY, RECITATION,
    /// MALFORMED_FUNCTION_CALL and the like are named errors, with Gemini's own words when it sends
    /// them; `MAX_TOKENS` marks the answer cut; any other reason ends it.
    /// Spec: R7.5.
    #[inline]
    fn on_finish(&mut self, candidate: &Value, finish: &str, out: &mut Chunks) {
        if let Some(mut e) = finish_reason_error(finish) {
            if let Some(words) = candidate.get("finishMessage").and_then(Value::as_str) {
                let words: String = words.chars().take(300).collect();
                e.message = format!("{} (Gemini: {words})", e.message);
            }
            return out.push(Err(e));
        }
        if finish == "MAX_TOKENS" && !self.finished {
            out.push(Ok(ApiStreamChunk::max_tokens()));
        }
        self.finished = true;
    }
}

fn event_error(e: &Value) -> ApiError {
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the provider reported an error");
    let code = e.get("status").and_then(Value::as_str);
    ApiError::from_provider(None, code, message, None)
}

fn blocked(reason: &str) -> ApiError {
    ApiError::new(
        ErrorKind::ContentBlocked,
        format!("Gemini blocked the prompt ({reason}); rephrase the request or remove the flagged content"),
    )
    .with_code(reason.to_owned())
}

impl JsonEvents for GeminiParser {
    fn on_json(&mut self, _name: &str, v: &Value, out: &mut Chunks) {
        if let Some(e) = v.get("error") {
            return out.push(Err(event_error(e)));
        }
        // Usage that came with a block or a named finish reason was billed: it goes first.
        let usage = v.get("usageMetadata").map(usage);
        if let Some(reason) = v
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            out.extend(usage.map(Ok));
            return out.push(Err(blocked(reason)));
        }
        let Some(candidate) = v.pointer("/candidates/0") else {
            return;
        };
        for part in candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            Self::on_part(part, out);
        }
        if let Some(finish) = candidate.get("finishReason").and_then(Value::as_str) {
            out.extend(usage.map(Ok));
            self.on_finish(candidate, finish, out);
        }
    }

    fn on_json_end(&mut self, out: &mut Chunks) {
        require_end(self.finished, "finishReason", out);
    }
}

#[cfg(test)]
mod tests;
