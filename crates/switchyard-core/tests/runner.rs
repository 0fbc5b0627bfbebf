//! The persisted task runner (SPEC R6.3, R8.6, R10.2): every message and the deleted range are
//! in the store before the request that follows them is sent. A probe handler reads the store
//! each time a request is created.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use serde_json::json;
use switchyard_api::{
    ApiConfiguration, ApiHandler, ApiHandlerModel, ApiStream, CancellationToken, ContentBlock,
    Message, Mode, RequestOptions, Role, ToolSpec, build_api_handler,
};
use switchyard_core::context::{DeletedRange, FILE_READ_NOTICE};
use switchyard_core::store::{NewTask, TaskStore};
use switchyard_core::task::runner::TaskRunner;
use switchyard_core::task::{
    ApiRequestContext, AttemptSettings, CONTINUE_AFTER_INTERRUPTION, FailureDecision,
    FixedDecision, INTERRUPTED_MARKER, NoMcpServers, RequestStatus, TaskEvent,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, case_replies};

/// What the store held when a request was created.
type Snapshot = (Vec<Message>, Option<DeletedRange>);

struct Probe {
    inner: Box<dyn ApiHandler>,
    store: Arc<TaskStore>,
    task_id: Mutex<Option<String>>,
    snapshots: Mutex<Vec<Snapshot>>,
}

impl ApiHandler for Probe {
    fn create_message(
        &self,
        system: &str,
        messages: &[Message],
        tools: &[ToolSpec],
        options: RequestOptions,
    ) -> ApiStream {
        if let Some(id) = self.task_id.lock().unwrap().clone() {
            let stored = self.store.messages(&id).unwrap();
            let range = self
                .store
                .task(&id)
                .unwrap()
                .conversation_history_deleted_range;
            self.snapshots.lock().unwrap().push((stored, range));
        }
        self.inner.create_message(system, messages, tools, options)
    }
    fn get_model(&self) -> ApiHandlerModel {
        self.inner.get_model()
    }
    fn provider_id(&self) -> &str {
        self.inner.provider_id()
    }
}

fn probe(store: &Arc<TaskStore>, toml: &str) -> Probe {
    let config = ApiConfiguration::from_toml(toml, "t.toml", |_| Some("sk-test".into())).unwrap();
    Probe {
        inner: build_api_handler(&config, Mode::Act).unwrap(),
        store: store.clone(),
        task_id: Mutex::new(None),
        snapshots: Mutex::new(Vec::new()),
    }
}

fn new_task() -> NewTask {
    NewTask {
        cwd: "/w".into(),
        mode: "act".into(),
        provider: "anthropic".into(),
        model: "m".into(),
        first_prompt: "p".into(),
    }
}

async fn run(runner: &mut TaskRunner, h: &Probe) -> (RequestStatus, Vec<TaskEvent>) {
    let prompt = || ("SYSTEM".to_owned(), Vec::new());
    let ctx = ApiRequestContext {
        handler: h,
        mcp_hub: &NoMcpServers,
        decider: &FixedDecision(FailureDecision::Cancel),
        system_prompt: &prompt,
        previous_request_total_tokens: 0,
        request_index: 1,
        settings: AttemptSettings::default(),
        cancel: CancellationToken::new(),
    };
    let mut events = Vec::new();
    let outcome = runner
        .run_turn(&ctx, &mut |e| events.push(e))
        .await
        .unwrap();
    (outcome.status, events)
}

#[tokio::test(start_paused = true)]
async fn every_message_is_stored_before_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(TaskStore::open(dir.path()).unwrap());
    let server = MockServer::start(case_replies("C34")).await;
    let toml = format!(
        "[act]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5-20250929\"\n[providers.anthropic]\nbase_url = \"{}\"\n",
        server.url()
    );
    let h = probe(&store, &toml);
    let mut runner = TaskRunner::create(store.clone(), &new_task()).unwrap();
    *h.task_id.lock().unwrap() = Some(runner.task_id().to_owned());
    runner.add_user_message("Write hello in Python.").unwrap();
    let (status, events) = run(&mut runner, &h).await;
    assert!(matches!(status, RequestStatus::Completed), "{events:?}");

    let snapshots = h.snapshots.lock().unwrap().clone();
    assert_eq!(snapshots.len(), 2);
    // Request 1: the prompt was stored first.
    assert_eq!(
        snapshots[0].0,
        vec![Message::user_text("Write hello in Python.")]
    );
    // Request 2 (after the stream broke): the marked partial answer and the continue request
    // were stored before it was sent (R10.2).
    let before_second = &snapshots[1].0;
    assert_eq!(before_second.len(), 3);
    assert_eq!(
        before_second[1].content.last(),
        Some(&ContentBlock::Text {
            text: INTERRUPTED_MARKER.into()
        })
    );
    assert_eq!(
        before_second[2],
        Message::user_text(CONTINUE_AFTER_INTERRUPTION)
    );
    // Afterwards the store holds exactly what the runner holds, and every event.
    let id = runner.task_id().to_owned();
    assert_eq!(
        store.messages(&id).unwrap(),
        runner.conversation().api_conversation_history
    );
    let kinds: Vec<String> = store
        .events(&id)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds.len(), events.len());
    assert_eq!(kinds.iter().filter(|k| *k == "api_req_started").count(), 2);
    let task = store.task(&id).unwrap();
    assert_eq!(task.usage.tokens_in, 2048);
    assert!(task.last_request_tokens > 0);
}

