//! `claude-code`: the Claude Code CLI as a child process with its own sign-in, run as the reference
//! runs it; `process.rs` kills the child when the stream ends early.
//! Spec: R4.2, R1.3.

mod stream;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::handler::{
    ApiHandler, ApiHandlerModel, DEFAULT_DEADLINES, Deadlines, RequestOptions, RequestOverrides,
    ResolvedDeadlines,
};
use crate::message::{ContentBlock, Message, ToolSpec};
use crate::private_file;
use crate::process::{self, ProcessRequest, TempFile};
use crate::providers::presets::secret_variables;
use crate::providers::resolve::ResolvedMode;
use crate::stream::ApiStream;
use crate::transport::Origin;
use stream::ClaudeCodeParser;

/// The longest system prompt passed as an argument, in characters; longer ones go in a file.
pub(crate) const MAX_SYSTEM_PROMPT_ARG: usize = 65_536;

/// The CLI's built-in tools, all disallowed: only the task's own tools, one turn at a time.
pub(crate) const DISALLOWED_TOOLS: &str = "Task,TaskOutput,Bash,Glob,Grep,Read,Edit,Write,NotebookEdit,WebFetch,TodoWrite,WebSearch,TaskStop,AskUserQuestion,Skill,EnterPlanMode,ExitPlanMode,EnterWorktree,ExitWorktree,CronCreate,CronDelete,CronList,ToolSearch";

/// The first-content deadline unless configured: the CLI prints each message only when whole.
pub(crate) const FIRST_CONTENT_DEADLINE: Duration = Duration::from_secs(600);

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

    /// The run for one request, the conversation as JSON on standard input.
    fn run(
        &self,
        system_prompt: &str,
        messages: &[Message],
        o: &RequestOverrides,
    ) -> ProcessRequest {
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
        // The CLI uses its own sign-in, never the user's API key, and no key set for Switchyard
        // reaches another program. The AWS credentials stay, for a CLI set up to use Bedrock.
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
            env_set: overridden_env(self.mode.thinking_budget_tokens, o),
            stdin: conversation_json(messages).into_bytes(),
            _temp_files: temp_files,
            stderr_hints: vec![(
                "unknown option '--system-prompt-file'",
                "this `claude` is too old for a system prompt this long; update Claude Code",
            )],
        }
    }
}

/// The thinking budget, a caller's else the mode's, and a caller's output limit, which otherwise
/// defaults to 32,000 unless the user's own `CLAUDE_CODE_MAX_OUTPUT_TOKENS` is set.
fn overridden_env(budget: u64, o: &RequestOverrides) -> Vec<(String, String)> {
    let budget = o.thinking_budget_tokens.unwrap_or(budget);
    let mut env = vec![("MAX_THINKING_TOKENS".into(), budget.to_string())];
    if let Some(n) = o.max_tokens {
        env.push(("CLAUDE_CODE_MAX_OUTPUT_TOKENS".into(), n.to_string()));
    }
    env
}

/// What of a caller's overrides reaches the CLI, through the variables its settings documentation
/// names; it has no switch for sampling, stop sequences, tool choice or effort.
/// Spec: R14.2.
const CLAUDE_CODE_CARRIES: &[&str] = &["max_tokens", "thinking"];

/// The overrides of `o` the CLI cannot carry: all set but [`CLAUDE_CODE_CARRIES`].
fn dropped(o: &RequestOverrides) -> Vec<&'static str> {
    let set = [
        ("max_tokens", o.max_tokens.is_some()),
        ("temperature", o.temperature.is_some()),
        ("top_p", o.top_p.is_some()),
        ("stop", !o.stop.is_empty()),
        ("tool_choice", o.tool_choice.is_some()),
        ("reasoning_effort", o.reasoning_effort.is_some()),
        ("thinking", o.thinking_budget_tokens.is_some()),
    ];
    set.into_iter()
        .filter(|(name, set)| *set && !CLAUDE_CODE_CARRIES.contains(name))
        .map(|(name, _)| name)
        .collect()
}

/// A fresh file private to the user holding the system prompt, removed with the request.
fn write_prompt_file(text: &str) -> std::io::Result<TempFile> {
    let path = private_file::unique_path(&std::env::temp_dir(), "switchyard-system-prompt", "txt");
    private_file::create(&path, text.as_bytes())?;
    Ok(TempFile(path))
}

/// The conversation as the CLI reads it on standard input: the Anthropic message array as JSON,
/// images replaced by a note since the CLI takes none this way.
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
            Arc::new(self.run(system_prompt, messages, &options.overrides)),
            ClaudeCodeParser::default,
            options,
        )
    }

    fn dropped_overrides(&self, o: &RequestOverrides) -> Vec<&'static str> {
        dropped(o)
    }

    fn get_model(&self) -> ApiHandlerModel {
        self.mode.handler_model()
    }

    fn provider_id(&self) -> &str {
        &self.mode.provider_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let run = handler.run("s", &[], &RequestOverrides::default());
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
}
