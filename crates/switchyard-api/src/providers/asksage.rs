//! `asksage`: AskSage's REST API, which answers with one JSON document, so its first-content
//! deadline defaults to 600 s; no tools or images. Its cost comes from the model's prices, since
//! `usage.asksage_tokens` counts AskSage tokens, not the dollars the reference takes them for.
//! Spec: R4.2.

use serde_json::{Value, json};

use crate::config::ApiKey;
use crate::error::{ApiError, ErrorKind};
use crate::message::{ContentBlock, Role};
use crate::providers::provider::{Prompt, Provider, parse_json};
use crate::providers::resolve::ResolvedMode;
use crate::stream::{ApiStreamChunk, Usage};
use crate::transport::{EventParser, WireRequest};
use crate::wire::JsonDocument;

pub(crate) struct AskSage;

pub(crate) fn request_body(mode: &ResolvedMode, prompt: &Prompt<'_>) -> Value {
    let messages: Vec<Value> = prompt
        .messages
        .iter()
        .map(|m| {
            let text: String = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    ContentBlock::ToolResult { content, .. } => Some(content.as_str()),
                    _ => None,
                })
                .collect();
            let user = match m.role {
                Role::User => "me",
                Role::Assistant => "gpt",
            };
            json!({ "user": user, "message": text })
        })
        .collect();
    json!({
        "system_prompt": prompt.system_prompt,
        "message": messages,
        "model": mode.model_id,
        "dataset": "none",
        "usage": true,
    })
}

impl Provider for AskSage {
    type Parser = AskSageParser;

    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        WireRequest::json(
            format!("{}/query", mode.base_url),
            &request_body(mode, prompt),
        )
        .header("accept", "application/json")
        .header_opt("x-access-tokens", mode.api_key.as_ref().map(ApiKey::expose))
    }

    fn parser(&self, _mode: &ResolvedMode) -> AskSageParser {
        AskSageParser
    }
}

#[derive(Debug, Default)]
pub(crate) struct AskSageParser;

impl EventParser for AskSageParser {
    type Event = JsonDocument;

    fn on_event(&mut self, doc: JsonDocument, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        let v = match parse_json(&doc.0) {
            Ok(v) => v,
            Err(e) => return out.push(Err(*e)),
        };
        let status = v.get("status").and_then(Value::as_u64);
        let message = v.get("message").and_then(Value::as_str).unwrap_or("");
        if status.is_some_and(|s| s >= 400) {
            let code = status.and_then(|s| u16::try_from(s).ok());
            let text = if message.is_empty() {
                v.get("response")
                    .and_then(Value::as_str)
                    .unwrap_or("AskSage reported an error")
            } else {
                message
            };
            return out.push(Err(ApiError::from_provider(code, None, text, None)));
        }
        if message.is_empty() {
            return out.push(Err(ApiError::new(
                ErrorKind::Server,
                "AskSage answered without a message",
            )));
        }
        for response in v
            .get("tool_responses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.push(Ok(ApiStreamChunk::text(format!(
                "[Tool Response: {response}]\n"
            ))));
        }
        out.push(Ok(ApiStreamChunk::text(message)));
        if let Some(u) = v.pointer("/usage/model_tokens") {
            let count = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            out.push(Ok(ApiStreamChunk::Usage(Usage {
                input_tokens: count("prompt_tokens"),
                output_tokens: count("completion_tokens"),
                ..Usage::default()
            })));
        }
    }

    fn on_end(&mut self, _out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {}
}