#[tokio::test(start_paused = true)]
async fn the_range_and_file_read_dedupe_are_stored_before_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(TaskStore::open(dir.path()).unwrap());
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    // A 4,000-token window: the max allowed size is 3,200 tokens.
    let toml = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"m\"\n[act.model_info]\ncontext_window = 4000\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.url()
    );
    let h = probe(&store, &toml);
    let task = store.create_task(&new_task()).unwrap();
    // A history of 20 exchanges (≈ 5,000 tokens at 4 bytes per token) in which the same file
    // is read twice near the end.
    let big = "let x = 1;\n".repeat(120); // 1,320 bytes
    let mut history = vec![Message::user_text("task"), Message::assistant_text("ok")];
    for i in 0..18 {
        history.push(Message::user_text(format!("step {i} {}", "y".repeat(1000))));
        history.push(Message::assistant_text(format!("done {i}")));
    }
    for (n, id) in ["r1", "r2"].iter().enumerate() {
        history.push(Message {
            role: Role::User,
            content: vec![ContentBlock::Text {
                text: format!("read it {n}"),
            }],
        });
        history.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: (*id).into(),
                name: "read_file".into(),
                input: json!({"path": "src/x.rs"}),
            }],
        });
        history.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: (*id).into(),
                content: big.clone(),
                is_error: false,
            }],
        });
        history.push(Message::assistant_text("read"));
    }
    for (i, m) in history.iter().enumerate() {
        store.append_message(&task.id, i, m).unwrap();
    }
    let (mut runner, report) = TaskRunner::resume(store.clone(), &task.id).unwrap();
    assert_eq!(report, Default::default());
    *h.task_id.lock().unwrap() = Some(task.id.clone());
    runner.add_user_message("next").unwrap();
    // The dedupe of the first read was recorded as soon as it applied.
    let edits = store.context_edits(&task.id).unwrap();
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0].kind, "file_read_dedupe");
    assert_eq!(edits[0].detail["path"], "src/x.rs");

    let (status, events) = run(&mut runner, &h).await;
    assert!(matches!(status, RequestStatus::Completed), "{events:?}");
    let range = runner.conversation().conversation_history_deleted_range;
    assert!(
        range.is_some(),
        "the estimate over the window truncated before the request"
    );
    // The range was in the store when the request was created (R6.3).
    let snapshots = h.snapshots.lock().unwrap().clone();
    assert_eq!(snapshots[0].1, range);
    let edits = store.context_edits(&task.id).unwrap();
    assert!(edits.iter().any(|e| e.kind == "truncation"), "{edits:?}");
    // What was sent fits the budget, with the file once and a notice for an earlier copy
    // when that copy is still visible.
    let body = server.requests()[0].body.clone();
    let body = String::from_utf8(body).unwrap();
    let (_, end) = range.unwrap();
    assert!(body.len() / 4 < 3200, "{} bytes sent", body.len());
    // The latest read (message 44) stays visible and is sent whole, once.
    assert!(end < 44, "{range:?}");
    assert_eq!(
        body.matches("let x = 1;").count(),
        120,
        "the file is sent once"
    );
    // The earlier read (message 40) is replaced by the notice when still visible.
    let notice = serde_json::to_string(FILE_READ_NOTICE).unwrap();
    let notice = &notice[1..notice.len() - 1];
    assert_eq!(body.contains(notice), end < 40, "{range:?}");
}

