//! The path below the deployment and the JSON body of an SAP AI Core request, by route (the
//! table in [`super`]'s docs; SPEC R4.2). Each body is its family's shape with SAP's fixed
//! settings (temperature 0, no tools); the messages are converted by the family's own code.

use serde_json::{Value, json};

use super::route::{OPENAI_REASONING, Route};
use crate::config::ReasoningEffort;
use crate::message::{ContentBlock, Message, Role};
use crate::providers::anthropic;
use crate::providers::chat_body;
use crate::providers::gemini;
use crate::providers::provider::Prompt;
use crate::providers::resolve::ResolvedMode;

/// The Claude model that takes no temperature.
const NO_TEMPERATURE: &str = "anthropic--claude-4.7-opus";

/// The path below the deployment and the body of a request (see the module table).
pub(crate) fn path_and_body(
    route: Route,
    mode: &ResolvedMode,
    prompt: &Prompt<'_>,
) -> (String, Value) {
    let max = (mode.model_info.max_tokens > 0).then_some(mode.model_info.max_tokens);
    match route {
        Route::Converse => ("converse-stream".to_owned(), converse(mode, prompt, max)),
        Route::Invoke => (
            "invoke-with-response-stream".to_owned(),
            invoke(mode, prompt),
        ),
        Route::OpenAi => (
            "chat/completions?api-version=2024-12-01-preview".to_owned(),
            openai(mode, prompt, max),
        ),
        Route::Hosted => ("chat/completions".to_owned(), hosted(mode, prompt, max)),
        Route::Cohere => ("chat".to_owned(), cohere(mode, prompt, max)),
        Route::Gemini => (
            format!("models/{}:streamGenerateContent", mode.model_id),
            gemini_body(prompt, max),
        ),
    }
}

/// Bedrock Converse: `inferenceConfig`, `system` and `messages`, with cache points when the
/// model caches.
fn converse(mode: &ResolvedMode, prompt: &Prompt<'_>, max: Option<u64>) -> Value {
    let cache = mode.model_info.supports_prompt_cache;
    let mut inference = json!({});
    if let Some(n) = max {
        inference["maxTokens"] = json!(n);
    }
    if mode.model_id != NO_TEMPERATURE {
        inference["temperature"] = json!(0.0);
    }
    let mut system = vec![json!({ "text": prompt.system_prompt })];
    if cache {
        system.push(json!({ "cachePoint": { "type": "default" } }));
    }
    json!({
        "inferenceConfig": inference,
        "system": system,
        "messages": converse_messages(prompt.messages, cache),
    })
}

/// One content block in the Converse shape: text and images (tool calls and results as text).
fn converse_block(block: &ContentBlock) -> Option<Value> {
    match block {
        ContentBlock::Text { text } => Some(json!({ "text": text })),
        ContentBlock::Image { source } => {
            let format = source
                .media_type
                .strip_prefix("image/")
                .filter(|f| ["png", "jpeg", "gif", "webp"].contains(f))
                .unwrap_or("jpeg");
            Some(json!({ "image": { "format": format, "source": { "bytes": source.data } } }))
        }
        ContentBlock::ToolUse { name, input, .. } => {
            Some(json!({ "text": format!("[Tool call {name}: {input}]") }))
        }
        ContentBlock::ToolResult { content, .. } => {
            Some(json!({ "text": format!("[Tool result: {content}]") }))
        }
        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => None,
    }
}

/// The messages in the Converse shape, a cache point after the last two user messages.
fn converse_messages(messages: &[Message], cache: bool) -> Vec<Value> {
    anthropic::marked_messages(messages, cache, |m, marked| {
        let mut content: Vec<Value> = m.content.iter().filter_map(converse_block).collect();
        if marked {
            content.push(json!({ "cachePoint": { "type": "default" } }));
        }
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        Some(json!({ "role": role, "content": content }))
    })
}

/// Anthropic Messages with Bedrock's `anthropic_version`.
fn invoke(mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let messages: Vec<Value> = prompt
        .messages
        .iter()
        .map(|m| json!({ "role": m.role, "content": m.content }))
        .collect();
    json!({
        "max_tokens": mode.model_info.max_tokens_or(anthropic::DEFAULT_MAX_TOKENS),
        "system": prompt.system_prompt,
        "messages": messages,
        "anthropic_version": "bedrock-2023-05-31",
    })
}

/// Chat Completions messages: the system prompt first.
fn chat_messages(prompt: &Prompt<'_>) -> Vec<Value> {
    let mut m = vec![json!({ "role": "system", "content": prompt.system_prompt })];
    m.extend(chat_body::openai_messages(prompt.messages));
    m
}

/// Azure OpenAI's Chat Completions: reasoning models take `reasoning_effort`, the others
/// temperature 0 and `max_tokens`.
fn openai(mode: &ResolvedMode, prompt: &Prompt<'_>, max: Option<u64>) -> Value {
    let id = mode.model_id.as_str();
    let mut body = json!({
        "stream": true,
        "messages": chat_messages(prompt),
        "frequency_penalty": 0,
        "presence_penalty": 0,
        "stop": null,
        "stream_options": { "include_usage": true },
    });
    if OPENAI_REASONING.contains(&id) || chat_body::is_reasoning_family(id) {
        if let Some(e) = mode
            .reasoning_effort
            .filter(|e| *e != ReasoningEffort::None)
        {
            body["reasoning_effort"] = json!(e.as_str());
        }
    } else {
        body["temperature"] = json!(0.0);
        if let Some(n) = max {
            body["max_tokens"] = json!(n);
        }
    }
    body
}

/// Perplexity and hosted models: Chat Completions with `model`.
fn hosted(mode: &ResolvedMode, prompt: &Prompt<'_>, max: Option<u64>) -> Value {
    let id = mode.model_id.as_str();
    let mut body = json!({
        "stream": true,
        "model": id,
        "messages": chat_messages(prompt),
        "temperature": 0.0,
        "stream_options": { "include_usage": true },
    });
    if id.starts_with("sonar") {
        body["frequency_penalty"] = json!(0);
        body["presence_penalty"] = json!(0);
        body["stop"] = Value::Null;
    } else if let Some(n) = max {
        body["max_tokens"] = json!(n);
    }
    body
}

/// Cohere: the Chat Completions shape with `model`.
fn cohere(mode: &ResolvedMode, prompt: &Prompt<'_>, max: Option<u64>) -> Value {
    let mut body = json!({
        "stream": true,
        "model": mode.model_id,
        "messages": chat_messages(prompt),
        "temperature": 0.0,
    });
    if let Some(n) = max {
        body["max_tokens"] = json!(n);
    }
    body
}

/// Gemini's body with temperature 0 and no thinking (SAP's Gemini deployments take none).
fn gemini_body(prompt: &Prompt<'_>, max: Option<u64>) -> Value {
    let mut generation = json!({ "temperature": 0.0 });
    if let Some(n) = max {
        generation["maxOutputTokens"] = json!(n);
    }
    gemini::body(prompt.messages, prompt.system_prompt, generation)
}
