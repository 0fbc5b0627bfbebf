//! `claude-code` against a stub `claude` executable: a small shell script written by each test
//! that records its arguments, environment and standard input and prints a recorded
//! `stream-json` run (`tests/fixtures/claude_code/`). Checked: the command line and
//! environment the reference uses, the conversation on standard input, the chunks and cost,
//! a long system prompt through a file, a rate limit started again, a failed exit, a missing
//! program, and cancellation and dropping killing the child.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use switchyard_api::message::ImageSource;
use switchyard_api::{
    ApiConfiguration, ApiError, ApiHandler, ApiStreamChunk, CancellationToken, ContentBlock,
    ErrorKind, Message, Mode, RequestOptions, RetryStatus, Role, build_api_handler,
};
use switchyard_testkit::{require_program, test_data_dir};

fn fixture(name: &str) -> PathBuf {
    test_data_dir().join("fixtures/claude_code").join(name)
}

/// Writes an executable `claude` stub into `dir` running `body` (sh), with `$DIR` the folder.
fn stub(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("claude");
    let script = format!("#!/bin/sh\nDIR='{}'\n{body}\n", dir.display());
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A stub that records argv, environment and stdin, then prints `fixture`.
fn recording_stub(dir: &Path, fixture_file: &Path) -> PathBuf {
    stub(
        dir,
        &format!(
            "printf '%s\\n' \"$@\" > \"$DIR/argv\"\nenv > \"$DIR/env\"\ncat > \"$DIR/stdin\"\ncat '{}'",
            fixture_file.display()
        ),
    )
}

fn handler(program: &Path, mode_extra: &str, endpoint_extra: &str) -> Box<dyn ApiHandler> {
    let text = format!(
        "[act]\nprovider = \"claude-code\"\nmodel = \"claude-sonnet-4-5-20250929\"\n{mode_extra}\n[providers.claude-code]\ncommand = \"{}\"\n{endpoint_extra}\n",
        program.display()
    );
    let config = ApiConfiguration::from_toml(&text, "t.toml", |_| None).unwrap();
    build_api_handler(&config, Mode::Act).unwrap()
}

fn have_sh() -> bool {
    require_program("sh", "install a POSIX shell (dash or bash)")
}

async fn collect(
    h: &dyn ApiHandler,
    system: &str,
    messages: &[Message],
) -> Vec<Result<ApiStreamChunk, ApiError>> {
    h.create_message(system, messages, &[], RequestOptions::default())
        .collect()
        .await
}

fn conversation() -> Vec<Message> {
    vec![
        Message::user_text("What is borrowing?"),
        Message::assistant_text("Ask away."),
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::Text {
                    text: "In one sentence.".into(),
                },
                ContentBlock::Image {
                    source: ImageSource {
                        kind: "base64".into(),
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    },
                },
            ],
        },
    ]
}