#[tokio::test(start_paused = true)]
async fn a_dedupe_saving_30_percent_replaces_the_truncation_the_last_request_called_for() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(TaskStore::open(dir.path()).unwrap());
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let toml = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"m\"\n[act.model_info]\ncontext_window = 4000\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.url()
    );
    let h = probe(&store, &toml);
    let task = store.create_task(&new_task()).unwrap();
    let big = "let y = 2;\n".repeat(360); // 3,960 bytes
    let mut history = vec![Message::user_text("task"), Message::assistant_text("ok")];
    for id in ["r1", "r2"] {
        history.push(Message::user_text("read it"));
        history.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: id.into(),
                name: "read_file".into(),
                input: json!({"path": "src/y.rs"}),
            }],
        });
        history.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: id.into(),
                content: big.clone(),
                is_error: false,
            }],
        });
        history.push(Message::assistant_text("read"));
    }
    for (i, m) in history.iter().enumerate() {
        store.append_message(&task.id, i, m).unwrap();
    }
    // The previous request used 3,300 tokens: at or over the 3,200 max allowed (R8.2).
    store
        .add_usage(
            &task.id,
            &switchyard_core::store::TaskUsage {
                tokens_in: 3_000,
                tokens_out: 300,
                ..Default::default()
            },
        )
        .unwrap();
    let (mut runner, _) = TaskRunner::resume(store.clone(), &task.id).unwrap();
    runner.add_user_message("next").unwrap();
    let (status, events) = run(&mut runner, &h).await;
    assert!(matches!(status, RequestStatus::Completed), "{events:?}");
    // R8.6: the dedupe saved more than 30 %, so nothing was truncated.
    assert_eq!(
        runner.conversation().conversation_history_deleted_range,
        None
    );
    let body = String::from_utf8(server.requests()[0].body.clone()).unwrap();
    assert_eq!(
        body.matches("let y = 2;").count(),
        360,
        "the file is sent once"
    );
    let notice = serde_json::to_string(FILE_READ_NOTICE).unwrap();
    assert!(body.contains(&notice[1..notice.len() - 1]));
    let kinds: Vec<String> = store
        .context_edits(&task.id)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, ["file_read_dedupe"]);
}

/// Deletes the task behind the runner's back when the first request is created.
struct DeleteTaskOnFirstRequest {
    inner: Box<dyn ApiHandler>,
    db: std::path::PathBuf,
    task_id: String,
}

impl ApiHandler for DeleteTaskOnFirstRequest {
    fn create_message(
        &self,
        system: &str,
        messages: &[Message],
        tools: &[ToolSpec],
        options: RequestOptions,
    ) -> ApiStream {
        let conn = rusqlite::Connection::open(&self.db).unwrap();
        conn.execute_batch("PRAGMA foreign_keys = ON").unwrap();
        conn.execute("DELETE FROM tasks WHERE id = ?1", [&self.task_id])
            .unwrap();
        self.inner.create_message(system, messages, tools, options)
    }
    fn get_model(&self) -> ApiHandlerModel {
        self.inner.get_model()
    }
    fn provider_id(&self) -> &str {
        self.inner.provider_id()
    }
}

#[tokio::test(start_paused = true)]
async fn a_change_that_cannot_be_saved_stops_the_turn_before_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(TaskStore::open(dir.path()).unwrap());
    // C34: the first stream breaks after text; the turn would send a second request.
    let server = MockServer::start(case_replies("C34")).await;
    let toml = format!(
        "[act]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5-20250929\"\n[providers.anthropic]\nbase_url = \"{}\"\n",
        server.url()
    );
    let config = ApiConfiguration::from_toml(&toml, "t.toml", |_| Some("sk-test".into())).unwrap();
    let mut runner = TaskRunner::create(store.clone(), &new_task()).unwrap();
    runner.add_user_message("Write hello in Python.").unwrap();
    let h = DeleteTaskOnFirstRequest {
        inner: build_api_handler(&config, Mode::Act).unwrap(),
        db: store.path().to_owned(),
        task_id: runner.task_id().to_owned(),
    };
    let prompt = || ("SYSTEM".to_owned(), Vec::new());
    let ctx = ApiRequestContext {
        handler: &h,
        mcp_hub: &NoMcpServers,
        decider: &FixedDecision(FailureDecision::Cancel),
        system_prompt: &prompt,
        previous_request_total_tokens: 0,
        request_index: 1,
        settings: AttemptSettings::default(),
        cancel: CancellationToken::new(),
    };
    let result = runner.run_turn(&ctx, &mut |_| {}).await;
    let err = result.unwrap_err();
    assert!(
        matches!(err, switchyard_core::store::StoreError::TaskNotFound { .. }),
        "{err}"
    );
    // The partial answer could not be saved, so no second request was sent.
    assert_eq!(server.request_count(), 1);
}
