//! Ollama's native chat API over NDJSON: one JSON object per line, whole tool calls with object
//! arguments, and a last line with `done: true` and the counts. A failed stream ends with an
//! `{"error": …}` line under status 200.
//! Spec: R4.1, R4.6, R1.3.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::config::ApiKey;
use crate::error::ApiError;
use crate::message::{ContentBlock, Message, Role};
use crate::model::DEFAULT_CONTEXT_WINDOW;
use crate::providers::chat_body::function_tools;
use crate::providers::overrides;
use crate::providers::provider::{Prompt, Provider};
use crate::providers::resolve::ResolvedMode;
use crate::providers::think_tags::{ThinkSplitter, ThinkTags};
use crate::stream::{ApiStreamChunk, Usage, generated_tool_call_id};
use crate::transport::{EventParser, WireRequest};

/// The context window sent as `options.num_ctx` when the model's is not configured.
pub(crate) const DEFAULT_NUM_CTX: u64 = 32_768;

/// Ollama's `/api/chat`, its mode adjusted by [`prepare`].
pub(crate) struct Ollama;

/// Adjusts a resolved mode for Ollama's native API: the context window defaults to
/// [`DEFAULT_NUM_CTX`], and a base URL ending in the OpenAI-compatible `/v1` goes back to the root.
pub(crate) fn prepare(mode: &mut ResolvedMode) {
    if mode.model_info.context_window == DEFAULT_CONTEXT_WINDOW {
        mode.model_info.context_window = DEFAULT_NUM_CTX;
    }
    if let Some(root) = mode.base_url.strip_suffix("/v1") {
        mode.base_url = root.to_owned();
    }
}

pub(crate) fn request_body(mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let mut wire = vec![json!({ "role": "system", "content": prompt.system_prompt })];
    for m in prompt.messages {
        wire.extend(convert_message(m));
    }
    let info = &mode.model_info;
    let mut options = json!({
        "num_ctx": info.context_window,
        "temperature": info.temperature.unwrap_or(0.0),
    });
    if info.max_tokens > 0 {
        options["num_predict"] = json!(info.max_tokens);
    }
    // A caller's limit, sampling and stop sequences; a tool choice is reported dropped.
    overrides::apply_sampling_to(&mut options, prompt.overrides, overrides::OLLAMA, true);
    let mut body = json!({
        "model": mode.model_id,
        "messages": wire,
        "stream": true,
        "options": options,
    });
    if prompt.overrides.thinking_budget_tokens == Some(0) {
        // A caller's "no thinking".
        body["think"] = json!(false);
    } else if info.supports_reasoning || mode.thinking_budget_tokens > 0 {
        body["think"] = json!(true);
    }
    if !prompt.tools.is_empty() {
        body["tools"] = function_tools(prompt.tools);
    }
    body
}

/// One conversation message as Ollama messages; tool uses go with object arguments.
fn convert_message(m: &Message) -> Vec<Value> {
    let mut out = Vec::new();
    let mut text = Vec::new();
    let mut images = Vec::new();
    let mut tool_calls = Vec::new();
    for block in &m.content {
        match block {
            ContentBlock::Text { text: t } => text.push(t.as_str()),
            ContentBlock::Image { source } => images.push(json!(source.data)),
            ContentBlock::ToolUse { name, input, .. } => {
                tool_calls.push(json!({ "function": { "name": name, "arguments": input } }));
            }
            ContentBlock::ToolResult { content, .. } => {
                out.push(json!({ "role": "tool", "content": content }));
            }
            ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {}
        }
    }
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    if !text.is_empty() || !images.is_empty() || !tool_calls.is_empty() {
        let mut msg = json!({ "role": role, "content": text.join("\n\n") });
        if !images.is_empty() {
            msg["images"] = Value::Array(images);
        }
        if !tool_calls.is_empty() {
            msg["tool_calls"] = Value::Array(tool_calls);
        }
        out.push(msg);
    }
    out
}

impl Provider for Ollama {
    type Parser = OllamaParser;

    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        let body = request_body(mode, prompt);
        WireRequest::json(format!("{}/api/chat", mode.base_url), &body)
            .bearer(mode.api_key.as_ref().map(ApiKey::expose))
    }

    fn parser(&self, _mode: &ResolvedMode) -> OllamaParser {
        OllamaParser::default()
    }
}

/// One line of the stream, only the fields we use.
#[derive(Debug, Deserialize)]
struct ChatLine<'a> {
    #[serde(borrow, default)]
    message: Option<LineMessage<'a>>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct LineMessage<'a> {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(borrow, default)]
    tool_calls: Vec<LineToolCall<'a>>,
}

#[derive(Debug, Deserialize)]
struct LineToolCall<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(borrow)]
    function: LineFunction<'a>,
}

#[derive(Debug, Deserialize)]
struct LineFunction<'a> {
    name: String,
    /// Kept as the server's own JSON text, so arguments are byte-exact.
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

#[derive(Debug)]
pub(crate) struct OllamaParser {
    done: bool,
    /// `<think>` reasoning opening the content, from servers that do not use `message.thinking`.
    think: ThinkSplitter,
}

impl Default for OllamaParser {
    fn default() -> Self {
        Self {
            done: false,
            think: ThinkSplitter::new(ThinkTags::Opening),
        }
    }
}

impl EventParser for OllamaParser {
    type Event = String;

    fn on_event(&mut self, line: String, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        let parsed: ChatLine<'_> = match serde_json::from_str(&line) {
            Ok(p) => p,
            Err(e) => {
                let snippet: String = line.chars().take(120).collect();
                return out.push(Err(ApiError::decode(format!(
                    "the server sent a line that is not a chat response ({e}): {snippet}"
                ))));
            }
        };
        if let Some(error) = parsed.error {
            let message = error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned);
            return out.push(Err(ApiError::from_provider(None, None, &message, None)));
        }
        if let Some(message) = parsed.message {
            if let Some(t) = message.thinking.filter(|t| !t.is_empty()) {
                out.push(Ok(ApiStreamChunk::reasoning(t)));
            }
            if let Some(t) = message.content.filter(|t| !t.is_empty()) {
                self.think.push(&t, out);
            }
            for call in message.tool_calls {
                // Ollama sends whole calls, before 0.12.10 without ids: one is made up, unique in
                // the process, so a later tool round never repeats it.
                let id = call
                    .id
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(generated_tool_call_id);
                let arguments = call
                    .function
                    .arguments
                    .map_or("{}", RawValue::get)
                    .to_owned();
                out.push(Ok(ApiStreamChunk::tool_call(
                    id,
                    call.function.name,
                    arguments,
                )));
            }
        }
        if parsed.done {
            self.done = true;
            self.think.finish(out);
            // Ollama has no cache split: `prompt_eval_count` is the whole prompt, omitted when 0.
            out.push(Ok(ApiStreamChunk::Usage(Usage {
                input_tokens: parsed.prompt_eval_count.unwrap_or(0),
                output_tokens: parsed.eval_count.unwrap_or(0),
                ..Usage::default()
            })));
            // The token limit cut the answer, which is never a clean stop.
            if parsed.done_reason.as_deref() == Some("length") {
                out.push(Ok(ApiStreamChunk::max_tokens()));
            }
        }
    }

    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        self.think.finish(out);
        if !self.done {
            out.push(Err(ApiError::incomplete_stream("line with done: true")));
        }
    }
}
