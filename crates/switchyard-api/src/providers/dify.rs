//! `dify`: a Dify app's chat API; the model is whatever the app is set up with, reported as
//! `dify-workflow`.
//! Spec: R4.2, R1.3.

use serde_json::{Value, json};

use crate::config::ApiKey;
use crate::error::{ApiError, ErrorKind};
use crate::message::{ContentBlock, Message, Role};
use crate::providers::mapper::{Chunks, JsonEvents, require_end};
use crate::providers::provider::{Prompt, Provider};
use crate::providers::resolve::ResolvedMode;
use crate::stream::{ApiStreamChunk, Usage};
use crate::transport::WireRequest;

pub(crate) struct Dify;

/// The `query` of a request: the system prompt, a `---` line and the conversation so far, earlier
/// turns written out with tool calls and results as text. A handler keeps no state between
/// requests, so each request is a new Dify conversation rather than relying on Dify's memory as the
/// reference does. Images are not sent, since Dify takes them as uploaded files.
pub(crate) fn query(system_prompt: &str, messages: &[Message]) -> String {
    let render = |m: &Message| {
        m.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.clone()),
                ContentBlock::Image { source } => Some(format!(
                    "[Image ({}) not sent: Dify takes images as uploaded files]",
                    source.media_type
                )),
                ContentBlock::ToolUse { name, input, .. } => {
                    Some(format!("[Tool call {name}: {input}]"))
                }
                ContentBlock::ToolResult { content, .. } => {
                    Some(format!("[Tool result: {content}]"))
                }
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let conversation = match messages {
        [] => String::new(),
        [only] => render(only),
        many => many
            .iter()
            .map(|m| {
                let who = match m.role {
                    Role::User => "User",
                    Role::Assistant => "Assistant",
                };
                format!("{who}: {}", render(m))
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
    };
    if system_prompt.is_empty() {
        conversation
    } else {
        format!("{system_prompt}\n\n---\n\n{conversation}")
    }
}

impl Provider for Dify {
    type Parser = DifyParser;

    fn request(&self, mode: &ResolvedMode, prompt: &Prompt<'_>) -> WireRequest {
        let body = json!({
            "inputs": {},
            "query": query(prompt.system_prompt, prompt.messages),
            "response_mode": "streaming",
            "conversation_id": "",
            "user": "switchyard",
            "files": [],
        });
        WireRequest::sse(format!("{}/chat-messages", mode.base_url), &body)
            .bearer(mode.api_key.as_ref().map(ApiKey::expose))
    }

    fn parser(&self, _mode: &ResolvedMode) -> DifyParser {
        DifyParser::default()
    }
}

#[derive(Debug, Default)]
pub(crate) struct DifyParser {
    text_sent: bool,
    ended: bool,
}

impl DifyParser {
    /// `message_replace`: the moderated answer, passed on when nothing was streamed yet, else an
    /// error, since text already shown cannot be taken back.
    #[inline]
    fn on_replace(&mut self, answer: &str, out: &mut Chunks) {
        if self.text_sent {
            out.push(Err(ApiError::new(
                ErrorKind::InvalidRequest,
                format!(
                    "the Dify app's moderation replaced the answer after it had started: {answer}"
                ),
            )));
        } else if !answer.is_empty() {
            self.text_sent = true;
            out.push(Ok(ApiStreamChunk::text(answer)));
        }
    }
}

/// `message_end`'s `metadata.usage`, if it has one. Dify reports no cache; the cost is its
/// `total_price` when the currency is USD.
#[inline]
fn usage(v: &Value) -> Option<ApiStreamChunk> {
    let u = v.pointer("/metadata/usage").filter(|u| u.is_object())?;
    let count = |k: &str| u.get(k).and_then(Value::as_u64);
    let usd = u.get("currency").and_then(Value::as_str) == Some("USD");
    let price = u.get("total_price").and_then(|p| {
        p.as_f64()
            .or_else(|| p.as_str().and_then(|s| s.parse::<f64>().ok()))
    });
    Some(ApiStreamChunk::Usage(Usage {
        input_tokens: count("prompt_tokens").unwrap_or(0),
        output_tokens: count("completion_tokens").unwrap_or(0),
        total_cost_usd: price.filter(|_| usd),
        ..Usage::default()
    }))
}

#[inline]
fn event_error(v: &Value) -> ApiError {
    let text = |key: &str| v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let status = v
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    let message = text("message").unwrap_or("the Dify app reported an error");
    ApiError::from_provider(status, text("code"), message, None)
}

impl JsonEvents for DifyParser {
    fn on_json(&mut self, name: &str, v: &Value, out: &mut Chunks) {
        let text = |key: &str| v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
        match v.get("event").and_then(Value::as_str).unwrap_or(name) {
            "message" | "agent_message" => {
                // Each answer is a delta, not the whole text so far as the reference takes it.
                if let Some(t) = text("answer") {
                    self.text_sent = true;
                    out.push(Ok(ApiStreamChunk::text(t)));
                }
            }
            "agent_thought" => {
                if let Some(t) = text("thought") {
                    out.push(Ok(ApiStreamChunk::reasoning(t)));
                }
            }
            "message_replace" => self.on_replace(text("answer").unwrap_or(""), out),
            "message_end" => {
                self.ended = true;
                out.extend(usage(v).map(Ok));
            }
            "error" => out.push(Err(event_error(v))),
            _ => {}
        }
    }

    fn on_json_end(&mut self, out: &mut Chunks) {
        require_end(self.ended, "message_end", out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_query_is_the_reference_one_and_later_ones_carry_the_conversation() {
        assert_eq!(
            query("SYS", &[Message::user_text("hi")]),
            "SYS\n\n---\n\nhi"
        );
        let q = query(
            "SYS",
            &[
                Message::user_text("a"),
                Message::assistant_text("b"),
                Message::user_text("c"),
            ],
        );
        assert_eq!(q, "SYS\n\n---\n\nUser: a\n\nAssistant: b\n\nUser: c");
    }
}
