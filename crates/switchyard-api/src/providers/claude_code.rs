//! `claude-code`: the Claude Code CLI (`claude`) as a child process, with its own sign-in
//! (a Claude subscription or whatever it is configured for), its `stream-json` output mapped
//! to stream chunks. The transport is `process.rs`: cancelling or dropping the stream kills
//! the child.
//!
//! The run, as the reference's (Cline v4.0.10, `integrations/claude-code/run.ts` and
//! `core/api/providers/claude-code.ts`):
//! `claude --system-prompt PROMPT --verbose --output-format stream-json --disallowedTools
//! LIST --max-turns 1 --model ID -p`, the conversation as JSON on standard input (images
//! replaced by a note: the CLI takes none this way), the system prompt in a file
//! (`--system-prompt-file`) when it is longer than 65,536 characters. Its built-in tools are
//! disallowed: the task's own tools and answers are what is wanted, one turn at a time.
//!
//! Environment: `ANTHROPIC_API_KEY` is removed, so the CLI uses its own sign-in and never the
//! user's API key — and so are the key variables of every other provider (a key set for
//! Switchyard is never handed to another program). `MAX_THINKING_TOKENS` is the thinking
//! budget; `CLAUDE_CODE_MAX_OUTPUT_TOKENS` (32,000, the CLI's limit),
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` and `DISABLE_NON_ESSENTIAL_MODEL_CALLS` default
//! as in the reference unless set. The AWS and Google credential variables stay, for a CLI
//! set up to use Bedrock or Vertex.
//!
//! Stream (`--output-format stream-json`, one JSON object per line): `system` `init`
//! (`apiKeySource` `none` means a subscription), `assistant` messages (Anthropic message
//! objects: `text`, `thinking`, `redacted_thinking`, `tool_use` blocks; an `error` field on a
//! failed request), `user` messages (the CLI's own tool results, ignored), `rate_limit_event`,
//! and the final `result` (`is_error`, `total_cost_usd`, `usage`).
//!
//! Usage rule (SPEC R1.3): Anthropic's, `input_tokens` already uncached; cache reads and
//! writes from `cache_read_input_tokens` / `cache_creation_input_tokens`. The cost is the
//! CLI's `total_cost_usd`, and 0 on a subscription (`apiKeySource` `none`), as in the
//! reference: a subscription bills no tokens.
//!
//! The CLI prints each assistant message when it is complete (the reference asks for no
//! partial messages), so the answer arrives whole: the first-content deadline of this
//! provider is 600 s (the reference's ten-minute process timeout) unless configured.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::error::{ApiError, ErrorKind};
use crate::handler::{
    ApiHandler, ApiHandlerModel, DEFAULT_DEADLINES, Deadlines, RequestOptions, ResolvedDeadlines,
};
use crate::message::{ContentBlock, Message, ToolSpec};
use crate::private_file;
use crate::process::{self, ProcessRequest, TempFile};
use crate::providers::anthropic;
use crate::providers::presets::secret_variables;
use crate::providers::provider::parse_json;
use crate::providers::resolve::ResolvedMode;
use crate::stream::{ApiStream, ApiStreamChunk, Usage};
use crate::transport::{EventParser, Origin};

/// Longest system prompt passed as an argument, in characters; longer ones go in a file
/// (`MAX_SYSTEM_PROMPT_LENGTH` in the reference: argument lists are limited).
pub(crate) const MAX_SYSTEM_PROMPT_ARG: usize = 65_536;

/// The CLI's built-in tools, all disallowed (the reference's list, kept in step with what
/// `claude --output-format stream-json` reports).
pub(crate) const DISALLOWED_TOOLS: &str = "Task,TaskOutput,Bash,Glob,Grep,Read,Edit,Write,NotebookEdit,WebFetch,TodoWrite,WebSearch,TaskStop,AskUserQuestion,Skill,EnterPlanMode,ExitPlanMode,EnterWorktree,ExitWorktree,CronCreate,CronDelete,CronList,ToolSearch";

/// The first-content deadline of this provider unless configured: the reference's process
/// timeout (`CLAUDE_CODE_TIMEOUT`, 10 minutes), since the answer arrives whole.
pub(crate) const FIRST_CONTENT_DEADLINE: Duration = Duration::from_secs(600);

/// The `claude-code` handler: configuration only.
pub(crate) struct ClaudeCode {
    mode: ResolvedMode,
    deadlines: ResolvedDeadlines,
}

impl ClaudeCode {
    fn new(mode: ResolvedMode) -> Self {
        let deadlines = DEFAULT_DEADLINES
            .with(Deadlines {
                first_content: Some(FIRST_CONTENT_DEADLINE),
                idle: None,
            })
            .with(mode.deadlines);
        Self { mode, deadlines }
    }

    pub(crate) fn boxed(mode: ResolvedMode) -> Box<dyn ApiHandler> {
        Box::new(Self::new(mode))
    }

    fn program(&self) -> String {
        self.mode
            .options
            .command
            .clone()
            .unwrap_or_else(|| "claude".to_owned())
    }

    /// The run for one request: arguments, environment and standard input (see the module
    /// docs).
    fn run(&self, system_prompt: &str, messages: &[Message]) -> ProcessRequest {
        let mut temp_files = Vec::new();
        let prompt_arg = if system_prompt.chars().count() > MAX_SYSTEM_PROMPT_ARG {
            match write_prompt_file(system_prompt) {
                Ok(file) => {
                    let path = file.0.display().to_string();
                    temp_files.push(file);
                    ("--system-prompt-file", path)
                }
                // The argument may still fit; the CLI's error says so if it does not.
                Err(_) => ("--system-prompt", system_prompt.to_owned()),
            }
        } else {
            ("--system-prompt", system_prompt.to_owned())
        };
        let args = [
            prompt_arg.0,
            &prompt_arg.1,
            "--verbose",
            "--output-format",
            "stream-json",
            "--disallowedTools",
            DISALLOWED_TOOLS,
            "--max-turns",
            "1",
            "--model",
            &self.mode.model_id,
            "-p",
        ]
        .map(str::to_owned)
        .to_vec();
        let mut env_remove: Vec<String> = secret_variables().map(str::to_owned).collect();
        env_remove.retain(|v| !v.starts_with("AWS_"));
        env_remove.push("ANTHROPIC_API_KEY".to_owned());
        env_remove.sort();
        env_remove.dedup();
        ProcessRequest {
            program: self.program(),
            args,
            env_remove,
            env_defaults: vec![
                ("CLAUDE_CODE_MAX_OUTPUT_TOKENS".into(), "32000".into()),
                (
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                    "1".into(),
                ),
                ("DISABLE_NON_ESSENTIAL_MODEL_CALLS".into(), "1".into()),
            ],
            env_set: vec![(
                "MAX_THINKING_TOKENS".into(),
                self.mode.thinking_budget_tokens.to_string(),
            )],
            stdin: conversation_json(messages).into_bytes(),
            _temp_files: temp_files,
            stderr_hints: vec![(
                "unknown option '--system-prompt-file'",
                "this `claude` is too old for a system prompt this long; update Claude Code",
            )],
        }
    }
}

/// A fresh file holding the system prompt (private to the user), removed with the request.
fn write_prompt_file(text: &str) -> std::io::Result<TempFile> {
    let path = private_file::unique_path(&std::env::temp_dir(), "switchyard-system-prompt", "txt");
    private_file::create(&path, text.as_bytes())?;
    Ok(TempFile(path))
}

/// The conversation as the CLI reads it on standard input: the Anthropic message array as
/// JSON, image blocks replaced by a text note (the reference's `filterMessagesForClaudeCode`).
pub(crate) fn conversation_json(messages: &[Message]) -> String {
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| {
            let content: Vec<Value> = m
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Image { source } => json!({
                        "type": "text",
                        "text": format!("[Image ({}): {} not supported by Claude Code]", source.kind, source.media_type),
                    }),
                    other => serde_json::to_value(other).unwrap_or(Value::Null),
                })
                .collect();
            json!({ "role": m.role, "content": content })
        })
        .collect();
    Value::Array(messages).to_string()
}

impl ApiHandler for ClaudeCode {
    fn create_message(
        &self,
        system_prompt: &str,
        messages: &[Message],
        _tools: &[ToolSpec],
        options: RequestOptions,
    ) -> ApiStream {
        let origin = Origin {
            provider_id: self.mode.provider_id.clone(),
            model_id: self.mode.model_id.clone(),
            base_url: self.program(),
        };
        process::stream(
            origin,
            self.mode.preset.retry,
            self.deadlines,
            Arc::new(self.run(system_prompt, messages)),
            ClaudeCodeParser::default,
            options,
        )
    }

    fn get_model(&self) -> ApiHandlerModel {
        self.mode.handler_model()
    }

    fn provider_id(&self) -> &str {
        &self.mode.provider_id
    }
}

/// Maps `stream-json` lines to chunks.
#[derive(Debug, Default)]
pub(crate) struct ClaudeCodeParser {
    /// `apiKeySource` of the `init` line was not `none`: tokens are billed.
    paid: Option<bool>,
    usage: Usage,
    finished: bool,
}

/// The error kind of an assistant message's `error` field (the CLI's error names).
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
    fn on_assistant(&mut self, v: &Value, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
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

    fn on_result(&mut self, v: &Value, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
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

    fn on_event(&mut self, line: String, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
        let line = line.trim();
        // The CLI's own notices (a deprecation, an update hint) are not stream lines.
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
            // Its own tool results, rate-limit notices, partial-message events: nothing to
            // hand on.
            _ => {}
        }
    }

    fn on_end(&mut self, out: &mut Vec<Result<ApiStreamChunk, ApiError>>) {
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
    fn the_child_sees_no_provider_key_but_keeps_cloud_credentials() {
        let config = crate::ApiConfiguration::from_toml(
            "[act]\nprovider = \"claude-code\"\n",
            "t.toml",
            |_| None,
        )
        .unwrap();
        let mode = crate::resolve_mode(&config, crate::Mode::Act).unwrap();
        assert_eq!(mode.model_id, "claude-sonnet-5", "the reference's default");
        let handler = ClaudeCode::new(mode);
        let run = handler.run("s", &[]);
        for var in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "OPENROUTER_API_KEY",
            "GEMINI_API_KEY",
        ] {
            assert!(run.env_remove.iter().any(|v| v == var), "{var}");
        }
        assert!(!run.env_remove.iter().any(|v| v.starts_with("AWS_")));
        assert_eq!(run.program, "claude");
        assert_eq!(run.stdin, b"[]");
        assert_eq!(handler.deadlines.first_content, FIRST_CONTENT_DEADLINE);
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
