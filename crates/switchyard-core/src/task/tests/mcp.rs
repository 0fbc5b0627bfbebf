//! MCP servers for real (SPEC R11, R6.1, issue 7): the reference servers from the npm registry
//! (`@modelcontextprotocol/server-everything` over stdio and streamable HTTP,
//! `@modelcontextprotocol/server-filesystem` over a temporary folder), installed by
//! `scripts/mcp-servers.sh`, plus broken servers that are real child processes (a command that
//! does not exist, one that exits at once, one that never answers the handshake). A scripted
//! model (the testkit server replaying OpenAI tool-call streams) drives the tool loop.
//!
//! Without the npm servers their tests fail in CI and are skipped visibly elsewhere
//! (`switchyard_testkit::mcp_test_servers`).

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use super::request_context;
use crate::mcp::{McpServerHub, McpServerStatus, McpSettings};
use crate::prompt::{SystemPromptContext, get_system_prompt};
use crate::task::TaskEvent;
use crate::task::attempt::ApiRequestContext;
use crate::task::conversation::Conversation;
use crate::task::mcp_wait::McpHub;
use crate::task::request::RequestStatus;
use crate::task::tools::{
    ToolApprover, ToolCallRequest, ToolLoop, ToolLoopSettings, run_turn_with_tools,
};
use crate::task::turn::{TurnOutcome, run_turn};
use crate::task::{AttemptSettings, BoxFuture, FailureDecision, FixedDecision};
use serde_json::{Value, json};
use switchyard_api::{ApiConfiguration, ApiHandler, Message, Mode, build_api_handler};
use switchyard_testkit::{HttpResponse, MockServer, Reply, mcp_test_servers};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn settings(json: Value) -> McpSettings {
    McpSettings::parse(&json.to_string(), Path::new("test.json")).unwrap()
}

async fn settled(settings: McpSettings) -> std::sync::Arc<McpServerHub> {
    let hub = McpServerHub::start(settings);
    tokio::time::timeout(Duration::from_secs(60), hub.wait_until_settled())
        .await
        .expect("the servers did not settle within 60 s");
    hub
}

fn state(hub: &McpServerHub, name: &str) -> crate::mcp::McpServerState {
    hub.states().into_iter().find(|s| s.name == name).unwrap()
}

/// An OpenAI-compatible handler at the mock server.
fn handler(url: &str) -> Box<dyn ApiHandler> {
    let text = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\n[providers.openai]\nbase_url = \"{url}\"\n"
    );
    let config = ApiConfiguration::from_toml(&text, "t.toml", |_| Some("sk-test".into())).unwrap();
    build_api_handler(&config, Mode::Act).unwrap()
}

/// A Chat Completions stream that calls `name` with `arguments` (split in two fragments).
fn tool_call_reply(id: &str, name: &str, arguments: &Value) -> Reply {
    let args = arguments.to_string();
    let (a, b) = args.split_at(args.len() / 2);
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let body = [
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
                   "function": {"name": name, "arguments": a}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": b}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "choices": [],
                   "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
        ),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    Reply::new(HttpResponse::sse(&body))
}

/// A Chat Completions stream with several tool calls `(id, name, arguments)`.
fn tool_call_reply_many(calls: &[(&str, &str, Value)]) -> Reply {
    let deltas: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (id, name, args))| {
            json!({"index": i, "id": id, "type": "function",
            "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"id": "c3", "object": "chat.completion.chunk", "choices": [{"index": 0,
               "delta": {"role": "assistant", "tool_calls": deltas}, "finish_reason": null}]}),
        json!({"id": "c3", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    );
    Reply::new(HttpResponse::sse(&body))
}

/// A Chat Completions stream answering `text`.
fn text_reply(text: &str) -> Reply {
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"id": "c2", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]}),
        json!({"id": "c2", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"id": "c2", "object": "chat.completion.chunk", "choices": [],
               "usage": {"prompt_tokens": 150, "completion_tokens": 10, "total_tokens": 160}}),
    );
    Reply::new(HttpResponse::sse(&body))
}

/// Approves (or denies) every call and records what it was asked.
struct Recorder {
    answer: bool,
    asked: Mutex<Vec<ToolCallRequest>>,
}

