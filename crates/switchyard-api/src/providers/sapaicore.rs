//! `sapaicore`: models deployed on SAP AI Core, called through their deployments' inference
//! URLs (the reference's `providers/sapaicore.ts`, its deployment mode), with the
//! client-credentials token of [`crate::auth::sap`].
//!
//! Every request goes to `{AI_API_URL}/v2/inference/deployments/{deployment}/…` with
//! `Authorization: Bearer {token}`, `AI-Resource-Group` (default `default`) and
//! `AI-Client-Type: Switchyard`; the deployment is the configured `deployment_id`, else the
//! running deployment serving the model. The path and body follow the model family:
//!
//! | models | path | body | stream |
//! |---|---|---|---|
//! | Claude 3.7 and later, Amazon Nova | `converse-stream` | Bedrock Converse (`inferenceConfig` with `maxTokens` and temperature 0 (none for Opus 4.7), `system`, `messages`, cache points on the system prompt and the last two user messages when the model caches) | Converse events as SSE `data:` lines |
//! | older Claude (3, 3.5) | `invoke-with-response-stream` | Anthropic Messages with `anthropic_version: "bedrock-2023-05-31"` | Anthropic events as SSE |
//! | OpenAI (`gpt-…`, `o1`, `o3`, `o4-mini`) | `chat/completions?api-version=2024-12-01-preview` | Chat Completions (`max_tokens`, temperature 0, penalties 0; reasoning models: neither, `reasoning_effort` when set) | Chat Completions SSE |
//! | Perplexity (`sonar…`), hosted Mistral | `chat/completions` | Chat Completions with `model` | Chat Completions SSE |
//! | Cohere (`cohere--…`) | `chat` | Chat Completions shape with `model` | Cohere v2 events (`content-delta`, `message-end`) |
//! | Gemini | `models/{id}:streamGenerateContent` | Gemini (`contents`, `systemInstruction`, `generationConfig` with `maxOutputTokens` and temperature 0; no thinking: SAP's Gemini deployments take none) | Gemini SSE |
//!
//! A model id outside the reference's lists goes by its family's prefix (`anthropic--`,
//! `amazon--nova`, `gpt`/`o`, `gemini`, `sonar`, `mistralai--`, `cohere--`), so a newly
//! deployed model works without a rebuild; the reference refuses it. Differences from the
//! reference: `o3-mini` streams like the other reasoning models (the reference sends it
//! unstreamed, an Azure limit since lifted); the orchestration mode (`sapAiCoreUseOrchestrationMode`,
//! SAP's own SDK protocol) is not offered; tools are not sent (the reference sends none), and
//! tool calls and results in the conversation are sent as text.
//!
//! Usage rules (SPEC R1.3): Converse's `inputTokens` is already uncached; cache reads and
//! writes from `cacheReadInputTokens` / `cacheWriteInputTokens`. The others follow their
//! families. SAP bills in capacity units, not per token: no cost is reported.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::auth::sap::{SapAuth, ServiceKey};
use crate::config::{ConfigError, ReasoningEffort};
use crate::error::{ApiError, ErrorKind};
use crate::message::{ContentBlock, Message, Role};
use crate::providers::anthropic::{self, AnthropicParser};
use crate::providers::chat_body;
use crate::providers::gemini::{self, GeminiParser};
use crate::providers::openai_chat::ChatParser;
use crate::providers::presets::ChatDialect;
use crate::providers::provider::{Prompt, Provider, event_json, http_client};
use crate::providers::resolve::ResolvedMode;
use crate::providers::think_tags::ThinkTags;
use crate::stream::{ApiStreamChunk, Usage};
use crate::transport::{EventParser, PendingRequest, WireRequest};
use crate::wire::sse::{SseEvent, SseEventRef};

