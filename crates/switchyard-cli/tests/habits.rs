//! Issue 14, through the real binary: secrets kept (SPEC R10.5), a closed stdout and signals
//! (R9.5), prompts from stdin and files (R9.6), the conventions people expect (completions,
//! suggestions, `tasks --limit`, `resume --last`), `export` after a crash (R10.4) and a
//! damaged database left untouched.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_testkit::{AfterBody, HttpResponse, MockServer, Reply, mcp_test_servers};

mod common;

/// A key that must never be shown, logged or stored.
const KEY: &str = "sk-issue14-key-never-shown-4b7d2e9a";

#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }

    fn of_type(&self, t: &str) -> Vec<Value> {
        self.json_lines()
            .into_iter()
            .filter(|l| l["type"] == t)
            .collect()
    }

    fn assert_no_key(&self) {
        assert!(!self.stdout.contains(KEY), "key on stdout: {self:#?}");
        assert!(!self.stderr.contains(KEY), "key on stderr: {self:#?}");
    }
}

fn command(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("SWITCHYARD_HOME", home)
        .env("OPENAI_API_KEY", KEY)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `cmd` to its end (60 s at most), feeding `stdin` when given.
async fn run(mut cmd: Command, stdin: Option<Vec<u8>>) -> Run {
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().expect("cannot start switchyard");
        if let Some(bytes) = stdin {
            let mut input = child.stdin.take().unwrap();
            std::thread::spawn(move || {
                let _ = input.write_all(&bytes);
            });
        }
        let mut out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let o = std::thread::spawn(move || {
            let mut s = Vec::new();
            out.read_to_end(&mut s).map(|_| s)
        });
        let e = std::thread::spawn(move || {
            let mut s = Vec::new();
            err.read_to_end(&mut s).map(|_| s)
        });
        let status = common::wait_or_kill(&mut child, Duration::from_secs(60), &cmd);
        Run {
            code: status.code(),
            stdout: String::from_utf8_lossy(&o.join().unwrap().unwrap()).into_owned(),
            stderr: String::from_utf8_lossy(&e.join().unwrap().unwrap()).into_owned(),
        }
    })
    .await
    .unwrap()
}

async fn switchyard(home: &Path, args: &[&str]) -> Run {
    run(command(home, args), None).await
}

fn text_reply(text: &str) -> Reply {
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"id": "c", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]}),
        json!({"id": "c", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
    );
    Reply::new(HttpResponse::sse(&body))
}

fn tool_call_reply(id: &str, name: &str, arguments: &Value) -> Reply {
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"id": "t", "object": "chat.completion.chunk", "choices": [{"index": 0,
               "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
               "function": {"name": name, "arguments": arguments.to_string()}}]}, "finish_reason": null}]}),
        json!({"id": "t", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
    );
    Reply::new(HttpResponse::sse(&body))
}

/// One text delta, then the server holds the stream open for a minute.
fn held_open_reply(text: &str) -> Reply {
    let event = format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": text}}]})
    );
    let body = format!("{:x}\r\n{event}\r\n", event.len());
    let response = HttpResponse::new(
        200,
        &[
            ("content-type", "text/event-stream"),
            ("transfer-encoding", "chunked"),
        ],
        body,
    );
    Reply::new(response).after_body(AfterBody::HoldOpen(Duration::from_secs(60)))
}

/// Every byte of the data directory's files (the database, its WAL and journal).
fn stored_bytes(home: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(home.join("data")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            all.extend(std::fs::read(path).unwrap());
        }
    }
    all
}

fn assert_not_stored(home: &Path, what: &str) {
    let bytes = stored_bytes(home);
    assert!(
        !bytes.windows(what.len()).any(|w| w == what.as_bytes()),
        "{what} is stored in the task database"
    );
}

fn task_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "task",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
        url,
    ];
    args.extend_from_slice(extra);
    args
}

// ---------------------------------------------------------------------------------------------
// 1. Secrets
// ---------------------------------------------------------------------------------------------

