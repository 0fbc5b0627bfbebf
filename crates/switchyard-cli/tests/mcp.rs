//! `switchyard mcp list` and `switchyard task` with MCP servers, run as a person would: a clean
//! environment, real MCP servers from npm (`scripts/mcp-servers.sh`) and real broken ones, and
//! the testkit's scripted model on 127.0.0.1.
//!
//! Without the npm servers (or util-linux `script`, for the terminal test) the tests that need
//! them fail in CI and are skipped visibly elsewhere (`switchyard_testkit::mcp_test_servers`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_testkit::{HttpResponse, MockServer, Reply, mcp_test_servers, require_script};

mod common;

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
}

/// Runs `switchyard ARGS` with only `PATH` and `SWITCHYARD_HOME=home`, stdin not a terminal.
async fn switchyard(home: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let o = std::thread::spawn(move || {
            let mut s = String::new();
            out.read_to_string(&mut s).map(|_| s)
        });
        let e = std::thread::spawn(move || {
            let mut s = String::new();
            err.read_to_string(&mut s).map(|_| s)
        });
        let status = common::wait_or_kill(&mut child, Duration::from_secs(90), &"mcp test");
        Run {
            code: status.code(),
            stdout: o.join().unwrap().unwrap(),
            stderr: e.join().unwrap().unwrap(),
        }
    })
    .await
    .unwrap()
}

fn write_settings(dir: &Path, name: &str, servers: Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

/// A Chat Completions stream calling `name` with `arguments`.
fn tool_call_reply(id: &str, name: &str, arguments: &Value) -> Reply {
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0,
               "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
               "function": {"name": name, "arguments": arguments.to_string()}}]}, "finish_reason": null}]}),
        json!({"id": "c1", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
               "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}),
    );
    Reply::new(HttpResponse::sse(&body))
}

fn text_reply(text: &str) -> Reply {
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"id": "c2", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]}),
        json!({"id": "c2", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 150, "completion_tokens": 10, "total_tokens": 160}}),
    );
    Reply::new(HttpResponse::sse(&body))
}

