//! Issue 26 items 1, 2 and 4, through the real binary: a key split across stream events at every
//! offset (two and three events; text, reasoning, tool-call arguments, MCP result blocks) never
//! reaches stdout (plain and `--json`), stderr at `-vvv`, the database or the next request
//! (SPEC R10.5); endless arguments and text stop at their bound with a bounded RSS, measured
//! from the child's /proc (R4.0b); bound, line-cap and content-encoding errors are not retried
//! and say what to do; a stream that ended early says so.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::{HttpResponse, MockServer, Reply, skip_or_fail};

mod common;

/// The planted key: the provider key of every run, and what the "model" streams back.
const KEY: &str = "sk-issue26-split-key-5f1c9e0d7a";

#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// The child's peak resident set (VmHWM), in bytes, last read from /proc while it ran.
    peak_rss: u64,
}

impl Run {
    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Every string in the `--json` lines of type `t`, joined in order (so a key split across
    /// two events' lines would show whole here).
    fn joined_strings(&self, t: &str) -> String {
        fn strings(v: &Value, out: &mut String) {
            match v {
                Value::String(s) => out.push_str(s),
                Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
                Value::Object(o) => o.values().for_each(|v| strings(v, out)),
                _ => {}
            }
        }
        let mut out = String::new();
        for line in self.json_lines().iter().filter(|l| l["type"] == t) {
            strings(line, &mut out);
        }
        out
    }

    fn assert_no_key(&self) {
        assert!(!self.stdout.contains(KEY), "key on stdout: {}", self.stdout);
        assert!(!self.stderr.contains(KEY), "key on stderr: {}", self.stderr);
    }
}

/// VmHWM of `pid` in bytes, when /proc has it.
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Runs switchyard with `args` in `home` (60 s at most), the key as `OPENAI_API_KEY`.
async fn switchyard(home: &Path, args: &[&str]) -> Run {
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
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().expect("cannot start switchyard");
        let pid = child.id();
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
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = {
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut peak = 0;
                while !done.load(Ordering::Relaxed) {
                    peak = peak_rss(pid).unwrap_or(0).max(peak);
                    std::thread::sleep(Duration::from_millis(5));
                }
                peak
            })
        };
        let status = common::wait_or_kill(&mut child, Duration::from_secs(60), &cmd);
        done.store(true, Ordering::Relaxed);
        Run {
            code: status.code(),
            stdout: String::from_utf8_lossy(&o.join().unwrap().unwrap()).into_owned(),
            stderr: String::from_utf8_lossy(&e.join().unwrap().unwrap()).into_owned(),
            peak_rss: watcher.join().unwrap(),
        }
    })
    .await
    .unwrap()
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
        "--retries",
        "0",
        "--on-failure",
        "fail",
    ];
    args.extend_from_slice(extra);
    args
}

/// Every byte of the data directory's files (the database, its WAL and journal).
fn stored_bytes(home: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    if let Ok(entries) = std::fs::read_dir(home.join("data")) {
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_file() {
                all.extend(std::fs::read(path).unwrap());
            }
        }
    }
    all
}

fn assert_not_stored(home: &Path) {
    let bytes = stored_bytes(home);
    assert!(
        !bytes.is_empty(),
        "nothing stored: the check would be empty"
    );
    assert!(
        !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
        "the key is stored in the task database"
    );
}

/// The key cut at every offset into two pieces, and at every pair of offsets into three,
/// each copy between markers: the pieces as separate events, and the number of copies.
fn split_pieces() -> (Vec<String>, usize) {
    let n = KEY.len();
    let mut pieces = Vec::new();
    let mut copies = 0;
    for i in 0..=n {
        pieces.push(format!("<{i}: {}", &KEY[..i]));
        pieces.push(format!("{} >", &KEY[i..]));
        copies += 1;
    }
    for i in 0..=n {
        for j in i..=n {
            pieces.push(format!("({}", &KEY[..i]));
            pieces.push(KEY[i..j].to_owned());
            pieces.push(format!("{})", &KEY[j..]));
            copies += 1;
        }
    }
    (pieces, copies)
}

fn event(delta: &Value) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "c", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    )
}