/// server-everything's `get-env` prints the server's whole environment: the provider key is not
/// in it (a minimal environment), and had it been, the scrubber would have hidden it from the
/// model, the JSON lines and the database.
#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_server_never_sees_the_provider_key() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let settings = home.path().join("servers.json");
    std::fs::write(
        &settings,
        json!({"mcpServers": {"everything": {"command": bin.join("mcp-server-everything"),
            "args": ["stdio"], "env": {"SERVER_OWN_SETTING": "kept-7"}}}})
        .to_string(),
    )
    .unwrap();
    let server = MockServer::start(vec![
        tool_call_reply("call_1", "everything__get-env", &json!({})),
        text_reply("Here is the environment."),
    ])
    .await;
    let url = server.url();
    let settings_arg = settings.to_str().unwrap().to_owned();
    let args = task_args(
        &url,
        &["--json", "--yes", "--mcp-config", &settings_arg, "Show env"],
    );
    let mut cmd = command(home.path(), &args);
    // A key an MCP server could print another way: named in the environment it inherits.
    cmd.env("ANTHROPIC_API_KEY", format!("{KEY}-anthropic"));
    let out = run(cmd, None).await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    out.assert_no_key();
    let result = &out.of_type("tool_result")[0];
    let content = result["content"].as_str().unwrap();
    assert_eq!(result["is_error"], false, "{out:#?}");
    assert!(content.contains("PATH"), "{content}");
    assert!(
        content.contains("kept-7"),
        "the server's own env: {content}"
    );
    assert!(!content.contains("OPENAI_API_KEY"), "{content}");
    assert!(!content.contains("ANTHROPIC_API_KEY"), "{content}");
    assert!(!content.contains("SWITCHYARD_HOME"), "{content}");
    // What went back to the model.
    let second = server.requests()[1].json().to_string();
    assert!(!second.contains(KEY), "the model was sent the key");
    assert_not_stored(home.path(), KEY);
}

/// A server that echoes the key back in a 401 body: the error says which variable to fix and
/// shows no key, on stderr, in `--json`, and in the database.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_echoed_in_an_error_body_is_never_shown_or_stored() {
    // K02: the key as LiteLLM's proxy echoed it (tests/cases/CASES.md).
    let case = HttpResponse::case("K02");
    assert!(
        String::from_utf8_lossy(&case.body).contains(KEY),
        "K02 holds the test key"
    );
    for json_flag in [true, false] {
        let server = MockServer::start(vec![Reply::new(case.clone())]).await;
        let home = tempfile::tempdir().unwrap();
        let url = server.url();
        let mut extra = vec!["Hello"];
        if json_flag {
            extra.insert(0, "--json");
        }
        let out = switchyard(home.path(), &task_args(&url, &extra)).await;
        assert_eq!(out.code, Some(1), "{out:#?}");
        out.assert_no_key();
        assert!(
            out.stdout.contains("[redacted]") || out.stderr.contains("[redacted]"),
            "{out:#?}"
        );
        assert!(
            out.stdout.contains("OPENAI_API_KEY") || out.stderr.contains("OPENAI_API_KEY"),
            "the error names the variable to fix: {out:#?}"
        );
        assert_not_stored(home.path(), KEY);
        // An auth error is never retried.
        assert_eq!(server.request_count(), 1);
    }
}

/// In a terminal, a failure that retrying cannot fix asks nothing (no "Retry?" defaulting to
/// yes) and names the variable.
#[tokio::test(flavor = "multi_thread")]
async fn an_auth_error_in_a_terminal_asks_nothing() {
    if !switchyard_testkit::require_script() {
        return;
    }
    let body = json!({"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"}}).to_string();
    let server = MockServer::start(vec![Reply::new(HttpResponse::json(401, &body))]).await;
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    let line = format!(
        "{} task --provider openai --model m --base-url {url} Hello",
        env!("CARGO_BIN_EXE_switchyard")
    );
    let mut cmd = Command::new("script");
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home.path())
        .env("OPENAI_API_KEY", KEY)
        .env("TERM", "xterm")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Nothing is typed: a question would wait for its answer until the test's limit.
    let started = Instant::now();
    let out = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let input = child.stdin.take().unwrap();
        let status = common::wait_or_kill(&mut child, Duration::from_secs(30), &"script");
        drop(input);
        let mut s = String::new();
        child.stdout.take().unwrap().read_to_string(&mut s).unwrap();
        (status.code(), s)
    })
    .await
    .unwrap();
    let (code, screen) = out;
    assert_eq!(code, Some(1), "{screen}");
    assert!(!screen.contains("Retry?"), "{screen}");
    assert!(screen.contains("OPENAI_API_KEY"), "{screen}");
    assert!(!screen.contains(KEY), "{screen}");
    assert!(started.elapsed() < Duration::from_secs(25));
}

