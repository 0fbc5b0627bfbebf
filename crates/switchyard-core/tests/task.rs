//! The persisted task through its public API (SPEC R6.3, R8.6, R9.5, R10.2): every message
//! and the deleted range are in the store before the request that follows them is sent (a probe
//! handler reads the store when each request goes out); a cancelled turn keeps what streamed
//! and resumes; a change that cannot be saved stops the turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use switchyard_api::{
    ApiConfiguration, ApiHandler, ApiHandlerModel, ApiStream, CancellationToken, ContentBlock,
    Message, Mode, RequestOptions, Role, ToolSpec, build_api_handler,
};
use switchyard_core::Task;
use switchyard_core::context::{DeletedRange, FILE_READ_NOTICE};
use switchyard_core::store::{NewTask, SqliteStore, StoreError, TaskStore};
use switchyard_core::task::{
    CONTINUE_AFTER_INTERRUPTION, CancelReason, INTERRUPTED_BY_USER_MARKER, INTERRUPTED_MARKER,
    RequestStatus, ResumeReport, TaskBuilder, TaskError, TaskEvent, TaskStatus,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, case_replies};

/// What the store held when a request was sent.
type Snapshot = (Vec<Message>, Option<DeletedRange>);

/// Sends through `inner`; when the request goes out (the stream is first polled), takes a
/// snapshot of the task in the store.
struct Probe {
    inner: Box<dyn ApiHandler>,
    store: Arc<dyn TaskStore>,
    task_id: Mutex<Option<String>>,
    snapshots: Arc<Mutex<Vec<Snapshot>>>,
}

impl ApiHandler for Probe {
    fn create_message(
        &self,
        system: &str,
        messages: &[Message],
        tools: &[ToolSpec],
        options: RequestOptions,
    ) -> ApiStream {
        let mut inner = self.inner.create_message(system, messages, tools, options);
        let id = self.task_id.lock().unwrap().clone();
        let (store, snapshots) = (Arc::clone(&self.store), Arc::clone(&self.snapshots));
        Box::pin(async_stream::stream! {
            if let Some(id) = id {
                let stored = store.messages(&id).await.unwrap();
                let range = store.task(&id).await.unwrap().conversation_history_deleted_range;
                snapshots.lock().unwrap().push((stored, range));
            }
            while let Some(item) = inner.next().await {
                yield item;
            }
        })
    }
    fn get_model(&self) -> ApiHandlerModel {
        self.inner.get_model()
    }
    fn provider_id(&self) -> &str {
        self.inner.provider_id()
    }
}

fn probe(store: &Arc<SqliteStore>, toml: &str) -> Arc<Probe> {
    let config = ApiConfiguration::from_toml(toml, "t.toml", |_| Some("sk-test".into())).unwrap();
    Arc::new(Probe {
        inner: build_api_handler(&config, Mode::Act).unwrap(),
        store: store.clone(),
        task_id: Mutex::new(None),
        snapshots: Arc::default(),
    })
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

/// A task on `handler` and `store` with the system prompt "SYSTEM" and no rules files.
fn builder(
    handler: Arc<dyn ApiHandler>,
    store: &Arc<SqliteStore>,
    cwd: &std::path::Path,
) -> TaskBuilder {
    Task::builder_with_handler(handler, Mode::Act, store.clone())
        .system_prompt("SYSTEM")
        .cwd(cwd)
        .global_rules_dir(None)
}

async fn run(task: &mut Task) -> (RequestStatus, Vec<TaskEvent>) {
    let mut events = Vec::new();
    let outcome = task
        .run_turn(None, &CancellationToken::new(), &mut |e| events.push(e))
        .await
        .unwrap();
    (outcome.status, events)
}

#[tokio::test(start_paused = true)]
async fn every_message_is_stored_before_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let server = MockServer::start(case_replies("C34")).await;
    let toml = format!(
        "[act]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5-20250929\"\n[providers.anthropic]\nbase_url = \"{}\"\n",
        server.url()
    );
    let h = probe(&store, &toml);
    let mut task = builder(h.clone(), &store, dir.path())
        .create("Write hello in Python.")
        .await
        .unwrap();
    *h.task_id.lock().unwrap() = Some(task.id().to_owned());
    let (status, events) = run(&mut task).await;
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
    // Afterwards the store holds exactly what the task holds, and every event.
    let id = task.id().to_owned();
    assert_eq!(store.messages(&id).await.unwrap(), task.messages());
    let kinds: Vec<String> = store
        .events(&id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds.len(), events.len());
    assert_eq!(kinds.iter().filter(|k| *k == "api_req_started").count(), 2);
    let record = store.task(&id).await.unwrap();
    assert_eq!(record.usage.tokens_in, 2048);
    assert!(record.last_request_tokens > 0);
}