fn finish_event(reason: &str) -> String {
    format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id": "c", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": reason}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    )
}

/// One answer that streams the split key in its reasoning, its text and the arguments of one
/// call of the test MCP server's tool, so the next request carries the answer back.
fn split_everywhere_reply() -> (Reply, usize) {
    let (pieces, copies) = split_pieces();
    let mut body = String::new();
    for p in &pieces {
        body.push_str(&event(&json!({"reasoning_content": p})));
    }
    for p in &pieces {
        body.push_str(&event(&json!({"content": p})));
    }
    body.push_str(&event(
        &json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "split__leak", "arguments": "{\"note\": \""}}]}),
    ));
    for p in &pieces {
        body.push_str(&event(
            &json!({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}),
        ));
    }
    body.push_str(&event(
        &json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"}"}}]}),
    ));
    body.push_str(&finish_event("tool_calls"));
    (Reply::new(HttpResponse::sse(&body)), copies)
}

fn text_reply(text: &str) -> Reply {
    let body = event(&json!({"role": "assistant", "content": text})) + &finish_event("stop");
    Reply::new(HttpResponse::sse(&body))
}

/// SPEC R10.5, issue 26 item 1: the split key never escapes, in any channel, through any
/// output, plain or `--json`, with `-vvv` logging on.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_split_at_every_offset_across_events_never_escapes() {
    if !python_found() {
        return;
    }
    for json_flag in [true, false] {
        let (reply, copies) = split_everywhere_reply();
        let server = MockServer::start(vec![reply, text_reply("done")]).await;
        let home = tempfile::tempdir().unwrap();
        let url = server.url();
        let settings = mcp_settings(home.path(), &["ok".to_owned()]);
        let mut extra = vec!["-vvv", "--yes", "--mcp-config", &settings, "Say it"];
        if json_flag {
            extra.insert(0, "--json");
        }
        let out = switchyard(home.path(), &task_args(&url, &extra)).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        out.assert_no_key();
        assert_not_stored(home.path());
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "the tool result goes back to the model");
        let second = String::from_utf8_lossy(&requests[1].body).into_owned();
        assert!(!second.contains(KEY), "the model was sent the key");
        // The assistant's text and the tool call's arguments went back, scrubbed, and the
        // copies are all there: nothing else of the text was lost.
        assert!(
            second.matches("[redacted]").count() >= 2 * copies,
            "{}",
            &second[..second.len().min(2000)]
        );
        if json_flag {
            for t in ["text", "reasoning", "tool_call"] {
                let joined = out.joined_strings(t);
                assert!(!joined.contains(KEY), "`{t}` events hold the key joined");
                assert_eq!(
                    joined.matches("[redacted]").count(),
                    copies,
                    "`{t}` events: one marker per copy"
                );
            }
        } else {
            assert_eq!(
                out.stdout.matches("[redacted]").count(),
                copies,
                "text copies"
            );
        }
    }
}

/// A minimal MCP server (Python, stdio, newline-delimited JSON-RPC) whose one tool, `leak`,
/// answers with `blocks` as its text content blocks.
fn split_mcp_server(dir: &Path, blocks: &[String]) -> std::path::PathBuf {
    let script = format!(
        r#"import sys, json
BLOCKS = json.loads({blocks:?})
for line in sys.stdin:
    msg = json.loads(line)
    mid = msg.get("id")
    if mid is None:
        continue
    method = msg.get("method")
    if method == "initialize":
        res = {{"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {{"tools": {{}}}},
               "serverInfo": {{"name": "split", "version": "1"}}}}
    elif method == "tools/list":
        res = {{"tools": [{{"name": "leak", "description": "Returns blocks.",
                "inputSchema": {{"type": "object", "properties": {{}}}}}}]}}
    elif method == "tools/call":
        res = {{"content": [{{"type": "text", "text": b}} for b in BLOCKS]}}
    else:
        sys.stdout.write(json.dumps({{"jsonrpc": "2.0", "id": mid,
                         "error": {{"code": -32601, "message": "no such method"}}}}) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({{"jsonrpc": "2.0", "id": mid, "result": res}}) + "\n")
    sys.stdout.flush()
"#,
        blocks = serde_json::to_string(blocks).unwrap()
    );
    let path = dir.join("split_server.py");
    std::fs::write(&path, script).unwrap();
    path
}