#[tokio::test]
async fn streams_the_recorded_run_with_the_reference_command_line_and_input() {
    if !have_sh() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = recording_stub(dir.path(), &fixture("subscription.ndjson"));
    let h = handler(&program, "thinking_budget_tokens = 2048", "");
    assert_eq!(h.provider_id(), "claude-code");
    let items = collect(h.as_ref(), "You are terse.", &conversation()).await;

    let argv = std::fs::read_to_string(dir.path().join("argv")).unwrap();
    let argv: Vec<&str> = argv.lines().collect();
    assert_eq!(
        argv,
        [
            "--system-prompt",
            "You are terse.",
            "--verbose",
            "--output-format",
            "stream-json",
            "--disallowedTools",
            "Task,TaskOutput,Bash,Glob,Grep,Read,Edit,Write,NotebookEdit,WebFetch,TodoWrite,WebSearch,TaskStop,AskUserQuestion,Skill,EnterPlanMode,ExitPlanMode,EnterWorktree,ExitWorktree,CronCreate,CronDelete,CronList,ToolSearch",
            "--max-turns",
            "1",
            "--model",
            "claude-sonnet-4-5-20250929",
            "-p",
        ]
    );
    let env = std::fs::read_to_string(dir.path().join("env")).unwrap();
    assert!(
        env.lines().any(|l| l == "MAX_THINKING_TOKENS=2048"),
        "{env}"
    );
    assert!(
        env.lines()
            .any(|l| l.starts_with("CLAUDE_CODE_MAX_OUTPUT_TOKENS=")),
        "{env}"
    );
    assert!(!env.lines().any(|l| l.starts_with("ANTHROPIC_API_KEY=")));
    // The conversation as JSON, the image replaced by a note.
    let stdin: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("stdin")).unwrap()).unwrap();
    assert_eq!(
        stdin,
        json!([
            {"role": "user", "content": [{"type": "text", "text": "What is borrowing?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Ask away."}]},
            {"role": "user", "content": [
                {"type": "text", "text": "In one sentence."},
                {"type": "text", "text": "[Image (base64): image/png not supported by Claude Code]"}
            ]},
        ])
    );

    let items: Vec<ApiStreamChunk> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(items.len(), 4, "{items:?}");
    assert!(
        matches!(&items[0], ApiStreamChunk::Reasoning { reasoning, .. } if reasoning.starts_with("The question is about borrowing"))
    );
    assert!(
        matches!(&items[1], ApiStreamChunk::Reasoning { reasoning, signature: Some(s), .. } if reasoning.is_empty() && s.starts_with("EqcD"))
    );
    assert!(
        matches!(&items[2], ApiStreamChunk::Text { text, .. } if text.starts_with("A value has one owner") && text.contains("«at compile time»"))
    );
    let ApiStreamChunk::Usage(u) = &items[3] else {
        panic!("{items:?}");
    };
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_write_tokens,
            u.cache_read_tokens
        ),
        (9, 61, Some(3402), Some(11210))
    );
    // A subscription (apiKeySource "none") bills no tokens.
    assert_eq!(u.total_cost_usd, Some(0.0));
}

#[tokio::test]
async fn a_run_on_an_api_key_reports_the_cli_cost() {
    if !have_sh() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = recording_stub(dir.path(), &fixture("api_key.ndjson"));
    let items = collect(handler(&program, "", "").as_ref(), "s", &conversation()).await;
    let Some(Ok(ApiStreamChunk::Usage(u))) = items.last() else {
        panic!("{items:?}");
    };
    assert_eq!(u.total_cost_usd, Some(0.0194283));
    let env = std::fs::read_to_string(dir.path().join("env")).unwrap();
    assert!(env.lines().any(|l| l == "MAX_THINKING_TOKENS=0"), "{env}");
}

#[tokio::test]
async fn a_long_system_prompt_goes_through_a_file_removed_afterwards() {
    if !have_sh() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = stub(
        dir.path(),
        &format!(
            "printf '%s\\n' \"$@\" > \"$DIR/argv\"\ncat \"$2\" > \"$DIR/prompt\"\ncat > /dev/null\ncat '{}'",
            fixture("subscription.ndjson").display()
        ),
    );
    let prompt = "rule ".repeat(20_000);
    let items = collect(handler(&program, "", "").as_ref(), &prompt, &conversation()).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let argv = std::fs::read_to_string(dir.path().join("argv")).unwrap();
    let mut args = argv.lines();
    assert_eq!(args.next(), Some("--system-prompt-file"));
    let file = args.next().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("prompt")).unwrap(),
        prompt
    );
    assert!(!Path::new(file).exists(), "the prompt file is removed");
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_before_any_content_starts_the_cli_again() {
    if !have_sh() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The first run is rate limited (exit 1), the second answers.
    let program = stub(
        dir.path(),
        &format!(
            "cat > /dev/null\nif [ -e \"$DIR/ran\" ]; then cat '{}'; else touch \"$DIR/ran\"; cat '{}'; exit 1; fi",
            fixture("subscription.ndjson").display(),
            fixture("rate_limited.ndjson").display()
        ),
    );
    // No deadline timers, so the paused clock only jumps over the retry wait.
    let h = handler(
        &program,
        "",
        "first_content_timeout_seconds = 0\nidle_timeout_seconds = 0",
    );
    let retries = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&retries);
    let options = RequestOptions {
        on_retry: Some(Arc::new(move |s: RetryStatus| sink.lock().unwrap().push(s))),
        ..RequestOptions::default()
    };
    let items: Vec<_> = h
        .create_message("s", &conversation(), &[], options)
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let retries = retries.lock().unwrap();
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].error.kind, ErrorKind::RateLimited);
    assert!(
        retries[0].error.message.contains("usage limit"),
        "{}",
        retries[0].error
    );
    assert_eq!((retries[0].attempt, retries[0].max_attempts), (1, 4));
    assert!(
        retries[0].delay >= Duration::from_millis(1800),
        "{:?}",
        retries[0].delay
    );
}