/// Claude models on the Converse endpoint (the reference's `converseStreamModels`).
const CONVERSE_CLAUDE: &[&str] = &[
    "anthropic--claude-sonnet-5",
    "anthropic--claude-4.7-opus",
    "anthropic--claude-4.6-opus",
    "anthropic--claude-4.5-opus",
    "anthropic--claude-4.6-sonnet",
    "anthropic--claude-4.5-sonnet",
    "anthropic--claude-4.5-haiku",
    "anthropic--claude-4-sonnet",
    "anthropic--claude-4-opus",
    "anthropic--claude-3.7-sonnet",
];
/// Older Claude models on the Invoke endpoint.
const INVOKE_CLAUDE: &[&str] = &[
    "anthropic--claude-3.5-sonnet",
    "anthropic--claude-3-sonnet",
    "anthropic--claude-3-haiku",
    "anthropic--claude-3-opus",
];
/// OpenAI reasoning models (no `max_tokens`, no temperature).
const OPENAI_REASONING: &[&str] = &[
    "o1",
    "o3-mini",
    "o3",
    "o4-mini",
    "gpt-5",
    "gpt-5.2",
    "gpt-5.4",
    "gpt-5.4-nano",
    "gpt-5.5",
    "gpt-5-nano",
    "gpt-5-mini",
];

/// How a model is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Converse,
    Invoke,
    OpenAi,
    /// Perplexity and hosted models: Chat Completions with `model`, no api-version.
    Hosted,
    Cohere,
    Gemini,
}

/// The route of `model_id`: the reference's lists, then the family prefixes.
pub(crate) fn route(model_id: &str) -> Option<Route> {
    let id = model_id;
    if CONVERSE_CLAUDE.contains(&id) || id.starts_with("amazon--nova") {
        return Some(Route::Converse);
    }
    if INVOKE_CLAUDE.contains(&id) {
        return Some(Route::Invoke);
    }
    if id.starts_with("anthropic--") {
        return Some(Route::Converse);
    }
    if id.starts_with("cohere--") {
        return Some(Route::Cohere);
    }
    if id.starts_with("gemini") {
        return Some(Route::Gemini);
    }
    if id.starts_with("sonar") || id.starts_with("mistralai--") {
        return Some(Route::Hosted);
    }
    if id.starts_with("gpt") || ["o1", "o3", "o4"].iter().any(|p| id.starts_with(p)) {
        return Some(Route::OpenAi);
    }
    None
}

/// The SAP AI Core provider: its credentials and deployment cache.
pub(crate) struct SapAiCore {
    auth: Arc<SapAuth>,
}

impl SapAiCore {
    /// Fills in the base URL from the service key (unless configured) and checks the key's
    /// shape; no request is made (SPEC R3.5).
    pub(crate) fn new(mode: &mut ResolvedMode) -> Result<Self, ConfigError> {
        let Some(key) = mode.api_key.as_ref() else {
            return Err(ConfigError::MissingApiKey {
                provider: mode.provider_id.clone(),
                var: mode.api_key_env.clone(),
            });
        };
        let key = ServiceKey::parse(key, &mode.api_key_env)?;
        if !mode.cloud.base_url_overridden {
            mode.base_url.clone_from(&key.ai_api_url);
        }
        if !(mode.base_url.starts_with("http://") || mode.base_url.starts_with("https://")) {
            return Err(ConfigError::BaseUrl {
                provider: mode.provider_id.clone(),
                url: mode.base_url.clone(),
            });
        }
        let token_url = mode.options.token_url.clone();
        let client = http_client(mode, token_url.as_deref().unwrap_or(&key.auth_url))?;
        Ok(Self {
            auth: Arc::new(SapAuth::new(key, token_url.as_deref(), client)),
        })
    }
}

/// The messages in the Converse shape: text and images (tool calls and results as text).
fn converse_messages(messages: &[Message], cache: bool) -> Vec<Value> {
    let users: Vec<usize> = anthropic::cached_user_messages(messages, cache);
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut content: Vec<Value> = m
                .content
                .iter()
                .filter_map(|b| match b {
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
                })
                .collect();
            if users.contains(&i) {
                content.push(json!({ "cachePoint": { "type": "default" } }));
            }
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({ "role": role, "content": content })
        })
        .collect()
}