/// Whether python3 runs (the test MCP server is a Python script); skips the test when not.
fn python_found() -> bool {
    let python = Command::new("python3").arg("--version").output();
    let found = python.is_ok_and(|o| o.status.success());
    if !found {
        skip_or_fail("python3 is needed to run the test MCP server; install Python 3");
    }
    found
}

/// An MCP settings file in `dir` naming the test server `split`, whose tool answers `blocks`.
fn mcp_settings(dir: &Path, blocks: &[String]) -> String {
    let script = split_mcp_server(dir, blocks);
    let settings = dir.join("servers.json");
    std::fs::write(
        &settings,
        json!({"mcpServers": {"split": {"command": "python3", "args": [script]}}}).to_string(),
    )
    .unwrap();
    settings.to_str().unwrap().to_owned()
}

/// SPEC R10.5, issue 26 item 1: an MCP result whose blocks split the key (joined with
/// newlines) is scrubbed after the join: not shown, stored or sent to the model.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_split_across_mcp_result_blocks_never_escapes() {
    if !python_found() {
        return;
    }
    let (pieces, copies) = split_pieces();
    let home = tempfile::tempdir().unwrap();
    let settings_arg = mcp_settings(home.path(), &pieces);
    let tool_call = event(&json!({"role": "assistant", "tool_calls": [{"index": 0,
        "id": "call_1", "type": "function", "function": {"name": "split__leak", "arguments": "{}"}}]}))
        + &finish_event("tool_calls");
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::sse(&tool_call)),
        text_reply("done"),
    ])
    .await;
    let url = server.url();
    let args = task_args(
        &url,
        &[
            "--json",
            "-vvv",
            "--yes",
            "--mcp-config",
            &settings_arg,
            "Leak",
        ],
    );
    let out = switchyard(home.path(), &args).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    out.assert_no_key();
    assert_not_stored(home.path());
    let result = out.joined_strings("tool_result");
    assert_eq!(result.matches("[redacted]").count(), copies, "{result}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{}", out.stderr);
    let second = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(!second.contains(KEY), "the model was sent the key");
    assert!(second.matches("[redacted]").count() >= copies);
}

/// A server that answers every connection with an endless SSE stream: `first`, then `each`
/// forever, until the client hangs up. Counts the connections (the requests).
async fn endless_server(first: String, each: String) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let (first, each) = (first.clone(), each.clone());
            tokio::spawn(async move {
                // The request head and body: read what comes (it is not checked).
                let mut buf = vec![0u8; 1 << 16];
                let _ =
                    tokio::time::timeout(Duration::from_millis(200), socket.read(&mut buf)).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                let chunk = |s: &str| format!("{:x}\r\n{s}\r\n", s.len());
                if socket.write_all(head.as_bytes()).await.is_err()
                    || socket.write_all(chunk(&first).as_bytes()).await.is_err()
                {
                    return;
                }
                let each = chunk(&each);
                while socket.write_all(each.as_bytes()).await.is_ok() {}
            });
        }
    });
    (url, count)
}

/// Peak RSS allowed for a run that a hostile stream tries to grow.
const RSS_LIMIT: u64 = 100 << 20;

/// SPEC R4.0b, issue 26 item 2: endless tool-call arguments stop at the default 4 MiB bound,
/// with an error naming the setting; RSS stays under 100 MB; not retried.
#[tokio::test(flavor = "multi_thread")]
async fn endless_tool_call_arguments_stop_at_their_bound() {
    let first = event(
        &json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1",
        "type": "function", "function": {"name": "write_to_file", "arguments": "{\"content\": \""}}]}),
    );
    let fragment = "a".repeat(32 << 10);
    let each = event(&json!({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}));
    let (url, requests) = endless_server(first, each).await;
    let home = tempfile::tempdir().unwrap();
    let out = switchyard(home.path(), &task_args(&url, &["--yes", "Write"])).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("4 MiB") && out.stderr.contains("max_tool_arguments_bytes"),
        "{}",
        out.stderr
    );
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "a bound error is not retried"
    );
    assert!(out.peak_rss > 0, "the RSS was measured");
    eprintln!("peak RSS {} MiB", out.peak_rss >> 20);
    assert!(
        out.peak_rss < RSS_LIMIT,
        "peak RSS {} MB",
        out.peak_rss >> 20
    );
}