// ---------------------------------------------------------------------------------------------
// 2. A closed stdout and signals
// ---------------------------------------------------------------------------------------------

/// `switchyard task … | head -c 20` against a stream that stays open: the request is
/// cancelled as soon as the reader has gone (not when the stream ends), quietly.
#[tokio::test(flavor = "multi_thread")]
async fn a_closed_stdout_cancels_the_request_at_once_and_quietly() {
    let server = MockServer::start(vec![held_open_reply(
        "A long answer that the reader will not finish reading.",
    )])
    .await;
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    let line = format!(
        "{} task --provider openai --model m --base-url {url} Story | head -c 20",
        env!("CARGO_BIN_EXE_switchyard")
    );
    let mut cmd = Command::new("bash");
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home.path())
        .env("OPENAI_API_KEY", KEY)
        .args([
            "-c",
            &format!("{line}; echo \" status=${{PIPESTATUS[0]}}\""),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let out = run(cmd, None).await;
    let took = started.elapsed();
    assert!(out.stdout.starts_with("A long answer that t"), "{out:#?}");
    assert!(out.stdout.ends_with(" status=141\n"), "{out:#?}");
    // The server holds the stream 60 s; the reader left after the first piece.
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert!(
        out.stderr.trim().is_empty() || !out.stderr.contains("error"),
        "{out:#?}"
    );
    // The connection was closed by the client.
    tokio::time::timeout(Duration::from_secs(5), server.wait_for_closed(1))
        .await
        .expect("the request was not cancelled");
}

/// Starts `switchyard task --json … story` against `server`; returns the child once the first
/// text line has been read, with the lines so far.
// The child is handed back to the caller, which waits for it.
#[allow(clippy::zombie_processes)]
fn start_story(home: &Path, url: &str) -> (Child, std::io::BufReader<std::process::ChildStdout>) {
    use std::io::BufRead;
    let args = task_args(url, &["--json", "story"]);
    let mut cmd = command(home, &args);
    cmd.stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("stdout closed before the first text");
        }
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "text" {
            return (child, out);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_and_sighup_cancel_like_ctrl_c_and_record_it() {
    for (signal, code) in [("-TERM", 143), ("-HUP", 129)] {
        let server = MockServer::start(vec![held_open_reply("Once upon")]).await;
        let home = tempfile::tempdir().unwrap();
        let url = server.url();
        let home_path = home.path().to_owned();
        let (status, rest) = tokio::task::spawn_blocking(move || {
            let (mut child, mut out) = start_story(&home_path, &url);
            let pid = child.id().to_string();
            assert!(
                Command::new("kill")
                    .args([signal, &pid])
                    .status()
                    .unwrap()
                    .success()
            );
            let mut rest = String::new();
            out.read_to_string(&mut rest).unwrap();
            let status = common::wait_or_kill(&mut child, Duration::from_secs(20), &signal);
            (status.code(), rest)
        })
        .await
        .unwrap();
        assert_eq!(status, Some(code), "{signal}: {rest}");
        let lines: Vec<Value> = rest
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["type"], "api_req_finished", "{rest}");
        assert_eq!(lines[0]["cancel_reason"], "user_cancelled", "{rest}");
        assert_eq!(lines[1]["status"], "cancelled", "{rest}");
        // Recorded: the export holds the partial answer, marked.
        let tasks = switchyard(home.path(), &["tasks", "--json"]).await;
        let id = tasks.json_lines()[0]["task_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let export = switchyard(home.path(), &["export", &id]).await;
        assert!(export.stdout.contains("Once upon"), "{export:#?}");
        assert!(
            export.stdout.contains("[Response interrupted by user]"),
            "{export:#?}"
        );
    }
}

/// After SIGKILL mid-answer, `export` shows the partial answer `resume` will continue from.
#[tokio::test(flavor = "multi_thread")]
async fn export_after_sigkill_shows_the_partial_answer() {
    let server = MockServer::start(vec![
        held_open_reply("Half of the answer"),
        text_reply(" and the rest."),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    let home_path = home.path().to_owned();
    let url2 = url.clone();
    tokio::task::spawn_blocking(move || {
        let (mut child, _out) = start_story(&home_path, &url2);
        child.kill().unwrap();
        child.wait().unwrap();
    })
    .await
    .unwrap();
    let tasks = switchyard(home.path(), &["tasks", "--json"]).await;
    let id = tasks.json_lines()[0]["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let export = switchyard(home.path(), &["export", &id]).await;
    assert_eq!(export.code, Some(0), "{export:#?}");
    let history: Value = serde_json::from_str(&export.stdout).unwrap();
    let history = history.as_array().unwrap();
    assert_eq!(history.len(), 2, "{history:#?}");
    assert_eq!(history[1]["role"], "assistant");
    assert_eq!(history[1]["content"][0]["text"], "Half of the answer");
    assert_eq!(
        history[1]["content"][1]["text"],
        "[Response interrupted by API Error]"
    );
    // `export` changed nothing; `resume` recovers the same and continues.
    let again = switchyard(home.path(), &["export", &id]).await;
    assert_eq!(again.stdout, export.stdout);
    let resumed = switchyard(home.path(), &["resume", &id, "--json"]).await;
    assert_eq!(resumed.code, Some(0), "{resumed:#?}");
    let after = switchyard(home.path(), &["export", &id]).await;
    let after: Value = serde_json::from_str(&after.stdout).unwrap();
    assert_eq!(
        after[1], history[1],
        "resume continued from what export showed"
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Prompts from stdin and files
// ---------------------------------------------------------------------------------------------

/// A configuration whose model takes a 5 MB prompt.
fn big_context_config(home: &Path, url: &str) -> PathBuf {
    let path = home.join("big.toml");
    std::fs::write(
        &path,
        format!(
            "[act]\nprovider = \"openai\"\nmodel = \"m\"\n[act.model_info]\ncontext_window = 4000000\nmax_tokens = 1000\n[providers.openai]\nbase_url = \"{url}\"\n"
        ),
    )
    .unwrap();
    path
}

fn five_megabytes() -> String {
    let line = "The quick brown fox jumps over the lazy dog, line after line. 0123456789\n";
    let mut text = String::with_capacity(5_300_000);
    while text.len() < 5 * 1024 * 1024 {
        text.push_str(line);
    }
    text.push_str("END-OF-PROMPT");
    text
}

fn sent_user_text(server: &MockServer) -> String {
    let body = server.requests()[0].json();
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().rfind(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => panic!("{other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn five_megabyte_prompts_from_stdin_and_from_a_file() {
    let prompt = five_megabytes();
    for how in ["dash", "piped", "file"] {
        let server = MockServer::start(vec![text_reply("Read it.")]).await;
        let home = tempfile::tempdir().unwrap();
        let config = big_context_config(home.path(), &server.url());
        let config = config.to_str().unwrap().to_owned();
        let file = home.path().join("prompt.txt");
        std::fs::write(&file, &prompt).unwrap();
        let file = file.to_str().unwrap().to_owned();
        let (args, stdin): (Vec<&str>, _) = match how {
            "dash" => (vec!["task", "--config", &config, "-"], Some(prompt.clone())),
            "piped" => (vec!["task", "--config", &config], Some(prompt.clone())),
            _ => (vec!["task", "--config", &config, "--file", &file], None),
        };
        let out = run(command(home.path(), &args), stdin.map(String::into_bytes)).await;
        assert_eq!(out.code, Some(0), "{how}: {}", out.stderr);
        assert_eq!(out.stdout.trim(), "Read it.", "{how}");
        assert_eq!(sent_user_text(&server).len(), prompt.len(), "{how}");
        assert!(sent_user_text(&server).ends_with("END-OF-PROMPT"), "{how}");
    }
}

/// `cat notes.txt | switchyard task "Summarise"`: the piped text comes first, as context, then
/// the prompt (as `llm` does).
#[tokio::test(flavor = "multi_thread")]
async fn piped_text_with_a_prompt_is_context() {
    let server = MockServer::start(vec![text_reply("ok")]).await;
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    let out = run(
        command(home.path(), &task_args(&url, &["Summarise"])),
        Some(b"line one\nline two\n".to_vec()),
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(sent_user_text(&server), "line one\nline two\n\n\nSummarise");
    // Nothing at all: one sentence that says what to do.
    let out = run(
        command(home.path(), &task_args(&url, &[])),
        Some(Vec::new()),
    )
    .await;
    assert_eq!(out.code, Some(2), "{out:#?}");
    assert!(out.stderr.contains("--file"), "{out:#?}");
}

// ---------------------------------------------------------------------------------------------
// 4. Conventions
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn completions_suggestions_and_help_width() {
    let home = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let out = switchyard(home.path(), &["completions", shell]).await;
        assert_eq!(out.code, Some(0), "{out:#?}");
        assert!(out.stdout.contains("resume"), "{shell}");
        assert!(out.stdout.contains("base-url"), "{shell}");
    }
    let out = switchyard(home.path(), &["tsak", "hi"]).await;
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("similar subcommand") || out.stderr.contains("tip"),
        "{out:#?}"
    );
    assert!(out.stderr.contains("'task'"), "{out:#?}");
    let out = switchyard(home.path(), &["task", "--modle", "x", "hi"]).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("--model"), "{out:#?}");
    let out = switchyard(home.path(), &["task", "--help"]).await;
    assert_eq!(out.code, Some(0));
    let widest = out.stdout.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(
        widest <= 100,
        "help line of {widest} columns:\n{}",
        out.stdout
    );
    // Not a terminal: no colour codes (anstream), whatever TERM says.
    assert!(!out.stdout.contains('\u{1b}'), "{}", out.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_newest_first_with_a_limit_and_resume_last() {
    let server = MockServer::start(vec![
        text_reply("one"),
        text_reply("two"),
        text_reply("three"),
        text_reply("continued"),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    for prompt in ["first task", "second task", "third task"] {
        let out = switchyard(home.path(), &task_args(&url, &[prompt])).await;
        assert_eq!(out.code, Some(0), "{out:#?}");
        // Creation times are in milliseconds: keep them apart.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let out = switchyard(home.path(), &["tasks", "--json"]).await;
    let prompts: Vec<String> = out
        .json_lines()
        .iter()
        .map(|t| t["first_prompt"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(prompts, ["third task", "second task", "first task"]);
    let out = switchyard(home.path(), &["tasks", "--limit", "1"]).await;
    let rows: Vec<&str> = out.stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{out:#?}");
    assert!(rows[0].contains("third task"), "{out:#?}");
    assert!(out.stderr.contains("2 older tasks not shown"), "{out:#?}");
    // `resume --last PROMPT` continues the most recent task.
    let out = switchyard(
        home.path(),
        &["resume", "--last", "--base-url", &url, "and then?"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(out.stdout.trim(), "continued");
    let sent = server.requests()[3].json().to_string();
    assert!(
        sent.contains("third task") && sent.contains("and then?"),
        "{sent}"
    );
}

// ---------------------------------------------------------------------------------------------
// 1 (cont.). `resume` keeps the task's host
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn resume_keeps_the_base_url_and_refuses_another_host_unless_told() {
    let local = MockServer::start(vec![text_reply("local one"), text_reply("local two")]).await;
    let other = MockServer::start(vec![text_reply("elsewhere")]).await;
    let home = tempfile::tempdir().unwrap();
    let url = local.url();
    let out = switchyard(
        home.path(),
        &task_args(&url, &["--json", "private question"]),
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    let id = out.of_type("task_started")[0]["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // No --base-url: the task's own endpoint, not OpenAI's, and its own model (with no
    // configuration file the built-in provider's default is another model).
    let out = switchyard(home.path(), &["resume", &id, "--json", "again"]).await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(out.of_type("text")[0]["text"], "local two", "{out:#?}");
    assert_eq!(out.of_type("task_started")[0]["model"], "m", "{out:#?}");
    assert_eq!(local.request_count(), 2);
    assert_eq!(local.requests()[1].json()["model"], "m");
    // Another host: refused, saying how to stay or move.
    let other_url = format!(
        "http://localhost:{}",
        other.url().rsplit(':').next().unwrap()
    );
    let out = switchyard(
        home.path(),
        &["resume", &id, "--base-url", &other_url, "move?"],
    )
    .await;
    assert_eq!(out.code, Some(2), "{out:#?}");
    assert!(out.stderr.contains("--allow-new-host"), "{out:#?}");
    assert_eq!(other.request_count(), 0);
    let out = switchyard(
        home.path(),
        &[
            "resume",
            &id,
            "--base-url",
            &other_url,
            "--allow-new-host",
            "move",
        ],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(other.request_count(), 1);
    assert_eq!(other.requests()[0].json()["model"], "m");
}

// ---------------------------------------------------------------------------------------------
// 5. A damaged database
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn a_database_with_a_damaged_page_is_refused_and_left_untouched() {
    let server = MockServer::start(vec![text_reply("a"), text_reply("b")]).await;
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    // Enough history for several pages.
    let long = "x".repeat(20_000);
    let out = switchyard(home.path(), &task_args(&url, &[&long])).await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    let db = home.path().join("data").join("switchyard.db");
    // The last connection's close folded the WAL into the file: the damage below is in
    // pages SQLite reads.
    assert!(!home.path().join("data").join("switchyard.db-wal").exists());
    let mut bytes = std::fs::read(&db).unwrap();
    let page = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    assert!(bytes.len() >= 4 * page, "{} bytes", bytes.len());
    // Page 3's b-tree header: an invalid page type.
    for b in &mut bytes[2 * page..2 * page + 8] {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();
    let before = std::fs::read(&db).unwrap();
    let out = switchyard(home.path(), &task_args(&url, &["another"])).await;
    assert_eq!(out.code, Some(2), "{out:#?}");
    assert!(out.stderr.contains("damaged"), "{out:#?}");
    assert!(out.stderr.contains("move it away"), "{out:#?}");
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the damaged file was written"
    );
    assert_eq!(server.request_count(), 1, "no request after the refusal");
}

/// Runs `line` (a shell command line) on a pseudo-terminal (util-linux `script`) with `vars`;
/// returns the exit code and everything the terminal showed. Nothing is typed.
async fn on_a_terminal(home: &Path, line: &str, vars: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = Command::new("script");
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .env("OPENAI_API_KEY", KEY)
        .args(["-q", "-e", "-c", line, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let input = child.stdin.take().unwrap();
        let mut out = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = out.read_to_end(&mut s);
            s
        });
        let status = common::wait_or_kill(&mut child, Duration::from_secs(30), &"script");
        drop(input);
        (
            status.code(),
            String::from_utf8_lossy(&reader.join().unwrap()).into_owned(),
        )
    })
    .await
    .unwrap()
}

/// Until the first token, a terminal shows "waiting for the model" with the elapsed time and
/// a spinner; colour follows anstream (`NO_COLOR`, `TERM=dumb`).
#[tokio::test(flavor = "multi_thread")]
async fn a_spinner_until_the_first_token_and_colour_as_the_terminal_allows() {
    if !switchyard_testkit::require_script() {
        return;
    }
    for (term, no_color, spinner, colour) in [
        ("xterm", None, true, true),
        ("xterm", Some("1"), true, false),
        ("dumb", None, false, false),
    ] {
        let server = MockServer::start(vec![
            text_reply("Late answer.").delay_before(Duration::from_millis(1500)),
        ])
        .await;
        let home = tempfile::tempdir().unwrap();
        let line = format!(
            "{} task --provider openai --model m --base-url {} Hi </dev/null",
            env!("CARGO_BIN_EXE_switchyard"),
            server.url()
        );
        let mut vars = vec![("TERM", term)];
        if let Some(v) = no_color {
            vars.push(("NO_COLOR", v));
        }
        let (code, screen) = on_a_terminal(home.path(), &line, &vars).await;
        assert_eq!(code, Some(0), "{screen}");
        assert!(screen.contains("Late answer."), "{screen}");
        assert_eq!(
            screen.contains("waiting for the model · 1s"),
            spinner,
            "TERM={term} NO_COLOR={no_color:?}: {screen:?}"
        );
        assert_eq!(
            screen.contains("\u{1b}[2m"),
            colour,
            "TERM={term} NO_COLOR={no_color:?}: {screen:?}"
        );
    }
}

/// `-v`, `-vv` and `RUST_LOG` show more; no log line shows a key, even at trace level.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_and_rust_log_show_more_and_never_a_key() {
    let server = MockServer::start(vec![text_reply("ok"), text_reply("ok")]).await;
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    let quiet = switchyard(home.path(), &task_args(&url, &["Hi"])).await;
    assert!(!quiet.stderr.contains("debug:"), "{quiet:#?}");
    let mut args = vec!["-vvv"];
    args.extend(task_args(&url, &["Hi"]));
    let loud = switchyard(home.path(), &args).await;
    assert_eq!(loud.code, Some(0), "{loud:#?}");
    assert!(
        loud.stderr.contains("trace:") || loud.stderr.contains("debug:"),
        "{loud:#?}"
    );
    loud.assert_no_key();
    let mut cmd = command(home.path(), &task_args(&url, &["Hi"]));
    cmd.env("RUST_LOG", "debug");
    let logged = run(cmd, None).await;
    assert!(logged.stderr.contains("debug:"), "{logged:#?}");
    logged.assert_no_key();
}

/// `-c key=value` sets any configuration field for one run (Codex's convention), with or
/// without a configuration file.
#[tokio::test(flavor = "multi_thread")]
async fn dash_c_overrides_any_configuration_field() {
    let server = MockServer::start(vec![text_reply("one"), text_reply("two")]).await;
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    let base = format!("providers.openai.base_url={url}");
    let out = switchyard(
        home.path(),
        &["-c", "act.model=typed-model", "-c", &base, "task", "Hi"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(server.requests()[0].json()["model"], "typed-model");
    // Over a file: the file's other fields stay.
    std::fs::write(
        home.path().join("config.toml"),
        format!("[act]\nprovider = \"openai\"\nmodel = \"from-file\"\n[providers.openai]\nbase_url = \"{url}\"\n"),
    )
    .unwrap();
    let out = switchyard(
        home.path(),
        &[
            "task",
            "-c",
            "act.model_info.context_window=64000",
            "-c",
            "act.model=other",
            "Hi",
        ],
    )
    .await;
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(server.requests()[1].json()["model"], "other");
    let out = switchyard(home.path(), &["-c", "act.model", "task", "Hi"]).await;
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("key=value"), "{out:#?}");
    // A value the field cannot take names the -c and its value (issue 26), over the file and
    // over the built-in default, not a line of text the user never wrote.
    let fresh = tempfile::tempdir().unwrap();
    for home in [home.path(), fresh.path()] {
        let out = switchyard(
            home,
            &["-c", "act.thinking_budget_tokens=abc", "task", "Hi"],
        )
        .await;
        assert_eq!(out.code, Some(2), "{out:#?}");
        assert!(
            out.stderr
                .contains("-c act.thinking_budget_tokens=abc: invalid type: string \"abc\""),
            "{out:#?}"
        );
        assert!(!out.stderr.contains("with -c overrides"), "{out:#?}");
    }
}

/// With no configuration file, `-c act.provider=ID` moves the requests off the built-in local
/// default, so the provider's key is read from its variable (it was reported missing).
#[tokio::test(flavor = "multi_thread")]
async fn dash_c_provider_without_a_file_reads_that_providers_key() {
    let home = tempfile::tempdir().unwrap();
    // The field alone, and the whole mode table.
    for over in ["act.provider=anthropic", "act={provider=\"anthropic\"}"] {
        let mut cmd = command(home.path(), &["-c", over, "config", "check"]);
        cmd.env("ANTHROPIC_API_KEY", KEY);
        let out = run(cmd, None).await;
        assert!(!out.stdout.contains("MISSING"), "{over}: {out:#?}");
        assert!(out.stdout.contains("ANTHROPIC_API_KEY"), "{over}: {out:#?}");
        out.assert_no_key();
    }
    // Without the variable, the check says so.
    let out = switchyard(
        home.path(),
        &["-c", "act.provider=anthropic", "config", "check"],
    )
    .await;
    assert!(out.stdout.contains("MISSING"), "{out:#?}");
}

/// The first run, with no configuration and no local model server: one sentence saying how to
/// start it or choose a provider, at once (no retries against a closed port).
#[tokio::test(flavor = "multi_thread")]
async fn the_first_run_without_a_local_model_says_how_to_start_it() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port().to_string()
    };
    let home = tempfile::tempdir().unwrap();
    let mut cmd = command(home.path(), &["task", "Hi"]);
    cmd.env("SWITCHYARD_LOCAL_MODEL_PORT", &port);
    let started = Instant::now();
    let out = run(cmd, None).await;
    assert_eq!(out.code, Some(2), "{out:#?}");
    assert!(
        out.stderr.contains("scripts/local-model.sh start"),
        "{out:#?}"
    );
    assert!(out.stderr.contains("--provider"), "{out:#?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// SIGTERM while the follow-up question waits in a terminal ends the run with 143 (the
/// answered task is kept); it is not swallowed by the signal handler.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_at_the_follow_up_question_ends_the_run() {
    if !switchyard_testkit::require_script() {
        return;
    }
    let server = MockServer::start(vec![text_reply("First answer.")]).await;
    let home = tempfile::tempdir().unwrap();
    // `exec` keeps the shell's pid, printed first, for the switchyard process.
    let line = format!(
        "echo PID:$$; exec {} task --provider openai --model m --base-url {} Hi",
        env!("CARGO_BIN_EXE_switchyard"),
        server.url()
    );
    let mut cmd = Command::new("script");
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home.path())
        .env("OPENAI_API_KEY", KEY)
        .env("TERM", "xterm")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let (code, screen) = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let input = child.stdin.take().unwrap();
        let mut out = child.stdout.take().unwrap();
        let screen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let shown = std::sync::Arc::clone(&screen);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                shown
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        // Up to the question: the pid, the answer, then "> ".
        let deadline = Instant::now() + Duration::from_secs(20);
        let pid = loop {
            let text = screen.lock().unwrap().clone();
            let asked = text
                .split_once("First answer.")
                .is_some_and(|(_, after)| after.contains("> "));
            if asked {
                break text
                    .split("PID:")
                    .nth(1)
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|p| p.parse::<u32>().ok())
                    .expect("no pid printed");
            }
            assert!(Instant::now() < deadline, "no follow-up question: {text:?}");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .unwrap()
                .success()
        );
        let status = common::wait_or_kill(&mut child, Duration::from_secs(20), &"script");
        drop(input);
        reader.join().unwrap();
        let text = screen.lock().unwrap().clone();
        (status.code(), text)
    })
    .await
    .unwrap();
    assert_eq!(code, Some(143), "{screen}");
    let tasks = switchyard(home.path(), &["tasks", "--json"]).await;
    assert_eq!(tasks.json_lines().len(), 1, "{tasks:#?}");
}