/// The path below the deployment and the body of a request (see the module table).
pub(crate) fn path_and_body(
    route: Route,
    mode: &ResolvedMode,
    prompt: &Prompt<'_>,
) -> (String, Value) {
    let info = &mode.model_info;
    let id = mode.model_id.as_str();
    let max = (info.max_tokens > 0).then_some(info.max_tokens);
    let chat_messages = || {
        let mut m = vec![json!({ "role": "system", "content": prompt.system_prompt })];
        m.extend(chat_body::openai_messages(prompt.messages));
        m
    };
    match route {
        Route::Converse => {
            let cache = info.supports_prompt_cache;
            let mut inference = json!({});
            if let Some(n) = max {
                inference["maxTokens"] = json!(n);
            }
            if id != "anthropic--claude-4.7-opus" {
                inference["temperature"] = json!(0.0);
            }
            let mut system = vec![json!({ "text": prompt.system_prompt })];
            if cache {
                system.push(json!({ "cachePoint": { "type": "default" } }));
            }
            let body = json!({
                "inferenceConfig": inference,
                "system": system,
                "messages": converse_messages(prompt.messages, cache),
            });
            ("converse-stream".to_owned(), body)
        }
        Route::Invoke => {
            let messages: Vec<Value> = prompt
                .messages
                .iter()
                .map(|m| json!({ "role": m.role, "content": m.content }))
                .collect();
            let body = json!({
                "max_tokens": info.max_tokens_or(anthropic::DEFAULT_MAX_TOKENS),
                "system": prompt.system_prompt,
                "messages": messages,
                "anthropic_version": "bedrock-2023-05-31",
            });
            ("invoke-with-response-stream".to_owned(), body)
        }
        Route::OpenAi => {
            let mut body = json!({
                "stream": true,
                "messages": chat_messages(),
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
            (
                "chat/completions?api-version=2024-12-01-preview".to_owned(),
                body,
            )
        }
        Route::Hosted => {
            let mut body = json!({
                "stream": true,
                "model": id,
                "messages": chat_messages(),
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
            ("chat/completions".to_owned(), body)
        }
        Route::Cohere => {
            let mut body = json!({
                "stream": true,
                "model": id,
                "messages": chat_messages(),
                "temperature": 0.0,
            });
            if let Some(n) = max {
                body["max_tokens"] = json!(n);
            }
            ("chat".to_owned(), body)
        }
        Route::Gemini => {
            let mut generation = json!({ "temperature": 0.0 });
            if let Some(n) = max {
                generation["maxOutputTokens"] = json!(n);
            }
            let body = json!({
                "contents": gemini::convert_messages(prompt.messages),
                "systemInstruction": { "parts": [{ "text": prompt.system_prompt }] },
                "generationConfig": generation,
            });
            (format!("models/{id}:streamGenerateContent"), body)
        }
    }
}

impl Provider for SapAiCore {
    type Parser = SapParser;

    /// The body, and the path below the deployment in place of the URL; the deployment, the
    /// token and the headers are added by [`Provider::authorize`].
    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        match route(&mode.model_id) {
            Some(route) => {
                let (path, body) = path_and_body(route, mode, prompt);
                WireRequest::sse(path, &body)
            }
            // Reported by `authorize`, before anything is sent.
            None => WireRequest::sse(String::new(), &Value::Null),
        }
    }

    fn parser(&self, mode: &ResolvedMode) -> SapParser {
        match route(&mode.model_id) {
            Some(Route::Converse) | None => SapParser::Converse(ConverseParser::default()),
            Some(Route::Invoke) => SapParser::Anthropic(AnthropicParser::default()),
            Some(Route::OpenAi | Route::Hosted) => {
                SapParser::Chat(ChatParser::new(ChatDialect::Generic, ThinkTags::Opening))
            }
            Some(Route::Cohere) => SapParser::Cohere(CohereParser::default()),
            Some(Route::Gemini) => SapParser::Gemini(GeminiParser::default()),
        }
    }

    fn authorize(&self, mode: &ResolvedMode, mut request: WireRequest) -> PendingRequest {
        let auth = Arc::clone(&self.auth);
        let base = mode.base_url.clone();
        let model = mode.model_id.clone();
        let configured = mode.options.deployment_id.clone();
        let group = mode
            .options
            .resource_group
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        Box::pin(async move {
            if route(&model).is_none() {
                return Err(ApiError::new(
                    ErrorKind::InvalidRequest,
                    format!(
                        "`{model}` is not an SAP AI Core model family Switchyard can call (Claude, Nova, OpenAI, Gemini, Perplexity, Mistral or Cohere); check the model id against `switchyard models --provider sapaicore`"
                    ),
                ));
            }
            let deployment = match configured {
                Some(d) => d,
                None => auth.deployment_for(&base, &group, &model).await?,
            };
            let token = auth.token().await?;
            request.url = format!(
                "{base}/v2/inference/deployments/{deployment}/{}",
                request.url
            );
            Ok(request
                .bearer(Some(&token))
                .header("AI-Resource-Group", group)
                .header("AI-Client-Type", "Switchyard"))
        })
    }
}

/// The stream mapper of the model's family.
pub(crate) enum SapParser {
    Converse(ConverseParser),
    Anthropic(AnthropicParser),
    Chat(ChatParser),
    Cohere(CohereParser),
    Gemini(GeminiParser),
}

impl EventParser for SapParser {
    type Event = SseEvent;

    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
    ) {
        match self {
            Self::Converse(p) => p.on_event(event, out),
            Self::Anthropic(p) => p.on_event(event, out),
            Self::Chat(p) => p.on_event(event, out),
            Self::Cohere(p) => p.on_event(event, out),
            Self::Gemini(p) => p.on_event(event, out),
        }
    }

    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        match self {
            Self::Converse(p) => p.on_end(out),
            Self::Anthropic(p) => p.on_end(out),
            Self::Chat(p) => p.on_end(out),
            Self::Cohere(p) => p.on_end(out),
            Self::Gemini(p) => p.on_end(out),
        }
    }
}

/// Bedrock Converse events (`{"contentBlockDelta": …}`, `{"metadata": …}`, …) as SSE data.
#[derive(Debug, Default)]
pub(crate) struct ConverseParser {
    stopped: bool,
    usage_seen: bool,
}

impl EventParser for ConverseParser {
    type Event = SseEvent;

    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
    ) {
        let Some(v) = event_json(&event, out) else {
            return;
        };
        if let Some(delta) = v.pointer("/contentBlockDelta/delta") {
            if let Some(t) = delta
                .get("text")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                out.push(Ok(ApiStreamChunk::text(t)));
            }
            if let Some(r) = delta.get("reasoningContent") {
                if let Some(t) = r
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(Ok(ApiStreamChunk::reasoning(t)));
                }
                if let Some(s) = r.get("signature").and_then(Value::as_str) {
                    out.push(Ok(ApiStreamChunk::reasoning_signature(s)));
                }
            }
        }
        if v.get("messageStop").is_some() {
            self.stopped = true;
        }
        if let Some(u) = v.pointer("/metadata/usage") {
            self.usage_seen = true;
            let count = |k: &str| u.get(k).and_then(Value::as_u64);
            out.push(Ok(ApiStreamChunk::Usage(Usage {
                input_tokens: count("inputTokens").unwrap_or(0),
                output_tokens: count("outputTokens").unwrap_or(0),
                cache_read_tokens: count("cacheReadInputTokens"),
                cache_write_tokens: count("cacheWriteInputTokens"),
                ..Usage::default()
            })));
        }
        // Bedrock's exception events, passed through by SAP AI Core.
        for (key, value) in v.as_object().into_iter().flatten() {
            if key.ends_with("Exception") {
                let message = value
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the model stream failed");
                out.push(Err(ApiError::from_provider(None, Some(key), message, None)));
            }
        }
    }

    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        if !self.stopped && !self.usage_seen {
            out.push(Err(ApiError::new(
                ErrorKind::Network,
                "the stream ended before the response was complete (no messageStop)",
            )));
        }
    }
}