#[tokio::test(start_paused = true)]
async fn the_range_and_file_read_dedupe_are_stored_before_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    // A 4,000-token window: the max allowed size is 3,200 tokens.
    let toml = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"m\"\n[act.model_info]\ncontext_window = 4000\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.url()
    );
    let h = probe(&store, &toml);
    let task = store.create_task(&new_task()).await.unwrap();
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
                signature: None,
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
        store.append_message(&task.id, i, m).await.unwrap();
    }
    let mut resumed = builder(h.clone(), &store, dir.path())
        .resume(&task.id)
        .await
        .unwrap();
    assert_eq!(resumed.resume_report(), Some(&ResumeReport::default()));
    *h.task_id.lock().unwrap() = Some(task.id.clone());
    resumed.add_message("next").await.unwrap();
    // The dedupe of the first read was recorded as soon as it applied.
    let edits = store.context_edits(&task.id).await.unwrap();
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0].kind, "file_read_dedupe");
    assert_eq!(edits[0].detail["path"], "src/x.rs");

    let (status, events) = run(&mut resumed).await;
    assert!(matches!(status, RequestStatus::Completed), "{events:?}");
    let range = resumed.deleted_range();
    assert!(
        range.is_some(),
        "the estimate over the window truncated before the request"
    );
    // The range was in the store when the request was created (R6.3).
    let snapshots = h.snapshots.lock().unwrap().clone();
    assert_eq!(snapshots[0].1, range);
    let edits = store.context_edits(&task.id).await.unwrap();
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
    let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let toml = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"m\"\n[act.model_info]\ncontext_window = 4000\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.url()
    );
    let h = probe(&store, &toml);
    let task = store.create_task(&new_task()).await.unwrap();
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
                signature: None,
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
        store.append_message(&task.id, i, m).await.unwrap();
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
        .await
        .unwrap();
    let mut resumed = builder(h.clone(), &store, dir.path())
        .resume(&task.id)
        .await
        .unwrap();
    resumed.add_message("next").await.unwrap();
    let (status, events) = run(&mut resumed).await;
    assert!(matches!(status, RequestStatus::Completed), "{events:?}");
    // R8.6: the dedupe saved more than 30 %, so nothing was truncated.
    assert_eq!(resumed.deleted_range(), None);
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
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds, ["file_read_dedupe"]);
}

/// Deletes the task behind the task's back when the first request is created.
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
    let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
    // C34: the first stream breaks after text; the turn would send a second request.
    let server = MockServer::start(case_replies("C34")).await;
    let toml = format!(
        "[act]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5-20250929\"\n[providers.anthropic]\nbase_url = \"{}\"\n",
        server.url()
    );
    let config = ApiConfiguration::from_toml(&toml, "t.toml", |_| Some("sk-test".into())).unwrap();
    let task = store.create_task(&new_task()).await.unwrap();
    let h = Arc::new(DeleteTaskOnFirstRequest {
        inner: build_api_handler(&config, Mode::Act).unwrap(),
        db: store.path().to_owned(),
        task_id: task.id.clone(),
    });
    let mut task = builder(h, &store, dir.path())
        .resume(&task.id)
        .await
        .unwrap();
    task.add_message("Write hello in Python.").await.unwrap();
    let result = task
        .run_turn(None, &CancellationToken::new(), &mut |_| {})
        .await;
    let err = result.unwrap_err();
    assert!(
        matches!(err, TaskError::Store(StoreError::TaskNotFound { .. })),
        "{err}"
    );
    // The partial answer could not be saved, so no second request was sent.
    assert_eq!(server.request_count(), 1);
}

/// One SSE event of an OpenAI chat stream carrying `text`.
fn text_event(text: &str) -> String {
    format!(
        "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n"
    )
}

/// An OpenAI chat stream answering `pieces`, with usage and `[DONE]`.
fn chat_reply(pieces: &[&str]) -> String {
    let mut body: String = pieces.iter().map(|p| text_event(p)).collect();
    body.push_str("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    body.push_str("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":4,\"total_tokens\":15}}\n\n");
    body.push_str("data: [DONE]\n\n");
    body
}

fn openai(url: &str) -> Arc<dyn ApiHandler> {
    let toml = format!(
        "[act]\nprovider = \"openai\"\nmodel = \"m\"\n[providers.openai]\nbase_url = \"{url}/v1\"\n"
    );
    let config = ApiConfiguration::from_toml(&toml, "t.toml", |_| Some("sk-test".into())).unwrap();
    Arc::from(build_api_handler(&config, Mode::Act).unwrap())
}

