//! Claude Code's `stream-json` lines mapped to stream chunks: assistant messages' blocks, the API
//! errors the CLI writes in place of an answer, and the final `result`. Its usage is Anthropic's;
//! the cost is the CLI's `total_cost_usd`, 0 on a subscription, which bills no tokens.
//! Spec: R1.2, R1.3, R7.

use serde_json::Value;

use crate::error::{ApiError, ErrorKind};
use crate::providers::anthropic;
use crate::providers::mapper::Chunks;
use crate::providers::provider::parse_json;
use crate::stream::{ApiStreamChunk, Usage};
use crate::transport::EventParser;

#[derive(Debug, Default)]
pub(crate) struct ClaudeCodeParser {
    /// `apiKeySource` of the `init` line was not `none`: tokens are billed.
    paid: Option<bool>,
    usage: Usage,
    finished: bool,
}

/// The error kind of an assistant message's `error` field, one of the CLI's error names.
fn error_kind(name: &str) -> ErrorKind {
    match name {
        "rate_limit" => ErrorKind::RateLimited,
        "authentication_failed" => ErrorKind::Auth,
        "billing_error" => ErrorKind::QuotaExceeded,
        "invalid_request" => ErrorKind::InvalidRequest,
        _ => ErrorKind::Server,
    }
}

/// An `API Error: 529 {json}` text the CLI puts in place of an answer: the status and the
/// Anthropic error object after it, classified as from the API itself.
fn api_error_text(text: &str) -> ApiError {
    let status = text
        .trim_start_matches("API Error")
        .trim_start_matches(':')
        .split_whitespace()
        .next()
        .and_then(|s| s.parse::<u16>().ok());
    let parsed = text
        .find('{')
        .and_then(|i| serde_json::from_str::<Value>(&text[i..]).ok());
    let Some(v) = parsed else {
        return ApiError::from_provider(status, None, text, None);
    };
    let e = &v["error"];
    let code = e.get("type").and_then(Value::as_str);
    let message = e.get("message").and_then(Value::as_str).unwrap_or(text);
    let mut err = ApiError::from_provider(status, code, message, None);
    if message.contains("Invalid model name") {
        err.message.push_str(
            "; API keys and subscription plans allow different models: choose one your plan includes",
        );
    }
    err
}

impl ClaudeCodeParser {
    fn on_assistant(&mut self, v: &Value, out: &mut Chunks) {
        let message = &v["message"];
        let blocks = message
            .get("content")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let first_text = blocks
            .first()
            .and_then(|b| b.get("text"))
            .and_then(Value::as_str);
        let error = v
            .get("error")
            .or_else(|| message.get("error"))
            .and_then(Value::as_str);
        if let Some(name) = error {
            let text =
                first_text.map_or_else(|| format!("Claude Code error: {name}"), str::to_owned);
            let err = if text.starts_with("API Error") {
                api_error_text(&text)
            } else {
                ApiError::new(error_kind(name), text)
            };
            return out.push(Err(err));
        }
        if message.get("stop_reason").is_some_and(|r| !r.is_null()) {
            if let Some(text) = first_text.filter(|t| t.starts_with("API Error")) {
                return out.push(Err(api_error_text(text)));
            }
        }
        for block in blocks {
            let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
            match block.get("type").and_then(Value::as_str) {
                Some("text") if !text("text").is_empty() => {
                    out.push(Ok(ApiStreamChunk::text(text("text"))));
                }
                Some("text") => {}
                Some("thinking") => {
                    if !text("thinking").is_empty() {
                        out.push(Ok(ApiStreamChunk::reasoning(text("thinking"))));
                    }
                    if !text("signature").is_empty() {
                        out.push(Ok(ApiStreamChunk::reasoning_signature(text("signature"))));
                    }
                }
                Some("redacted_thinking") => {
                    out.push(Ok(ApiStreamChunk::redacted_reasoning(text("data"))));
                }
                Some("tool_use") => out.push(Ok(ApiStreamChunk::tool_call(
                    text("id"),
                    text("name"),
                    block
                        .get("input")
                        .map_or_else(|| "{}".to_owned(), Value::to_string),
                ))),
                Some(other) => {
                    // A newer block type: its text when it has one, else nothing.
                    if !text("text").is_empty() {
                        out.push(Ok(ApiStreamChunk::text(text("text"))));
                    } else {
                        tracing::debug!("claude-code: skipped a `{other}` content block");
                    }
                }
                None => {}
            }
        }
        if let Some(u) = message.get("usage") {
            anthropic::merge_usage(&mut self.usage, u);
        }
    }