/// Cohere v2 chat events (docs.cohere.com "Streaming"): `content-delta` text and the usage
/// of `message-end`.
#[derive(Debug, Default)]
pub(crate) struct CohereParser {
    ended: bool,
}

impl EventParser for CohereParser {
    type Event = SseEvent;

    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Vec<Result<ApiStreamChunk, ApiError>>,
    ) {
        let Some(v) = event_json(&event, out) else {
            return;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("content-delta") => {
                if let Some(t) = v
                    .pointer("/delta/message/content/text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(Ok(ApiStreamChunk::text(t)));
                }
            }
            Some("message-end") => {
                self.ended = true;
                let u = v
                    .pointer("/delta/usage/tokens")
                    .or_else(|| v.pointer("/delta/usage/billed_units"));
                if let Some(u) = u {
                    let count = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                    out.push(Ok(ApiStreamChunk::Usage(Usage {
                        input_tokens: count("input_tokens"),
                        output_tokens: count("output_tokens"),
                        ..Usage::default()
                    })));
                }
            }
            _ => {}
        }
    }

    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        if !self.ended {
            out.push(Err(ApiError::new(
                ErrorKind::Network,
                "the stream ended before the response was complete (no message-end)",
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_follow_the_reference_lists_then_the_prefixes() {
        assert_eq!(route("anthropic--claude-4.5-sonnet"), Some(Route::Converse));
        assert_eq!(route("anthropic--claude-3.5-sonnet"), Some(Route::Invoke));
        assert_eq!(route("anthropic--claude-9-sonnet"), Some(Route::Converse));
        assert_eq!(route("amazon--nova-pro"), Some(Route::Converse));
        assert_eq!(route("gpt-4o"), Some(Route::OpenAi));
        assert_eq!(route("o3-mini"), Some(Route::OpenAi));
        assert_eq!(route("sonar-pro"), Some(Route::Hosted));
        assert_eq!(
            route("mistralai--mistral-large-instruct"),
            Some(Route::Hosted)
        );
        assert_eq!(route("cohere--command-a-reasoning"), Some(Route::Cohere));
        assert_eq!(route("gemini-2.5-pro"), Some(Route::Gemini));
        assert_eq!(route("meta--llama3-70b"), None);
    }

    #[test]
    fn cohere_events() {
        let mut p = CohereParser::default();
        let mut out = Vec::new();
        for data in [
            r#"{"type":"message-start","id":"m"}"#,
            r#"{"type":"content-delta","index":0,"delta":{"message":{"content":{"text":"Hi"}}}}"#,
            r#"{"type":"message-end","delta":{"finish_reason":"COMPLETE","usage":{"billed_units":{"input_tokens":5,"output_tokens":2},"tokens":{"input_tokens":70,"output_tokens":2}}}}"#,
        ] {
            p.on_event(
                SseEventRef {
                    event: "message",
                    data,
                    id: None,
                    retry: None,
                },
                &mut out,
            );
        }
        p.on_end(&mut out);
        assert!(matches!(&out[0], Ok(ApiStreamChunk::Text { text, .. }) if text == "Hi"));
        assert!(
            matches!(&out[1], Ok(ApiStreamChunk::Usage(u)) if u.input_tokens == 70 && u.output_tokens == 2)
        );
        assert_eq!(out.len(), 2);
    }
}