/// SPEC R4.0b: endless text stops at the answer bound (lowered to 6 MiB with `-c` here: the
/// task layer holds several copies of an answer, about 92 MiB of RSS for an 8 MiB one, so at
/// the 64 MiB default the 100 MB check could not hold), with an error naming the setting; not
/// retried.
#[tokio::test(flavor = "multi_thread")]
async fn endless_text_stops_at_the_answer_bound() {
    let first = event(&json!({"role": "assistant", "content": "start "}));
    let each = event(&json!({"content": "b".repeat(32 << 10)}));
    let (url, requests) = endless_server(first, each).await;
    let home = tempfile::tempdir().unwrap();
    let args = task_args(
        &url,
        &["-c", "limits.max_answer_bytes=6291456", "--json", "Talk"],
    );
    let out = switchyard(home.path(), &args).await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains("6 MiB") && all.contains("max_answer_bytes"),
        "{}",
        out.stderr
    );
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "a bound error is not retried"
    );
    assert!(out.peak_rss > 0, "the RSS was measured");
    eprintln!("peak RSS {} MiB", out.peak_rss >> 20);
    assert!(
        out.peak_rss < RSS_LIMIT,
        "peak RSS {} MB",
        out.peak_rss >> 20
    );
    // What was shown before the bound is kept: about 6 MiB of text, no more.
    let text = out.joined_strings("text");
    assert!(
        text.len() <= 6 << 20 && text.len() > 5 << 20,
        "{}",
        text.len()
    );
}

/// SPEC R4.0b, R7.4, issue 26 item 4: a line over the cap is not retried and its message says
/// which setting raises it.
#[tokio::test(flavor = "multi_thread")]
async fn a_line_over_the_cap_is_not_retried_and_names_the_setting() {
    let long = event(&json!({"role": "assistant", "content": "x".repeat(100_000)}));
    let server = MockServer::start(vec![Reply::new(HttpResponse::sse(
        &(long + &finish_event("stop")),
    ))])
    .await;
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    // The default retries (3): a permanent error must not use them.
    let args = vec![
        "task",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
        &url,
        "--on-failure",
        "fail",
        "-c",
        "limits.max_line_bytes=65536",
        "Hi",
    ];
    let out = switchyard(home.path(), &args).await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("max_line_bytes") && out.stderr.contains("65536"),
        "{}",
        out.stderr
    );
    assert_eq!(server.requests().len(), 1, "not retried: {}", out.stderr);
}

/// Issue 26 item 4: a body in a content-encoding nobody asked for is refused at once, naming
/// it, and not retried (it was read as garbage for a minute).
#[tokio::test(flavor = "multi_thread")]
async fn an_unasked_content_encoding_is_refused_at_once() {
    let response = HttpResponse::new(
        200,
        &[
            ("content-type", "text/event-stream"),
            ("content-encoding", "gzip"),
        ],
        vec![
            0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xff, 0xfe,
        ],
    );
    let server = MockServer::start(vec![Reply::new(response)]).await;
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    let args = vec![
        "task",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
        &url,
        "--on-failure",
        "fail",
        "Hi",
    ];
    let out = switchyard(home.path(), &args).await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("content-encoding `gzip`"),
        "{}",
        out.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "not retried: {}", out.stderr);
    assert_eq!(
        requests[0].header("accept-encoding"),
        Some("identity"),
        "the request says which encoding it reads"
    );
}

/// Issue 26 item 4: a stream that connected and then ended early says so, not "could not be
/// reached".
#[tokio::test(flavor = "multi_thread")]
async fn a_stream_that_ended_early_is_worded_as_such() {
    let cut = event(&json!({"role": "assistant", "content": "partial"}));
    let server = MockServer::start(vec![Reply::new(HttpResponse::sse(&cut))]).await;
    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    let out = switchyard(home.path(), &task_args(&url, &["Hi"])).await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("ended before the response was complete"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("could not be reached"),
        "{}",
        out.stderr
    );
}
