//! The path below the deployment and the JSON body of an SAP AI Core request, by route: its
//! family's shape with SAP's fixed settings, temperature 0 and no tools, as the reference sends.
//! Spec: R4.2.

use serde_json::{Value, json};

use super::route::{OPENAI_REASONING, Route};
use crate::config::ReasoningEffort;
use crate::handler::RequestOverrides;
use crate::message::{ContentBlock, Message, Role};
use crate::providers::anthropic;
use crate::providers::chat_body;
use crate::providers::gemini;
use crate::providers::overrides;
use crate::providers::provider::Prompt;
use crate::providers::resolve::ResolvedMode;

/// The Claude model that takes no temperature.
const NO_TEMPERATURE: &str = "anthropic--claude-4.7-opus";

pub(crate) fn path_and_body(
    route: Route,
    mode: &ResolvedMode,
    prompt: &Prompt<'_>,
) -> (String, Value) {
    let max = (mode.model_info.max_tokens > 0).then_some(mode.model_info.max_tokens);
    let (path, mut body) = match route {
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
    };
    apply_overrides(route, mode, prompt.overrides, &mut body);
    (path, body)
}

/// A caller's overrides in the route's family's fields: the limit, stop sequences and sampling
/// where the model takes it. SAP's bodies carry no tools and no thinking budget.
fn apply_overrides(route: Route, mode: &ResolvedMode, o: &RequestOverrides, body: &mut Value) {
    let sampling = mode.model_id != NO_TEMPERATURE;
    match route {
        Route::Converse => overrides::apply_converse(body, o, !sampling),
        Route::Invoke => anthropic::apply_overrides(body, o, !sampling),
        Route::OpenAi | Route::Hosted => {
            let reasoning = route == Route::OpenAi && openai_reasoning(&mode.model_id);
            if let Some(map) = body.as_object_mut() {
                overrides::apply_chat(map, o, reasoning, !reasoning);
            }
        }
        Route::Cohere => overrides::apply_sampling_to(body, o, overrides::COHERE, true),
        Route::Gemini => {
            let generation = &mut body["generationConfig"];
            overrides::apply_sampling_to(generation, o, overrides::GEMINI, true);
        }
    }
}

fn openai_reasoning(id: &str) -> bool {
    OPENAI_REASONING.contains(&id) || chat_body::is_reasoning_family(id)
}

/// Bedrock Converse's body, with cache points when the model caches.
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

/// One content block in the Converse shape; tool calls and results go as text.
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
    if openai_reasoning(id) {
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

/// Gemini's body with temperature 0 and no thinking, which SAP's Gemini deployments do not take.
fn gemini_body(prompt: &Prompt<'_>, max: Option<u64>) -> Value {
    let mut generation = json!({ "temperature": 0.0 });
    if let Some(n) = max {
        generation["maxOutputTokens"] = json!(n);
    }
    gemini::body(prompt.messages, prompt.system_prompt, generation)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::providers::sapaicore::route::route;

    /// The body SAP AI Core's `model` gets with every sampling override set.
    fn body_for(model: &str) -> Value {
        let text = format!("[act]\nprovider = \"sapaicore\"\nmodel = \"{model}\"\n");
        let config = crate::config::ApiConfiguration::from_toml(&text, "t", |_| None).unwrap();
        let mode = crate::providers::resolve_mode(&config, crate::config::Mode::Act).unwrap();
        let o = RequestOverrides {
            max_tokens: Some(300),
            temperature: Some(0.5),
            top_p: Some(0.9),
            stop: vec!["END".into()],
            ..RequestOverrides::default()
        };
        let prompt = Prompt {
            system_prompt: "s",
            messages: &[],
            tools: &[],
            overrides: &o,
        };
        path_and_body(route(model).unwrap(), &mode, &prompt).1
    }

    #[test]
    fn each_route_takes_the_overrides_in_its_family_fields() {
        let converse = body_for("anthropic--claude-4.5-sonnet");
        assert_eq!(
            converse["inferenceConfig"],
            json!({ "maxTokens": 300, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"] })
        );
        let invoke = body_for("anthropic--claude-3.5-sonnet");
        assert_eq!(invoke["max_tokens"], json!(300));
        assert_eq!(invoke["stop_sequences"], json!(["END"]));
        let cohere = body_for("cohere--command-a-reasoning");
        assert_eq!(cohere["p"], json!(0.9));
        assert_eq!(cohere["stop_sequences"], json!(["END"]));
        let reasoning = body_for("o4-mini");
        assert_eq!(reasoning["max_completion_tokens"], json!(300));
        assert_eq!(reasoning.get("temperature"), None);
        assert_eq!(reasoning["stop"], json!(["END"]));
        let gemini = body_for("gemini-2.5-pro");
        assert_eq!(gemini["generationConfig"]["topP"], json!(0.9));
        assert_eq!(gemini["generationConfig"]["maxOutputTokens"], json!(300));
    }
}