#[tokio::test]
async fn a_failed_exit_is_an_error_with_the_cli_last_words() {
    if !have_sh() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = stub(
        dir.path(),
        "cat > /dev/null\necho 'warming up' >&2\necho 'Invalid API key · Please run /login' >&2\nexit 1",
    );
    let items = collect(handler(&program, "", "").as_ref(), "s", &conversation()).await;
    let [Err(e)] = &items[..] else {
        panic!("{items:?}");
    };
    assert!(e.message.contains("exited with code 1"), "{e}");
    assert!(
        e.message.contains("Invalid API key · Please run /login"),
        "{e}"
    );
    assert_eq!(e.provider_id.as_deref(), Some("claude-code"));
}

#[tokio::test]
async fn a_missing_program_says_how_to_fix_it() {
    let items = collect(
        handler(Path::new("/nonexistent/claude"), "", "").as_ref(),
        "s",
        &conversation(),
    )
    .await;
    let [Err(e)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(e.kind, ErrorKind::InvalidRequest);
    assert!(
        e.message.contains("`/nonexistent/claude` was not found"),
        "{e}"
    );
    assert!(e.message.contains("command"), "{e}");
}

/// True while process `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z')
        }
        Err(_) => false,
    }
}

async fn wait_dead(pid: u32) {
    for _ in 0..200 {
        if !alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("process {pid} still runs");
}

/// A stub that answers one line of text and then hangs (as a CLI stuck on the network).
fn hanging_stub(dir: &Path) -> PathBuf {
    let line = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"partial"}],"stop_reason":null}}"#;
    stub(
        dir,
        &format!("cat > /dev/null\necho $$ > \"$DIR/pid\"\necho '{line}'\nexec sleep 30"),
    )
}

#[tokio::test]
async fn cancelling_kills_the_child() {
    if !have_sh() || !Path::new("/proc/self/stat").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let h = handler(&hanging_stub(dir.path()), "", "");
    let cancel = CancellationToken::new();
    let mut stream = h.create_message(
        "s",
        &conversation(),
        &[],
        RequestOptions::with_cancel(cancel.clone()),
    );
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(first, ApiStreamChunk::Text { ref text, .. } if text == "partial"));
    let pid: u32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(pid));
    cancel.cancel();
    let next = stream.next().await.unwrap();
    assert!(
        matches!(next, Err(ref e) if e.kind == ErrorKind::Cancelled),
        "{next:?}"
    );
    assert!(stream.next().await.is_none());
    drop(stream);
    wait_dead(pid).await;
}

#[tokio::test]
async fn dropping_the_stream_kills_the_child() {
    if !have_sh() || !Path::new("/proc/self/stat").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let h = handler(&hanging_stub(dir.path()), "", "");
    let mut stream = h.create_message("s", &conversation(), &[], RequestOptions::default());
    let _ = stream.next().await.unwrap().unwrap();
    let pid: u32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    drop(stream);
    wait_dead(pid).await;
}