impl Recorder {
    fn new(answer: bool) -> Self {
        Self {
            answer,
            asked: Mutex::new(Vec::new()),
        }
    }
}

impl ToolApprover for Recorder {
    fn approve<'a>(&'a self, call: &'a ToolCallRequest) -> BoxFuture<'a, bool> {
        self.asked.lock().unwrap().push(call.clone());
        Box::pin(std::future::ready(self.answer))
    }
}

/// Runs one user turn with the tool loop, the system prompt and tools built from the hub.
async fn run_with_tools(
    hub: &McpServerHub,
    url: &str,
    approver: &dyn ToolApprover,
    prompt: &str,
    loop_settings: ToolLoopSettings,
) -> (TurnOutcome, Vec<TaskEvent>, Conversation) {
    let h = handler(url);
    let base = SystemPromptContext::default().with_native_tool_calling(true);
    let build = || get_system_prompt(&base.clone().with_mcp_servers(hub.connected_servers()));
    let ctx = request_context(
        h.as_ref(),
        hub,
        &FixedDecision(FailureDecision::Cancel),
        &build,
    );
    let mut conversation = Conversation {
        api_conversation_history: vec![Message::user_text(prompt)],
        conversation_history_deleted_range: None,
    };
    let mut events = Vec::new();
    let mut index = 0;
    let tools = ToolLoop {
        hub,
        approver,
        settings: loop_settings,
    };
    let outcome = run_turn_with_tools(
        &ctx,
        &tools,
        &mut conversation,
        &mut index,
        &mut |e: TaskEvent| events.push(e),
    )
    .await;
    (outcome, events, conversation)
}

/// The `tool` messages of a recorded Chat Completions request.
fn tool_messages(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The settings file
// ---------------------------------------------------------------------------------------------

#[test]
fn clines_settings_file_is_read_as_is() {
    // The shape Cline writes to cline_mcp_settings.json, extra fields and all.
    let text = r#"{
      "mcpServers": {
        "github.com/modelcontextprotocol/servers/tree/main/src/filesystem": {
          "command": "npx",
          "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/projects"],
          "env": {"DEBUG": "1"},
          "disabled": false,
          "autoApprove": ["read_file", "list_directory"],
          "timeout": 30,
          "transportType": "stdio"
        },
        "remote": {
          "url": "https://mcp.example.com/mcp",
          "type": "streamableHttp",
          "headers": {"Authorization": "Bearer secret-token-123"},
          "disabled": true
        },
        "legacy": {"url": "https://old.example.com/sse", "type": "sse"},
        "plain-url": {"url": "http://127.0.0.1:3001/mcp"}
      }
    }"#;
    let s = McpSettings::parse(text, Path::new("cline_mcp_settings.json")).unwrap();
    assert_eq!(s.servers.len(), 4);
    let fs = &s.servers["github.com/modelcontextprotocol/servers/tree/main/src/filesystem"];
    assert_eq!(fs.transport.kind(), "stdio");
    assert_eq!(fs.timeout, Duration::from_secs(30));
    assert_eq!(fs.auto_approve, ["read_file", "list_directory"]);
    assert!(!fs.disabled);
    let remote = &s.servers["remote"];
    assert_eq!(remote.transport.kind(), "streamableHttp");
    assert!(remote.disabled);
    assert_eq!(remote.timeout, Duration::from_secs(60));
    // Header values (secrets) never show in Debug.
    assert!(!format!("{remote:?}").contains("secret-token-123"));
    assert!(format!("{remote:?}").contains("Authorization"));
    assert_eq!(s.servers["legacy"].transport.kind(), "sse");
    assert_eq!(s.servers["plain-url"].transport.kind(), "streamableHttp");
}