    fn on_result(&mut self, v: &Value, out: &mut Chunks) {
        self.finished = true;
        if v.get("is_error").and_then(Value::as_bool) == Some(true) {
            let text = v
                .get("result")
                .and_then(Value::as_str)
                .or_else(|| {
                    v.get("errors")
                        .and_then(Value::as_array)
                        .and_then(|e| e.first())
                        .and_then(Value::as_str)
                })
                .unwrap_or("Claude Code reported an error");
            let status = v
                .get("api_error_status")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok());
            let err = if text.starts_with("API Error") {
                api_error_text(text)
            } else {
                ApiError::from_provider(
                    status,
                    None,
                    &format!("Claude Code returned an error: {text}"),
                    None,
                )
            };
            return out.push(Err(err));
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            anthropic::merge_usage(&mut self.usage, u);
        }
        let cost = v.get("total_cost_usd").and_then(Value::as_f64);
        self.usage.total_cost_usd = match self.paid {
            Some(false) => Some(0.0),
            _ => cost,
        };
        out.push(Ok(ApiStreamChunk::Usage(self.usage.clone())));
    }
}

impl EventParser for ClaudeCodeParser {
    type Event = String;

    fn on_event(&mut self, line: String, out: &mut Chunks) {
        let line = line.trim();
        // The CLI's own notices, such as a deprecation or an update hint, are not stream lines.
        if !line.starts_with('{') {
            return;
        }
        let v = match parse_json(line) {
            Ok(v) => v,
            Err(e) => return out.push(Err(*e)),
        };
        match v.get("type").and_then(Value::as_str) {
            Some("system") if v.get("subtype").and_then(Value::as_str) == Some("init") => {
                self.paid = v
                    .get("apiKeySource")
                    .and_then(Value::as_str)
                    .map(|s| s != "none");
            }
            Some("assistant") => self.on_assistant(&v, out),
            Some("result") => self.on_result(&v, out),
            // Its own tool results, rate-limit notices and partial messages: nothing to hand on.
            _ => {}
        }
    }

    fn on_end(&mut self, out: &mut Chunks) {
        if !self.finished {
            out.push(Err(ApiError::new(
                ErrorKind::Network,
                "Claude Code ended before its result line; the run was cut short",
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(lines: &[&str]) -> Vec<Result<ApiStreamChunk, ApiError>> {
        let mut p = ClaudeCodeParser::default();
        let mut out = Vec::new();
        for l in lines {
            p.on_event((*l).to_owned(), &mut out);
        }
        p.on_end(&mut out);
        out
    }

    #[test]
    fn api_errors_in_place_of_an_answer_are_classified() {
        let out = map(&[
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}],"stop_reason":"stop_sequence"}}"#,
        ]);
        let err = out[0].as_ref().unwrap_err();
        assert_eq!(err.kind, ErrorKind::Overloaded, "{err:?}");
        let out = map(&[
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"You've hit your limit"}]},"error":"rate_limit"}"#,
        ]);
        assert_eq!(out[0].as_ref().unwrap_err().kind, ErrorKind::RateLimited);
        let out = map(&[
            r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key"}"#,
        ]);
        assert_eq!(out[0].as_ref().unwrap_err().kind, ErrorKind::Auth);
    }

    #[test]
    fn tool_use_blocks_are_whole_tool_calls() {
        let out = map(&[
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.rs"}}],"stop_reason":null}}"#,
        ]);
        assert!(
            matches!(&out[0], Ok(ApiStreamChunk::ToolCalls { id, name, arguments_delta, .. })
                if id == "toolu_1" && name == "read_file" && arguments_delta == r#"{"path":"a.rs"}"#),
            "{out:?}"
        );
    }

    #[test]
    fn subscriptions_cost_nothing_and_a_missing_result_is_an_error() {
        let out = map(&[
            r#"{"type":"system","subtype":"init","apiKeySource":"none"}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.25,"usage":{"input_tokens":3,"output_tokens":4}}"#,
        ]);
        assert!(
            matches!(&out[..], [Ok(ApiStreamChunk::Usage(u))] if u.total_cost_usd == Some(0.0) && u.output_tokens == 4),
            "{out:?}"
        );
        let out =
            map(&[r#"{"type":"system","subtype":"init","apiKeySource":"ANTHROPIC_API_KEY"}"#]);
        assert!(
            matches!(&out[..], [Err(e)] if e.kind == ErrorKind::Network),
            "{out:?}"
        );
    }
}