fn broken_servers() -> Value {
    json!({
        "nope": {"command": "switchyard-no-such-command-4f1e"},
        "quits": {"command": "sh", "args": ["-c", "echo 'fatal: MY_TOKEN is not set' >&2; exit 3"]},
        "off": {"command": "x", "disabled": true},
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_list_explains_every_broken_server() {
    let home = tempfile::tempdir().unwrap();
    // The default file in the configuration directory ($SWITCHYARD_HOME).
    write_settings(home.path(), "mcp_settings.json", broken_servers());
    let run = switchyard(home.path(), &["mcp", "list"]).await;
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(run.stdout.contains("mcp_settings.json"), "{run:#?}");
    assert!(
        run.stdout.contains(
            "nope (stdio): failed — the command \"switchyard-no-such-command-4f1e\" was not found"
        ),
        "{run:#?}"
    );
    let quits = run.stdout.lines().find(|l| l.starts_with("quits")).unwrap();
    assert!(
        quits.contains("exited") && quits.contains("fatal: MY_TOKEN is not set"),
        "{quits}"
    );
    assert!(run.stdout.contains("off (stdio): disabled"), "{run:#?}");
    // The SDK's own log lines stay out of the way.
    assert!(!run.stderr.contains("rmcp"), "{run:#?}");

    let run = switchyard(home.path(), &["mcp", "list", "--json"]).await;
    let lines = run.json_lines();
    assert_eq!(lines.len(), 3);
    let nope = lines.iter().find(|l| l["name"] == "nope").unwrap();
    assert_eq!(nope["status"], "failed");
    assert!(nope["error"].as_str().unwrap().contains("was not found"));
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_list_reads_clines_file_and_shows_tools_of_a_real_server() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    // Only Cline's file name exists in the configuration directory: it is used.
    write_settings(
        home.path(),
        "cline_mcp_settings.json",
        json!({"everything": {"command": bin.join("mcp-server-everything"), "args": ["stdio"],
               "autoApprove": [], "disabled": false, "timeout": 60, "transportType": "stdio"}}),
    );
    let run = switchyard(home.path(), &["mcp", "list"]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.stdout.contains("cline_mcp_settings.json"), "{run:#?}");
    assert!(
        run.stdout.contains("everything (stdio): connected, "),
        "{run:#?}"
    );
    assert!(
        run.stdout.contains("  echo — Echoes back the input string"),
        "{run:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_list_without_servers_and_a_missing_file_given() {
    let home = tempfile::tempdir().unwrap();
    let run = switchyard(home.path(), &["mcp", "list"]).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.stdout.contains("No MCP servers configured"), "{run:#?}");
    let run = switchyard(
        home.path(),
        &["mcp", "list", "--mcp-config", "/no/such/mcp.json"],
    )
    .await;
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(
        run.stderr
            .contains("cannot read the MCP settings file /no/such/mcp.json"),
        "{run:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn task_json_runs_the_models_tool_call_with_yes_and_reports_broken_servers() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let mut servers = broken_servers();
    servers["everything"] =
        json!({"command": bin.join("mcp-server-everything"), "args": ["stdio"]});
    let file = write_settings(home.path(), "servers.json", servers);
    let server = MockServer::start(vec![
        tool_call_reply("call_1", "everything__echo", &json!({"message": "ping-7"})),
        text_reply("The server said ping-7."),
    ])
    .await;
    let url = server.url();
    let run = switchyard(
        home.path(),
        &[
            "task",
            "Echo ping-7",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            &url,
            "--json",
            "--yes",
            "--mcp-config",
            file.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let lines = run.json_lines();
    let of = |t: &str| {
        lines
            .iter()
            .filter(|l| l["type"] == t)
            .cloned()
            .collect::<Vec<_>>()
    };
    let unavailable = of("mcp_server_unavailable");
    let names: Vec<_> = unavailable
        .iter()
        .map(|l| l["server"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["nope", "quits"], "{run:#?}");
    assert!(
        unavailable[0]["reason"]
            .as_str()
            .unwrap()
            .contains("was not found")
    );
    let call = &of("tool_call")[0];
    assert_eq!(call["name"], "everything__echo");
    let result = &of("tool_result")[0];
    assert_eq!(result["id"], "call_1");
    assert_eq!(result["is_error"], false);
    assert!(
        result["content"].as_str().unwrap().contains("ping-7"),
        "{result}"
    );
    assert_eq!(of("task_finished")[0]["status"], "completed");
    // The tool was offered, and its result went back to the model.
    let first = server.requests()[0].json();
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "everything__echo")
    );
    let second = server.requests()[1].json();
    let tool_msg = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    assert!(tool_msg["content"].as_str().unwrap().contains("ping-7"));
    // The tool round is in the task store: the exported history holds the call, its result
    // and the final answer, in order.
    let task_id = of("task_started")[0]["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let export = switchyard(home.path(), &["export", &task_id]).await;
    assert_eq!(export.code, Some(0), "{export:#?}");
    let history: Value = serde_json::from_str(&export.stdout).unwrap();
    let history = history.as_array().unwrap();
    let roles: Vec<_> = history
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant"],
        "{history:#?}"
    );
    assert_eq!(history[1]["content"][0]["type"], "tool_use");
    assert_eq!(history[2]["content"][0]["type"], "tool_result");
    assert_eq!(history[2]["content"][0]["tool_use_id"], "call_1");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_terminal_or_yes_a_tool_call_is_denied_with_a_hint() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let file = write_settings(
        home.path(),
        "servers.json",
        json!({"everything": {"command": bin.join("mcp-server-everything"), "args": ["stdio"]}}),
    );
    let server = MockServer::start(vec![
        tool_call_reply("call_1", "everything__echo", &json!({"message": "x"})),
        text_reply("Understood."),
    ])
    .await;
    let url = server.url();
    let run = switchyard(
        home.path(),
        &[
            "task",
            "Echo",
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            &url,
            "--mcp-config",
            file.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.stderr.contains("pass --yes"), "{run:#?}");
    assert!(
        run.stderr
            .contains("tool error: everything__echo: The user denied this tool call."),
        "{run:#?}"
    );
    assert_eq!(run.stdout.trim_end(), "Understood.");
    // The last line sums both requests of the task.
    let last = run.stderr.lines().last().unwrap();
    assert!(last.starts_with("250 in · 30 out tokens"), "{last}");
    let second = server.requests()[1].json();
    let tool_msg = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(tool_msg["content"], "The user denied this tool call.");
}

/// In a terminal (a pseudo-terminal from util-linux `script`), a tool call not in
/// `autoApprove` is asked about: `y` runs it and its result goes to the model; `n` does not
/// run it and the model is told the user denied it. Typed ahead: the terminal holds the lines
/// until each question reads one (the last, empty line ends the follow-up question).
#[tokio::test(flavor = "multi_thread")]
async fn in_a_terminal_each_tool_call_is_asked_about_and_the_answer_is_kept() {
    use std::io::Write;
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    if !require_script() {
        return;
    }
    for (answer, ran) in [("y", true), ("n", false)] {
        let home = tempfile::tempdir().unwrap();
        let file = write_settings(
            home.path(),
            "servers.json",
            json!({"everything": {"command": bin.join("mcp-server-everything"), "args": ["stdio"]}}),
        );
        let server = MockServer::start(vec![
            tool_call_reply(
                "call_9",
                "everything__echo",
                &json!({"message": "pty-ping"}),
            ),
            text_reply("Done."),
        ])
        .await;
        let inner = format!(
            "{} task --provider openai --model m --base-url {} --mcp-config {} 'Echo pty-ping'",
            env!("CARGO_BIN_EXE_switchyard"),
            server.url(),
            file.display()
        );
        let mut script = Command::new("script");
        script
            .args(["-q", "-e", "-c", &inner, "/dev/null"])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("SWITCHYARD_HOME", home.path())
            .env("OPENAI_API_KEY", "sk-test-pty")
            .env("TERM", "dumb")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let output = tokio::task::spawn_blocking(move || {
            let mut child = script.spawn().unwrap();
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(format!("{answer}\n\n").as_bytes()).unwrap();
            let output = child.wait_with_output().unwrap();
            drop(stdin);
            output
        })
        .await
        .unwrap();
        let transcript = String::from_utf8_lossy(&output.stdout).into_owned();
        assert_eq!(output.status.code(), Some(0), "{transcript}");
        assert!(
            transcript.contains("Run the tool echo of MCP server \"everything\""),
            "{transcript}"
        );
        assert!(transcript.contains("Done."), "{transcript}");
        assert_eq!(server.request_count(), 2, "{transcript}");
        let second = server.requests()[1].json();
        let tool_msg = second["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap()
            .clone();
        let content = tool_msg["content"].as_str().unwrap();
        if ran {
            assert!(content.contains("pty-ping"), "{content}");
        } else {
            assert!(content.contains("denied"), "{content}");
            assert!(!content.contains("Echo: pty-ping"), "{content}");
        }
    }
}