/// SPEC R9.5 through the token: the turn stops at once while the answer streams, what streamed
/// is kept and marked, the request is recorded as cancelled by the user, and a reopened task
/// asks the model to continue.
#[tokio::test]
async fn cancelling_a_turn_keeps_what_streamed_and_the_task_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let first = chat_reply(&["Once ", "upon ", "a time."]);
    let stall_at = text_event("Once ").len();
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::sse(&first)).stall_at(stall_at, Duration::from_secs(60)),
        Reply::new(HttpResponse::sse(&chat_reply(&["upon a time."]))),
    ])
    .await;
    let mut task = builder(openai(&server.url()), &store, dir.path())
        .create("Tell a story.")
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    let mut events = Vec::new();
    let started = std::time::Instant::now();
    let outcome = {
        let cancel_on_text = cancel.clone();
        let mut on_event = |e: TaskEvent| {
            if matches!(e, TaskEvent::Text { .. }) {
                cancel_on_text.cancel();
            }
            events.push(e);
        };
        task.run_turn(None, &cancel, &mut on_event).await.unwrap()
    };
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(outcome.task_status(), TaskStatus::Cancelled);
    assert_eq!(
        events.last(),
        Some(&TaskEvent::ApiReqFinished {
            request_index: 1,
            cancel_reason: Some(CancelReason::UserCancelled),
            streaming_failed_message: None,
        })
    );
    let partial = Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Text {
                text: "Once ".into(),
            },
            ContentBlock::Text {
                text: INTERRUPTED_BY_USER_MARKER.into(),
            },
        ],
    };
    assert_eq!(task.messages().last(), Some(&partial));
    assert_eq!(store.messages(task.id()).await.unwrap(), task.messages());
    task.finish(outcome.task_status(), &mut |_| {})
        .await
        .unwrap();

    let mut resumed = builder(openai(&server.url()), &store, dir.path())
        .resume(task.id())
        .await
        .unwrap();
    assert!(resumed.has_pending_turn() && !resumed.awaits_answer());
    let (status, _) = run(&mut resumed).await;
    assert_eq!(status, RequestStatus::Completed);
    let sent = server.requests()[1].json();
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        CONTINUE_AFTER_INTERRUPTION
    );
    assert_eq!(resumed.messages().len(), 4);
    // Requests are numbered across the task: the continuation is request 2.
    let started_rows: Vec<_> = store
        .events(task.id())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "api_req_started")
        .map(|e| e.event["request_index"].clone())
        .collect();
    assert_eq!(started_rows, [json!(1), json!(2)]);
}

/// A blank first message stores nothing; a turn on an answered task without a message is
/// refused; `task_started` and `task_finished` bracket a run of the task, with its timing.
#[tokio::test]
async fn a_task_refuses_blank_and_missing_messages_and_brackets_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::sse(&chat_reply(&["Hi."])))]).await;
    let err = builder(openai(&server.url()), &store, dir.path())
        .create("  \n")
        .await
        .unwrap_err();
    assert!(matches!(err, TaskError::EmptyMessage), "{err}");
    assert_eq!(err.kind(), "config");
    assert!(store.list_tasks().await.unwrap().is_empty());

    let mut task = builder(openai(&server.url()), &store, dir.path())
        .create("Hello")
        .await
        .unwrap();
    let mut events = Vec::new();
    let cancel = CancellationToken::new();
    let outcome = task
        .run_turn(None, &cancel, &mut |e| events.push(e))
        .await
        .unwrap();
    assert_eq!(outcome.task_status(), TaskStatus::Completed);
    assert_eq!(outcome.requests, 1);
    assert!(!task.has_pending_turn());
    let err = task
        .run_turn(None, &cancel, &mut |e| events.push(e))
        .await
        .unwrap_err();
    assert!(matches!(err, TaskError::NothingToAnswer { .. }), "{err}");
    task.finish(TaskStatus::Completed, &mut |e| events.push(e))
        .await
        .unwrap();
    assert_eq!(
        events.first(),
        Some(&TaskEvent::TaskStarted {
            task_id: task.id().to_owned(),
            mode: "act".into(),
            provider: "openai".into(),
            model: "m".into(),
        })
    );
    let Some(TaskEvent::TaskFinished {
        status,
        first_token_ms,
        ..
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(*status, TaskStatus::Completed);
    assert!(first_token_ms.is_some());
    let stored: Vec<String> = store
        .events(task.id())
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    let shown: Vec<String> = events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(stored, shown);
}

/// One store, one handler, two tasks at once: each gets its own answer, history and events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_run_at_once_on_one_store_and_one_handler() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::sse(&chat_reply(&["Same ", "answer."]))),
        Reply::new(HttpResponse::sse(&chat_reply(&["Same ", "answer."]))),
    ])
    .await;
    let handler = openai(&server.url());
    let run_one = |prompt: &'static str| {
        let (handler, store, dir) = (handler.clone(), store.clone(), dir.path().to_owned());
        async move {
            let mut task = builder(handler, &store, &dir).create(prompt).await.unwrap();
            let mut events = Vec::new();
            let outcome = task
                .run_turn(None, &CancellationToken::new(), &mut |e| events.push(e))
                .await
                .unwrap();
            (task, outcome, events)
        }
    };
    let (a, b) = tokio::join!(
        tokio::spawn(run_one("first")),
        tokio::spawn(run_one("second"))
    );
    let ((ta, oa, ea), (tb, ob, eb)) = (a.unwrap(), b.unwrap());
    assert_ne!(ta.id(), tb.id());
    for (task, outcome, events, prompt) in [(&ta, &oa, &ea, "first"), (&tb, &ob, &eb, "second")] {
        assert_eq!(outcome.task_status(), TaskStatus::Completed, "{events:?}");
        assert_eq!(
            task.messages(),
            [
                Message::user_text(prompt),
                Message::assistant_text("Same answer.")
            ]
        );
        assert_eq!(store.messages(task.id()).await.unwrap(), task.messages());
        assert_eq!(store.events(task.id()).await.unwrap().len(), events.len());
    }
}