#[test]
fn a_bad_settings_file_is_one_clear_sentence_naming_the_file_and_place() {
    let e = McpSettings::parse(
        "{\"mcpServers\": {\n  \"a\": {\"command\": }\n}}",
        Path::new("/x/m.json"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("/x/m.json") && e.contains("line 2"), "{e}");
    for (server, wanted) in [
        (json!({}), "neither \"command\" nor \"url\""),
        (
            json!({"type": "websocket", "url": "ws://x"}),
            "\"websocket\"",
        ),
        (json!({"type": "stdio"}), "needs a \"command\""),
        (json!({"type": "streamableHttp"}), "needs a \"url\""),
        (json!({"command": "x", "timeout": 0}), "timeout 0"),
    ] {
        let e = McpSettings::parse(
            &json!({"mcpServers": {"s1": server}}).to_string(),
            Path::new("m.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("m.json") && e.contains("\"s1\"") && e.contains(wanted),
            "{e}"
        );
    }
    // A file without mcpServers has no servers.
    assert!(
        McpSettings::parse("{}", Path::new("m.json"))
            .unwrap()
            .servers
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// Broken servers (real child processes)
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn broken_servers_fail_with_their_reason_in_plain_words_and_disabled_ones_never_start() {
    let hub = settled(settings(json!({"mcpServers": {
        "missing": {"command": "switchyard-no-such-command-4f1e"},
        "quits": {"command": "sh", "args": ["-c", "echo 'fatal: MY_TOKEN is not set' >&2; exit 3"]},
        "off": {"command": "switchyard-no-such-command-4f1e", "disabled": true},
        "bad-cwd": {"command": "sh", "cwd": "/switchyard/no/such/dir"},
        "refused": {"type": "streamableHttp", "url": "http://127.0.0.1:9/mcp"},
    }})))
    .await;
    let missing = state(&hub, "missing");
    assert_eq!(missing.status, McpServerStatus::Failed);
    let e = missing.error.unwrap();
    assert!(
        e.contains("\"switchyard-no-such-command-4f1e\" was not found"),
        "{e}"
    );

    let quits = state(&hub, "quits");
    assert_eq!(quits.status, McpServerStatus::Failed);
    let e = quits.error.unwrap();
    assert!(e.contains("exited"), "{e}");
    assert!(
        e.contains("fatal: MY_TOKEN is not set"),
        "its stderr explains it: {e}"
    );

    assert_eq!(state(&hub, "off").status, McpServerStatus::Disabled);
    let e = state(&hub, "bad-cwd").error.unwrap();
    assert!(
        e.contains("/switchyard/no/such/dir") && e.contains("does not exist"),
        "{e}"
    );
    let e = state(&hub, "refused").error.unwrap();
    assert!(
        e.contains("nothing answered") && e.contains("127.0.0.1:9"),
        "{e}"
    );

    assert!(!hub.is_connecting());
    assert!(hub.connected_servers().is_empty());
    // Each failed server is reported once, with its reason; disabled ones are not reported.
    let problems = hub.newly_unavailable();
    let names: Vec<_> = problems.iter().map(|p| p.server.as_str()).collect();
    assert_eq!(names, ["bad-cwd", "missing", "quits", "refused"]);
    assert!(hub.newly_unavailable().is_empty());
}

/// A server that never answers the handshake (a real process that never reads its input):
/// the request goes out after the wait with a notice, while the server is still connecting.
/// The wait's 10 s bound itself is checked under a paused clock below.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_hanging_on_initialize_does_not_hold_the_request_back() {
    let hub = McpServerHub::start(settings(json!({"mcpServers": {
        "hangs": {"command": "sleep", "args": ["120"], "timeout": 120},
    }})));
    let server = MockServer::start(vec![text_reply("Hello without tools.")]).await;
    let h = handler(&server.url());
    let build = || ("SYSTEM".to_owned(), Vec::new());
    let ctx = ApiRequestContext {
        settings: AttemptSettings {
            mcp_wait: Duration::from_millis(500),
            ..AttemptSettings::default()
        },
        ..request_context(
            h.as_ref(),
            hub.as_ref(),
            &FixedDecision(FailureDecision::Cancel),
            &build,
        )
    };
    let mut conversation = Conversation {
        api_conversation_history: vec![Message::user_text("Hi")],
        conversation_history_deleted_range: None,
    };
    let mut events = Vec::new();
    let mut index = 0;
    let started = std::time::Instant::now();
    let outcome = run_turn(&ctx, &mut conversation, &mut index, &mut |e: TaskEvent| {
        events.push(e)
    })
    .await;
    assert!(
        matches!(outcome.status, RequestStatus::Completed),
        "{events:?}"
    );
    assert_eq!(server.request_count(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        hub.is_connecting(),
        "the server is still connecting in the background"
    );
    assert!(
        events.contains(&TaskEvent::McpServerUnavailable {
            server: "hangs".into(),
            reason: "it is still connecting".into()
        }),
        "{events:?}"
    );
    hub.shutdown().await;
}

/// The wait is bounded at 10 s (SPEC R6.1), measured on tokio's paused clock with a real child
/// process that never answers.
#[tokio::test(start_paused = true)]
async fn the_wait_for_a_hanging_server_ends_after_10_s() {
    let hub = McpServerHub::start(settings(json!({"mcpServers": {
        "hangs": {"command": "sleep", "args": ["120"], "timeout": 120},
    }})));
    let server = MockServer::start(vec![text_reply("Hello.")]).await;
    let h = handler(&server.url());
    let build = || ("SYSTEM".to_owned(), Vec::new());
    let ctx = request_context(
        h.as_ref(),
        hub.as_ref(),
        &FixedDecision(FailureDecision::Cancel),
        &build,
    );
    let mut conversation = Conversation {
        api_conversation_history: vec![Message::user_text("Hi")],
        conversation_history_deleted_range: None,
    };
    let started = tokio::time::Instant::now();
    let mut index = 0;
    let outcome = run_turn(&ctx, &mut conversation, &mut index, &mut |_: TaskEvent| {}).await;
    assert!(matches!(outcome.status, RequestStatus::Completed));
    let sent = server.requests()[0].at - started;
    assert!(
        sent >= Duration::from_secs(10) && sent < Duration::from_millis(10_100),
        "{sent:?}"
    );
    assert!(hub.is_connecting());
    hub.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// The reference servers from npm
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn everything_server_over_stdio_lists_its_tools_and_runs_them() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let hub = settled(settings(json!({"mcpServers": {"everything": {
        "command": bin.join("mcp-server-everything"), "args": ["stdio"],
        "env": {"SWITCHYARD_TEST_VALUE": "passed-through-42"},
    }}})))
    .await;
    let s = state(&hub, "everything");
    assert_eq!(s.status, McpServerStatus::Connected, "{:?}", s.error);
    assert_eq!(s.transport, "stdio");
    let echo = s
        .tools
        .iter()
        .find(|t| t.name == "echo")
        .expect("an echo tool");
    assert_eq!(echo.description, "Echoes back the input string");
    assert_eq!(echo.input_schema["type"], "object");
    assert!(
        echo.input_schema["properties"]["message"].is_object(),
        "{}",
        echo.input_schema
    );

    let out = hub
        .call_tool(
            "everything",
            "echo",
            json!({"message": "hello from switchyard"}),
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.content.contains("hello from switchyard"), "{out:?}");
    let out = hub
        .call_tool("everything", "get-sum", json!({"a": 2, "b": 40}))
        .await;
    assert!(!out.is_error && out.content.contains("42"), "{out:?}");
    // The configured env reaches the server process.
    let out = hub.call_tool("everything", "get-env", json!({})).await;
    assert!(
        out.content.contains("passed-through-42"),
        "{}",
        &out.content[..out.content.len().min(500)]
    );
    // Bad arguments come back as an error result, not a failure of the hub.
    let out = hub
        .call_tool("everything", "get-sum", json!({"a": "two"}))
        .await;
    assert!(out.is_error, "{out:?}");

    // Its tools join the system prompt and the tools array, named per server.
    let ctx = SystemPromptContext::default()
        .with_native_tool_calling(true)
        .with_mcp_servers(hub.connected_servers());
    let (_, tools) = get_system_prompt(&ctx);
    let echo_fn = tools.iter().find(|t| t.name == "everything__echo").unwrap();
    assert_eq!(echo_fn.description, "Echoes back the input string");
    assert_eq!(echo_fn.input_schema, echo.input_schema);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_server_over_streamable_http_on_127_0_0_1() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new(bin.join("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the HTTP server did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let hub = settled(settings(json!({"mcpServers": {"web": {
        "type": "streamableHttp", "url": url, "headers": {"X-Switchyard-Test": "1"},
    }}})))
    .await;
    let s = state(&hub, "web");
    assert_eq!(s.status, McpServerStatus::Connected, "{:?}", s.error);
    assert_eq!(s.transport, "streamableHttp");
    assert!(s.tools.iter().any(|t| t.name == "get-sum"));
    let out = hub
        .call_tool("web", "get-sum", json!({"a": 19, "b": 23}))
        .await;
    assert!(!out.is_error && out.content.contains("42"), "{out:?}");
    let out = hub
        .call_tool("web", "echo", json!({"message": "over http"}))
        .await;
    assert!(out.content.contains("over http"), "{out:?}");
    hub.shutdown().await;
    child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_asks_the_filesystem_server_to_write_a_file_and_sees_the_result() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let hub = settled(settings(json!({"mcpServers": {"files": {
        "command": bin.join("mcp-server-filesystem"), "args": [root],
    }}})))
    .await;
    assert_eq!(state(&hub, "files").status, McpServerStatus::Connected);
    let target = root.join("hello.txt");
    let server = MockServer::start(vec![
        tool_call_reply(
            "call_1",
            "files__write_file",
            &json!({"path": target, "content": "written by the model\n"}),
        ),
        text_reply("I wrote hello.txt."),
    ])
    .await;
    let approver = Recorder::new(true);
    let (outcome, events, conversation) = run_with_tools(
        &hub,
        &server.url(),
        &approver,
        "Write hello.txt",
        ToolLoopSettings::default(),
    )
    .await;
    assert!(
        matches!(outcome.status, RequestStatus::Completed),
        "{events:?}"
    );
    assert_eq!(outcome.requests, 2);
    assert_eq!(outcome.usage.input_tokens, 250);

    // The server really wrote the file.
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "written by the model\n"
    );
    // The user was asked once, with the server, tool and arguments.
    let asked = approver.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0].server.as_str(), asked[0].tool.as_str()),
        ("files", "write_file")
    );
    assert_eq!(asked[0].arguments["content"], "written by the model\n");

    // The first request offered the tool with the server's schema and description.
    let first = server.requests()[0].json();
    let tool = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "files__write_file")
        .expect("write_file offered");
    assert!(
        tool["function"]["description"]
            .as_str()
            .unwrap()
            .contains("Create a new file")
    );
    assert!(tool["function"]["parameters"]["properties"]["content"].is_object());
    // The result went back to the model in the second request, after its call.
    let second = server.requests()[1].json();
    let results = tool_messages(&second);
    assert_eq!(results.len(), 1, "{second}");
    assert_eq!(results[0]["tool_call_id"], "call_1");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("Successfully wrote"),
        "{}",
        results[0]
    );
    let assistant = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"],
        "files__write_file"
    );

    // Events: the call, its result, then the final answer.
    let result = events
        .iter()
        .find_map(|e| match e {
            TaskEvent::ToolResult {
                id,
                name,
                content,
                is_error,
            } => Some((id.clone(), name.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (result.0.as_str(), result.1.as_str(), result.3),
        ("call_1", "files__write_file", false)
    );
    assert!(events.contains(&TaskEvent::Text {
        text: "I wrote hello.txt.".into()
    }));
    // History: user, assistant (call), user (result), assistant (answer).
    assert_eq!(conversation.api_conversation_history.len(), 4);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_error_goes_back_to_the_model_and_the_task_goes_on() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let forbidden = outside.path().canonicalize().unwrap().join("nope.txt");
    let hub = settled(settings(json!({"mcpServers": {"files": {
        "command": bin.join("mcp-server-filesystem"), "args": [root],
        "autoApprove": ["write_file"],
    }}})))
    .await;
    let server = MockServer::start(vec![
        tool_call_reply(
            "call_9",
            "files__write_file",
            &json!({"path": forbidden, "content": "x"}),
        ),
        text_reply("That folder is not allowed."),
    ])
    .await;
    // write_file is in autoApprove: the approver is never asked.
    let approver = Recorder::new(false);
    let (outcome, events, _) = run_with_tools(
        &hub,
        &server.url(),
        &approver,
        "Write outside",
        ToolLoopSettings::default(),
    )
    .await;
    assert!(
        matches!(outcome.status, RequestStatus::Completed),
        "{events:?}"
    );
    assert!(approver.asked.lock().unwrap().is_empty());
    assert!(!forbidden.exists());
    let results = tool_messages(&server.requests()[1].json());
    let text = results[0]["content"].as_str().unwrap();
    assert!(
        text.contains("Access denied") || text.contains("outside allowed"),
        "{text}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, TaskEvent::ToolResult { is_error: true, .. }))
    );
    assert!(events.contains(&TaskEvent::Text {
        text: "That folder is not allowed.".into()
    }));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_call_is_not_run_and_the_model_is_told() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let target = root.join("denied.txt");
    let hub = settled(settings(json!({"mcpServers": {"files": {
        "command": bin.join("mcp-server-filesystem"), "args": [root],
    }}})))
    .await;
    let server = MockServer::start(vec![
        tool_call_reply(
            "call_2",
            "files__write_file",
            &json!({"path": target, "content": "x"}),
        ),
        text_reply("OK, I will not."),
    ])
    .await;
    let approver = Recorder::new(false);
    let (outcome, _, _) = run_with_tools(
        &hub,
        &server.url(),
        &approver,
        "Write",
        ToolLoopSettings::default(),
    )
    .await;
    assert!(matches!(outcome.status, RequestStatus::Completed));
    assert_eq!(approver.asked.lock().unwrap().len(), 1);
    assert!(!target.exists(), "a denied call must not run");
    let results = tool_messages(&server.requests()[1].json());
    assert_eq!(results[0]["content"], "The user denied this tool call.");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tools_get_an_error_result_and_the_rounds_are_capped() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let hub = settled(settings(json!({"mcpServers": {"everything": {
        "command": bin.join("mcp-server-everything"), "args": ["stdio"], "autoApprove": ["echo"],
    }}})))
    .await;
    let server = MockServer::start(vec![
        // An unknown tool next to a real one: both get a result, in call order.
        tool_call_reply_many(&[
            ("call_a", "nowhere__tool", json!({})),
            ("call_e", "everything__echo", json!({"message": "first"})),
        ]),
        tool_call_reply("call_b", "everything__echo", &json!({"message": "again"})),
        text_reply("never reached"),
    ])
    .await;
    let approver = Recorder::new(false);
    let (outcome, events, _) = run_with_tools(
        &hub,
        &server.url(),
        &approver,
        "Loop",
        ToolLoopSettings { max_rounds: 1 },
    )
    .await;
    // Round 1 answered; the second answer calls again: the limit stops the loop.
    assert_eq!(server.request_count(), 2, "{events:?}");
    let results = tool_messages(&server.requests()[1].json());
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["tool_call_id"], "call_a");
    let text = results[0]["content"].as_str().unwrap();
    assert!(text.contains("no tool named \"nowhere__tool\""), "{text}");
    assert_eq!(results[1]["tool_call_id"], "call_e");
    assert!(results[1]["content"].as_str().unwrap().contains("first"));
    match outcome.status {
        RequestStatus::Failed(e) => assert!(e.message.contains("1 rounds"), "{e}"),
        other => panic!("expected a failure, got {other:?} {events:?}"),
    }
    assert!(
        events
            .iter()
            .any(|e| matches!(e, TaskEvent::Error { kind, .. } if kind == "tool_rounds_exceeded"))
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_calling_no_mcp_tool_ends_the_turn_as_before() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let hub = settled(settings(json!({"mcpServers": {"everything": {
        "command": bin.join("mcp-server-everything"), "args": ["stdio"],
    }}})))
    .await;
    let server =
        MockServer::start(vec![tool_call_reply("call_w", "get_weather", &json!({}))]).await;
    let approver = Recorder::new(true);
    let (outcome, events, conversation) = run_with_tools(
        &hub,
        &server.url(),
        &approver,
        "Weather?",
        ToolLoopSettings::default(),
    )
    .await;
    assert!(
        matches!(outcome.status, RequestStatus::Completed),
        "{events:?}"
    );
    assert_eq!(server.request_count(), 1);
    assert!(approver.asked.lock().unwrap().is_empty());
    assert_eq!(conversation.api_conversation_history.len(), 2);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TaskEvent::ToolResult { .. }))
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_dies_after_connecting_is_reported_and_its_calls_fail_cleanly() {
    let Some(bin) = mcp_test_servers() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    // `exec` keeps the pid, so the test can kill the real server process.
    let script = format!(
        "echo $$ > '{}'; exec '{}' stdio",
        pidfile.display(),
        bin.join("mcp-server-everything").display()
    );
    let hub = settled(settings(json!({"mcpServers": {"everything": {
        "command": "sh", "args": ["-c", script],
    }}})))
    .await;
    assert_eq!(state(&hub, "everything").status, McpServerStatus::Connected);
    let pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_owned();
    assert!(
        std::process::Command::new("kill")
            .args(["-9", &pid])
            .status()
            .unwrap()
            .success()
    );
    // The call fails with a plain reason (the model would see it), and the server is failed.
    let out = hub
        .call_tool("everything", "echo", json!({"message": "anyone?"}))
        .await;
    assert!(out.is_error, "{out:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while state(&hub, "everything").status != McpServerStatus::Failed {
        assert!(std::time::Instant::now() < deadline, "{:?}", hub.states());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let s = state(&hub, "everything");
    let e = s.error.unwrap();
    assert!(e.contains("closed") || e.contains("exited"), "{e}");
    assert!(s.tools.is_empty());
    assert!(hub.connected_servers().is_empty());
    let problems = hub.newly_unavailable();
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].server, "everything");
    hub.shutdown().await;
}

/// A Chat Completions stream with one call `id` to `name` whose arguments are `raw` (as
/// written, not necessarily JSON).
fn raw_tool_call_reply(id: &str, name: &str, raw: &str) -> Reply {
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"id": "c4", "object": "chat.completion.chunk", "choices": [{"index": 0,
               "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
               "function": {"name": name, "arguments": raw}}]}, "finish_reason": null}]}),
        json!({"id": "c4", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    );
    Reply::new(HttpResponse::sse(&body))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_whose_arguments_are_not_json_is_never_run_and_the_model_is_told() {
    // Issue 12 item 1: arguments cut off mid-string (or two calls merged into `{…}{…}`) at
    // the end of a completed stream. No tool_call is handed over; the user sees an error
    // result; the model gets it with the next request and can send the call again. No MCP
    // server is needed: nothing runs.
    let hub = settled(settings(json!({"mcpServers": {}}))).await;
    let broken = r#"{"path": "notes.md", "content": "line one\nline two"#;
    let server = MockServer::start(vec![
        raw_tool_call_reply("call_x", "write_file", broken),
        text_reply("Sorry, here it is again."),
    ])
    .await;
    let approver = Recorder::new(true);
    let (outcome, events, conversation) = run_with_tools(
        &hub,
        &server.url(),
        &approver,
        "Write notes.md",
        ToolLoopSettings::default(),
    )
    .await;
    assert!(
        matches!(outcome.status, RequestStatus::Completed),
        "{events:?}"
    );
    assert!(approver.asked.lock().unwrap().is_empty(), "nothing runs");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TaskEvent::ToolCall { .. })),
        "{events:?}"
    );
    let result = events
        .iter()
        .find_map(|e| match e {
            TaskEvent::ToolResult {
                id,
                content,
                is_error: true,
                ..
            } if id == "call_x" => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no error result: {events:?}"));
    assert!(result.contains("not valid JSON"), "{result}");
    assert!(
        result.contains("notes.md"),
        "the arguments are quoted: {result}"
    );
    // The model is told, with the call it made, in the next request.
    assert_eq!(server.request_count(), 2);
    let second = server.requests()[1].json();
    let told = tool_messages(&second);
    assert_eq!(told.len(), 1, "{second}");
    assert_eq!(told[0]["tool_call_id"], "call_x");
    assert_eq!(told[0]["content"], json!(result));
    let assistant = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], "{}");
    assert_eq!(conversation.api_conversation_history.len(), 4);
    hub.shutdown().await;
}
