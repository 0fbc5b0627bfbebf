//! Durable tasks through the real binary (SPEC R10): conversations survive between runs, a
//! process killed with SIGKILL while an answer streams loses nothing that was shown and
//! resumes as R9.3/R10.3 say, bad database files are refused untouched, and two processes
//! share one data directory. The tests of saving, resuming, SIGKILL and sharing run on both
//! stores (SPEC R13.1): SQLite in the data directory, and a fresh database on the real
//! PostgreSQL test server (`scripts/postgres.sh`, through `SWITCHYARD_STORE`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use std::sync::Arc;

use switchyard_core::store::PgStore;
use switchyard_core::{SqliteStore, TaskStore};
use switchyard_testkit::{Gate, HttpResponse, MockServer, Reply, Split};
use tempfile::TempDir;

const KEY: &str = "sk-test-persistence-key-never-printed-0b1c";

/// The four text pieces of [`answer`], in order.
const PIECES: [&str; 4] = ["Once ", "upon ", "a ", "time."];

/// One SSE event of an OpenAI chat stream carrying `text`.
fn text_event(text: &str) -> String {
    format!(
        "data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n"
    )
}

/// An OpenAI chat stream answering [`PIECES`], with usage and `[DONE]`; and the body offset
/// at which each text event ends.
fn answer() -> (String, Vec<usize>) {
    let mut body = String::new();
    let mut ends = Vec::new();
    for piece in PIECES {
        body.push_str(&text_event(piece));
        ends.push(body.len());
    }
    body.push_str("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    body.push_str("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":4,\"total_tokens\":15}}\n\n");
    body.push_str("data: [DONE]\n\n");
    (body, ends)
}

fn complete_reply(text: &str) -> Reply {
    let body = format!(
        "{}data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":7,\"completion_tokens\":2,\"total_tokens\":9}}}}\n\ndata: [DONE]\n\n",
        text_event(text)
    );
    Reply::new(HttpResponse::sse(&body))
}

struct Env {
    home: TempDir,
    data: TempDir,
    /// `SWITCHYARD_STORE`: a PostgreSQL database, or `None` for SQLite in `data`.
    store_url: Option<String>,
}

impl Env {
    fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
            store_url: None,
        }
    }

    /// An environment whose store is a fresh database on the PostgreSQL test server; `None`
    /// (the test returns) when there is none outside CI.
    #[track_caller]
    fn postgres() -> Option<Self> {
        let url = switchyard_testkit::fresh_postgres_database("cli")?;
        Some(Self::on_store(url))
    }

    /// A new home and data directory on the PostgreSQL store `url` (another machine of the
    /// same team).
    fn on_store(url: String) -> Self {
        Self {
            store_url: Some(url),
            ..Self::new()
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("SWITCHYARD_HOME", self.home.path())
            .env("SWITCHYARD_DATA_DIR", self.data.path())
            .env("OPENAI_API_KEY", KEY)
            .envs(self.store_url.iter().map(|u| ("SWITCHYARD_STORE", u)))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs to the end on a blocking thread (the mock server keeps serving).
    async fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        self.run_with(args, &[]).await
    }

    /// [`Self::run`] with extra environment variables.
    async fn run_with(
        &self,
        args: &[&str],
        vars: &[(&str, &str)],
    ) -> (Option<i32>, String, String) {
        let mut cmd = self.command(args);
        cmd.envs(vars.iter().copied());
        tokio::task::spawn_blocking(move || {
            let out = cmd.output().unwrap();
            let stdout = String::from_utf8(out.stdout).unwrap();
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert!(!stdout.contains(KEY) && !stderr.contains(KEY), "key leaked");
            (out.status.code(), stdout, stderr)
        })
        .await
        .unwrap()
    }

    /// The store the processes use.
    async fn store(&self) -> Arc<dyn TaskStore> {
        match &self.store_url {
            Some(url) => Arc::new(PgStore::connect(url).await.unwrap()),
            None => Arc::new(SqliteStore::open(self.data.path()).unwrap()),
        }
    }
}

fn provider_args(url: &str) -> Vec<String> {
    [
        "--json",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("{url}/v1")])
    .collect()
}

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn task_id(lines: &[Value]) -> String {
    lines[0]["task_id"].as_str().unwrap().to_owned()
}

fn user(text: &str) -> Value {
    serde_json::json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

fn assistant(texts: &[&str]) -> Value {
    let content: Vec<Value> = texts
        .iter()
        .map(|t| serde_json::json!({"type": "text", "text": t}))
        .collect();
    serde_json::json!({"role": "assistant", "content": content})
}

/// The chat messages of a recorded request, without the system message.
fn sent_messages(server: &MockServer, i: usize) -> Vec<Value> {
    server.requests()[i].json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_is_saved_listed_exported_and_resumed() {
    saved_listed_exported_and_resumed(Env::new()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_is_saved_listed_exported_and_resumed_on_postgres() {
    let Some(env) = Env::postgres() else { return };
    saved_listed_exported_and_resumed(env).await;
}

async fn saved_listed_exported_and_resumed(env: Env) {
    let server = MockServer::start(vec![
        complete_reply("Hi there."),
        complete_reply("Sure."),
        complete_reply("Yes."),
    ])
    .await;
    let url = server.url();
    let mut args: Vec<String> = vec!["task".into()];
    args.extend(provider_args(&url));
    args.push("Say hi".into());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, _) = env.run(&argv).await;
    assert_eq!(code, Some(0), "{stdout}");
    let id = task_id(&lines(&stdout));

    // Listed with its prompt, model, tokens and cost.
    let (code, listing, stderr) = env.run(&["tasks"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let row = listing
        .lines()
        .find(|l| l.starts_with(&id))
        .expect(&listing);
    assert!(
        row.contains("Say hi") && row.contains(" m ") && row.contains("7/2"),
        "{row}"
    );
    let (_, listing, _) = env.run(&["tasks", "--json"]).await;
    let t: Value = serde_json::from_str(listing.lines().next().unwrap()).unwrap();
    assert_eq!(t["task_id"], id.as_str());
    assert_eq!(t["messages"], 2);
    assert_eq!(t["tokens_out"], 2);

    // Exported in the Anthropic message shape.
    let (code, export, _) = env.run(&["export", &id]).await;
    assert_eq!(code, Some(0));
    let export: Value = serde_json::from_str(&export).unwrap();
    assert_eq!(
        export,
        serde_json::json!([user("Say hi"), assistant(&["Hi there."])])
    );

    // Resumed with the task's provider and model: the whole history is sent.
    let (code, stdout, _) = env
        .run(&[
            "resume",
            &id,
            "Again",
            "--json",
            "--base-url",
            &format!("{url}/v1"),
        ])
        .await;
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(task_id(&lines(&stdout)), id);
    let sent = sent_messages(&server, 1);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[1]["content"], "Hi there.");
    assert_eq!(server.requests()[1].json()["model"], "m");
    let (_, export, _) = env.run(&["export", &id]).await;
    let export: Value = serde_json::from_str(&export).unwrap();
    assert_eq!(export.as_array().unwrap().len(), 4);

    // Totals add up over both runs; request numbering goes on.
    let store = env.store().await;
    let task = store.task(&id).await.unwrap();
    assert_eq!(task.usage.tokens_in, 14);
    assert_eq!(store.max_request_index(&id).await.unwrap(), 2);

    // Resumed with another model (the provider stays the task's): the task records it.
    let (code, stdout, _) = env
        .run(&[
            "resume",
            &id,
            "Once more",
            "--model",
            "m2",
            "--json",
            "--base-url",
            &format!("{url}/v1"),
        ])
        .await;
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(server.requests()[2].json()["model"], "m2");
    assert_eq!(env.store().await.task(&id).await.unwrap().model, "m2");
    assert_eq!(
        env.store().await.task(&id).await.unwrap().provider,
        "openai"
    );

    // Resuming an answered task without a prompt outside a terminal is a clear error, and
    // records nothing (no `task_started` for a run that does nothing).
    let events_before = env.store().await.events(&id).await.unwrap().len();
    let (code, _, stderr) = env.run(&["resume", &id]).await;
    assert_eq!(code, Some(2));
    assert!(stderr.contains("pass the next message"), "{stderr}");
    assert_eq!(
        env.store().await.events(&id).await.unwrap().len(),
        events_before
    );
    let (code, _, stderr) = env.run(&["resume", "404", "x"]).await;
    assert_eq!(code, Some(2));
    assert!(stderr.contains("no task with id 404"), "{stderr}");
    let (code, _, stderr) = env.run(&["export", "404"]).await;
    assert_eq!(code, Some(2));
    assert!(stderr.contains("no task with id 404"), "{stderr}");
}

/// Starts `args`, reads JSON lines until `ready` says so and `server` has received
/// `requests` requests, then SIGKILLs the process.
async fn kill_when(
    env: &Env,
    args: Vec<String>,
    server: &MockServer,
    requests: usize,
    ready: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = env.command(&argv);
    cmd.stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if tx
                .send(serde_json::from_str::<Value>(&line).unwrap())
                .is_err()
            {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    while !ready(&seen) {
        let line = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await;
        let line = line.unwrap_or_else(|_| panic!("no output for 30 s: {seen:?}"));
        seen.push(line.unwrap_or_else(|| panic!("stdout closed early: {seen:?}")));
    }
    let arrived =
        tokio::time::timeout(Duration::from_secs(30), server.wait_for_requests(requests)).await;
    assert!(
        arrived.is_ok(),
        "{requests} requests not seen in 30 s: {seen:?}"
    );
    assert_eq!(server.request_count(), requests, "{seen:?}");
    child.kill().unwrap(); // SIGKILL
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), None, "killed by a signal");
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_while_streaming_keeps_every_earlier_message_and_resumes() {
    let (_, ends) = answer();
    // Offsets: right after the head, inside the first event, after one and two complete
    // events, and inside the fourth.
    let offsets = [0, ends[0] - 5, ends[0], ends[1], ends[3] - 3];
    sigkill_while_streaming(&offsets, || Some(Env::new())).await;
}

/// The same on PostgreSQL at 20 points of the stream, evenly spread from its first byte to
/// inside the last text event (each point a fresh database).
#[tokio::test(flavor = "multi_thread")]
async fn sigkill_at_20_points_on_postgres_keeps_every_earlier_message_and_resumes() {
    let (_, ends) = answer();
    let offsets: Vec<usize> = (0..20).map(|i| i * ends[3] / 20).collect();
    sigkill_while_streaming(&offsets, Env::postgres).await;
}

/// Kills `switchyard resume` with SIGKILL once the stream stalled at each of `offsets`
/// (bytes of the answer's body), then checks the store and resumes; `env` gives a fresh
/// environment per point (`None`: skipped).
async fn sigkill_while_streaming(offsets: &[usize], env: impl Fn() -> Option<Env>) {
    let (body, ends) = answer();
    for &offset in offsets {
        let Some(env) = env() else { return };
        let complete_before = ends.iter().filter(|&&e| e <= offset).count();
        let shown: String = PIECES[..complete_before].concat();
        let stalled = Reply::new(HttpResponse::sse(&body))
            .split(Split::Every(9))
            .stall_at(offset, Duration::from_secs(120));
        let server = MockServer::start(vec![
            complete_reply("First answer."),
            stalled,
            complete_reply("Resumed."),
        ])
        .await;
        let url = server.url();

        // Turn 1 completes.
        let mut args: Vec<String> = vec!["task".into()];
        args.extend(provider_args(&url));
        args.push("First question".into());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, _) = env.run(&argv).await;
        assert_eq!(code, Some(0), "{stdout}");
        let id = task_id(&lines(&stdout));

        // Turn 2 is killed once everything before the offset was shown.
        let mut args: Vec<String> = vec!["resume".into(), id.clone(), "Tell a story".into()];
        args.extend(provider_args(&url));
        let seen = kill_when(&env, args, &server, 2, move |seen| {
            let texts = seen.iter().filter(|l| l["type"] == "text").count();
            let started = seen.iter().any(|l| l["type"] == "api_req_started");
            started && texts == complete_before
        })
        .await;
        let _ = seen;

        // Reopened: the earlier turn is intact, the question is stored, nothing is half-written.
        let store = env.store().await;
        let stored = store.messages(&id).await.unwrap();
        assert_eq!(stored.len(), 3, "offset {offset}");
        let stored_json: Vec<Value> = stored
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect();
        assert_eq!(
            stored_json,
            vec![
                user("First question"),
                assistant(&["First answer."]),
                user("Tell a story")
            ],
            "offset {offset}"
        );
        let streamed: String = store
            .events(&id)
            .await
            .unwrap()
            .iter()
            .filter(|e| e.kind == "text")
            .map(|e| e.event["text"].as_str().unwrap().to_owned())
            .collect::<String>();
        assert_eq!(streamed, format!("First answer.{shown}"), "offset {offset}");
        drop(store);

        // Resumed: the cut-off turn is handled as R9.3 / R10.3 say, and the task goes on.
        // After a cut-off answer no prompt is needed: the model is asked to continue.
        let base = format!("{url}/v1");
        let mut resume = vec!["resume", id.as_str()];
        if shown.is_empty() {
            resume.push("Go on");
        }
        resume.extend(["--json", "--base-url", &base]);
        let (code, stdout, stderr) = env.run(&resume).await;
        assert_eq!(code, Some(0), "offset {offset}: {stdout}{stderr}");
        let sent = sent_messages(&server, 2);
        let store = env.store().await;
        let events = store.events(&id).await.unwrap();
        let started_rows: Vec<&Value> = events
            .iter()
            .filter(|e| e.kind == "api_req_started")
            .map(|e| &e.event)
            .collect();
        let finished: Vec<&Value> = events
            .iter()
            .filter(|e| e.kind == "api_req_finished")
            .map(|e| &e.event)
            .collect();
        let final_history: Vec<Value> = store
            .messages(&id)
            .await
            .unwrap()
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect();
        if shown.is_empty() {
            // R10.3: the request that produced nothing was dropped; the unanswered question
            // and the new message go out together.
            assert_eq!(started_rows.len(), 2, "offset {offset}: {events:?}");
            assert!(finished.is_empty(), "offset {offset}");
            assert_eq!(sent.len(), 3, "offset {offset}: {sent:?}");
            assert_eq!(
                sent[2]["content"], "Tell a story\n\nGo on",
                "offset {offset}: {sent:?}"
            );
            assert_eq!(final_history.len(), 4, "offset {offset}");
        } else {
            // R9.3: what streamed is the assistant's answer, marked, and its request row says
            // streaming_failed.
            assert_eq!(started_rows.len(), 3, "offset {offset}");
            assert_eq!(finished.len(), 1, "offset {offset}");
            assert_eq!(finished[0]["cancel_reason"], "streaming_failed");
            assert_eq!(finished[0]["request_index"], 2);
            assert_eq!(sent.len(), 5, "offset {offset}: {sent:?}");
            assert_eq!(
                sent[3]["content"],
                format!("{shown}\n\n[Response interrupted by API Error]"),
                "offset {offset}: {sent:?}"
            );
            assert_eq!(
                final_history[3],
                assistant(&[&shown, "[Response interrupted by API Error]"]),
                "offset {offset}"
            );
            assert_eq!(
                final_history[4],
                user(
                    "[The previous response was interrupted by an API error. Continue exactly where it stopped.]"
                )
            );
            assert_eq!(final_history.len(), 6, "offset {offset}");
        }
        assert_eq!(final_history[0], user("First question"));
        assert_eq!(final_history[1], assistant(&["First answer."]));
        assert_eq!(final_history.last().unwrap(), &assistant(&["Resumed."]));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_keeps_the_partial_answer_and_the_task_resumes() {
    let (body, ends) = answer();
    let stalled = Reply::new(HttpResponse::sse(&body)).stall_at(ends[1], Duration::from_secs(120));
    let server = MockServer::start(vec![stalled, complete_reply("Done.")]).await;
    let env = Env::new();
    let url = server.url();
    let mut args: Vec<String> = vec!["task".into()];
    args.extend(provider_args(&url));
    args.push("Story".into());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = env.command(&argv);
    cmd.stderr(Stdio::null());
    let (seen, code) = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut seen = Vec::new();
        while seen.iter().filter(|l: &&Value| l["type"] == "text").count() < 2 {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0);
            seen.push(serde_json::from_str::<Value>(&line).unwrap());
        }
        let pid = child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-INT", &pid])
                .status()
                .unwrap()
                .success()
        );
        let mut rest = String::new();
        out.read_to_string(&mut rest).unwrap();
        seen.extend(
            rest.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()),
        );
        (seen, child.wait().unwrap().code())
    })
    .await
    .unwrap();
    assert_eq!(code, Some(130), "{seen:?}");
    let id = task_id(&seen);
    let history: Vec<Value> = env
        .store()
        .await
        .messages(&id)
        .await
        .unwrap()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert_eq!(
        history,
        vec![
            user("Story"),
            assistant(&["Once upon ", "[Response interrupted by user]"])
        ]
    );
    let (code, stdout, _) = env
        .run(&["resume", &id, "--json", "--base-url", &format!("{url}/v1")])
        .await;
    assert_eq!(code, Some(0), "{stdout}");
    // No prompt needed: the cut-off answer is continued.
    let sent = sent_messages(&server, 1);
    assert_eq!(sent.len(), 3);
    assert_eq!(
        sent[2]["content"],
        "[The previous response was interrupted by an API error. Continue exactly where it stopped.]"
    );
}

fn assert_refused(stderr: &str, words: &str) {
    assert!(
        stderr.contains("error:") && stderr.contains(words),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_database_files_are_refused_with_a_clear_error_and_left_untouched() {
    let env = Env::new();
    let db = env.data.path().join("switchyard.db");

    // Corrupt.
    let garbage: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 253) as u8).collect();
    std::fs::write(&db, &garbage).unwrap();
    let (code, _, stderr) = env.run(&["tasks"]).await;
    assert_eq!(code, Some(2));
    assert_refused(&stderr, "is damaged or is not a Switchyard database");
    let (code, stdout, _) = env.run(&["task", "--json", "hello"]).await;
    assert_eq!(code, Some(2));
    let l = lines(&stdout);
    assert_eq!(l[0]["type"], "error");
    assert_eq!(l[0]["kind"], "store");
    assert_eq!(std::fs::read(&db).unwrap(), garbage);

    // Newer schema: a real database whose user_version (header bytes 60..64) says 99.
    std::fs::remove_file(&db).unwrap();
    drop(env.store().await);
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[60..64].copy_from_slice(&99u32.to_be_bytes());
    std::fs::write(&db, &bytes).unwrap();
    let (code, _, stderr) = env.run(&["tasks"]).await;
    assert_eq!(code, Some(2));
    assert_refused(&stderr, "schema version 99");
    assert_refused(&stderr, "upgrade Switchyard");
    let (code, _, stderr) = env.run(&["task", "hello"]).await;
    assert_eq!(code, Some(2));
    assert_refused(&stderr, "schema version 99");
    assert_eq!(std::fs::read(&db).unwrap(), bytes);

    // Read-only.
    bytes[60..64].copy_from_slice(&1u32.to_be_bytes());
    std::fs::write(&db, &bytes).unwrap();
    let mut perms = std::fs::metadata(&db).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&db, perms).unwrap();
    let (code, _, stderr) = env.run(&["task", "hello"]).await;
    assert_eq!(code, Some(2));
    assert_refused(&stderr, "is read-only");
    assert_eq!(std::fs::read(&db).unwrap(), bytes);
}

/// Four processes share one data directory, and provably at the same time: every answer stops
/// at a gate after its first two pieces, and the gate opens only once all four streams are
/// there and the database holds all four tasks with their two pieces each. So each process
/// wrote to the database while the others had their tasks open, and wrote again after them.
#[tokio::test(flavor = "multi_thread")]
async fn two_processes_on_one_data_directory_do_not_corrupt_each_other() {
    four_processes_on_one_store(Env::new()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn four_processes_on_one_postgres_store_do_not_corrupt_each_other() {
    let Some(env) = Env::postgres() else { return };
    four_processes_on_one_store(env).await;
}

async fn four_processes_on_one_store(env: Env) {
    let (body, ends) = answer();
    let gate = Gate::new();
    let reply = Reply::new(HttpResponse::sse(&body))
        .split(Split::Every(7))
        .gate_at(ends[1], &gate);
    let server = MockServer::start(vec![reply]).await;
    let env = Arc::new(env);
    let url = server.url();
    let mut runs = Vec::new();
    for n in 0..4 {
        let env = env.clone();
        let url = url.clone();
        runs.push(tokio::spawn(async move {
            let mut args: Vec<String> = vec!["task".into()];
            args.extend(provider_args(&url));
            args.push(format!("question {n}"));
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            env.run(&argv).await
        }));
    }
    if tokio::time::timeout(Duration::from_secs(60), gate.wait_until_reached(4))
        .await
        .is_err()
    {
        // Say why: the output of every process that already ended.
        let mut ended = String::new();
        for run in runs.iter_mut().filter(|r| r.is_finished()) {
            let (code, stdout, stderr) = run.await.unwrap();
            ended.push_str(&format!("exit {code:?}\n{stdout}{stderr}\n"));
        }
        panic!(
            "{} of four answers reached the gate within 60 s; processes that ended:\n{ended}",
            gate.reached()
        );
    }
    // The pieces sent before the gate are stored as they arrive: poll until all four
    // processes have stored theirs (a deadline, not a guess).
    let store = env.store().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let tasks = store.list_tasks().await.unwrap();
        let mut halfway = 0;
        for t in &tasks {
            let events = store.events(&t.id).await.unwrap();
            if events.iter().filter(|e| e.kind == "text").count() == 2 {
                halfway += 1;
            }
        }
        if tasks.len() == 4 && halfway == 4 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} tasks, {halfway} with two pieces stored, 30 s after all four streams reached the gate",
            tasks.len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        runs.iter().all(|r| !r.is_finished()),
        "a process ended before the gate opened"
    );
    gate.open();
    let mut ids = Vec::new();
    for run in runs {
        let (code, stdout, stderr) = run.await.unwrap();
        assert_eq!(code, Some(0), "{stdout}{stderr}");
        ids.push(task_id(&lines(&stdout)));
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "every task has its own id");
    let tasks = store.list_tasks().await.unwrap();
    assert_eq!(tasks.len(), 4);
    for task in tasks {
        let history = store.messages(&task.id).await.unwrap();
        assert_eq!(history.len(), 2);
        let json = serde_json::to_value(&history[1]).unwrap();
        assert_eq!(json, assistant(&["Once upon a time."]));
        assert_eq!(task.usage.tokens_out, 4);
        let texts = store
            .events(&task.id)
            .await
            .unwrap()
            .iter()
            .filter(|e| e.kind == "text")
            .count();
        assert_eq!(texts, 4);
    }
}

/// In a terminal, `switchyard task` asks for a follow-up after each answer until an empty
/// line. The terminal is a pseudo-terminal from util-linux `script`; without it the test fails
/// in CI and is skipped visibly elsewhere.
#[tokio::test(flavor = "multi_thread")]
async fn in_a_terminal_the_task_asks_for_follow_ups_until_an_empty_line() {
    use std::io::Write;
    if !switchyard_testkit::require_script() {
        return;
    }
    let server = MockServer::start(vec![complete_reply("One."), complete_reply("Two.")]).await;
    let env = Env::new();
    let inner = format!(
        "{} task --provider openai --model m --base-url {}/v1 'First question'",
        env!("CARGO_BIN_EXE_switchyard"),
        server.url()
    );
    let mut script = Command::new("script");
    script
        .args(["-q", "-e", "-c", &inner, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", env.home.path())
        .env("SWITCHYARD_DATA_DIR", env.data.path())
        .env("OPENAI_API_KEY", KEY)
        .env("TERM", "dumb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = tokio::task::spawn_blocking(move || {
        let mut child = script.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // Typed ahead: the terminal holds the lines until each question reads one.
        stdin.write_all(b"Second question\n\n").unwrap();
        let output = child.wait_with_output().unwrap();
        drop(stdin);
        output
    })
    .await
    .unwrap();
    let transcript = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{transcript}");
    assert!(
        transcript.contains("One.") && transcript.contains("Two."),
        "{transcript}"
    );
    assert_eq!(server.request_count(), 2, "{transcript}");
    let sent = sent_messages(&server, 1);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[2]["content"], "Second question");
    let store = env.store().await;
    let tasks = store.list_tasks().await.unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].message_count, 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cline_task_directory_is_imported_exported_and_resumed() {
    let env = Env::new();
    let src = tempfile::tempdir().unwrap();
    let dir = src.path().join("1733000000000");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("api_conversation_history.json"),
        r#"[{"role":"user","content":[{"type":"text","text":"<task>\nhi\n</task>"}],"ts":1733000000001},
            {"role":"assistant","content":"Hello!","ts":1733000000002}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("ui_messages.json"),
        r#"[{"ts":1733000000000,"type":"say","say":"task","text":"hi","modelInfo":{"providerId":"openai","modelId":"m","mode":"act"}},
            {"ts":1733000000001,"type":"say","say":"api_req_started","text":"{\"tokensIn\":3,\"tokensOut\":2,\"cost\":0.5}"},
            {"ts":1733000000002,"type":"say","say":"text","text":"Hello!"}]"#,
    )
    .unwrap();
    let (code, stdout, stderr) = env.run(&["import", dir.to_str().unwrap()]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "1733000000000");
    assert!(stderr.contains("imported 2 messages"), "{stderr}");
    let (_, export, _) = env.run(&["export", "1733000000000"]).await;
    let export: Value = serde_json::from_str(&export).unwrap();
    assert_eq!(
        export,
        serde_json::json!([user("<task>\nhi\n</task>"), assistant(&["Hello!"])])
    );
    let (_, listing, _) = env.run(&["tasks", "--json"]).await;
    let t: Value = serde_json::from_str(listing.trim()).unwrap();
    assert_eq!(t["first_prompt"], "hi");
    assert_eq!(t["model"], "m");
    assert_eq!(t["cost_usd"], 0.5);

    let server = MockServer::start(vec![complete_reply("Again.")]).await;
    let base = format!("{}/v1", server.url());
    let (code, stdout, _) = env
        .run(&[
            "resume",
            "1733000000000",
            "More",
            "--json",
            "--base-url",
            &base,
        ])
        .await;
    assert_eq!(code, Some(0), "{stdout}");
    let sent = sent_messages(&server, 0);
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[1]["content"], "Hello!");

    // Not a task directory: a clear error, nothing imported.
    let (code, _, stderr) = env.run(&["import", src.path().to_str().unwrap()]).await;
    assert_eq!(code, Some(2));
    assert!(stderr.contains("api_conversation_history.json"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_on_the_built_in_local_default_resumes_there_and_never_gets_the_users_key() {
    // No configuration file and no --provider: the built-in local model server, here the mock
    // server on the port SWITCHYARD_LOCAL_MODEL_PORT names.
    let server =
        MockServer::start(vec![complete_reply("Hi there."), complete_reply("Sure.")]).await;
    let port = server.url().rsplit(':').next().unwrap().to_owned();
    let vars = [("SWITCHYARD_LOCAL_MODEL_PORT", port.as_str())];
    let env = Env::new();
    let (code, stdout, stderr) = env.run_with(&["task", "--json", "Say hi"], &vars).await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let id = task_id(&lines(&stdout));
    // Resumed with no flags: the same local server and model, with the whole history.
    let (code, stdout, stderr) = env
        .run_with(&["resume", &id, "Again", "--json"], &vars)
        .await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(server.request_count(), 2);
    assert_eq!(sent_messages(&server, 1).len(), 3);
    for request in server.requests() {
        assert_eq!(request.json()["model"], "smollm2-135m-instruct");
        // The user's OPENAI_API_KEY (set by Env) is not sent to whatever listens locally.
        let auth = request.header("authorization").unwrap_or_default();
        assert!(
            !auth.contains(KEY),
            "the key went to the local default: {auth}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn listing_tasks_on_a_fresh_data_dir_creates_nothing() {
    let env = Env::new();
    let (code, stdout, stderr) = env.run(&["tasks"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("no saved tasks yet"), "{stderr}");
    let (code, stdout, _) = env.run(&["tasks", "--json"]).await;
    assert_eq!((code, stdout.as_str()), (Some(0), ""));
    assert!(
        !env.data
            .path()
            .join(switchyard_core::store::DB_FILE)
            .exists(),
        "listing created the database"
    );
}

/// SPEC R13.1: twenty machines (each its own home and data directory) write a task at once to
/// one PostgreSQL store; a twenty-first sees all twenty, each whole.
#[tokio::test(flavor = "multi_thread")]
async fn twenty_machines_write_tasks_at_once_to_one_postgres_store_and_a_21st_sees_them_all() {
    let Some(url) = switchyard_testkit::fresh_postgres_database("twenty") else {
        return;
    };
    let server = MockServer::start((0..20).map(|_| complete_reply("Answer.")).collect()).await;
    let base = server.url();
    let runs: Vec<_> = (0..20)
        .map(|n| {
            let env = Env::on_store(url.clone());
            let base = base.clone();
            tokio::spawn(async move {
                let mut args: Vec<String> = vec!["task".into()];
                args.extend(provider_args(&base));
                args.push(format!("machine {n}"));
                let argv: Vec<&str> = args.iter().map(String::as_str).collect();
                env.run(&argv).await
            })
        })
        .collect();
    let mut ids = Vec::new();
    for run in runs {
        let (code, stdout, stderr) = run.await.unwrap();
        assert_eq!(code, Some(0), "{stdout}{stderr}");
        ids.push(task_id(&lines(&stdout)));
    }
    let reader = Env::on_store(url);
    let (code, listing, stderr) = reader.run(&["tasks", "--json"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let listed = lines(&listing);
    assert_eq!(listed.len(), 20, "{listing}");
    let mut prompts: Vec<String> = listed
        .iter()
        .map(|t| {
            assert_eq!(t["messages"], 2, "{t}");
            assert_eq!(t["tokens_out"], 2, "{t}");
            assert!(ids.contains(&t["task_id"].as_str().unwrap().to_owned()));
            t["first_prompt"].as_str().unwrap().to_owned()
        })
        .collect();
    prompts.sort();
    let mut expected: Vec<String> = (0..20).map(|n| format!("machine {n}")).collect();
    expected.sort();
    assert_eq!(prompts, expected);
    // Nothing was written to the machines' data directories.
    assert!(!reader.data.path().join("switchyard.db").exists());
}

/// `switchyard store migrate` says what it did; `switchyard store copy` moves a machine's
/// SQLite history to PostgreSQL whole (export is the same, totals too), skips what is already
/// there when run again, and never prints the database password.
#[tokio::test(flavor = "multi_thread")]
async fn store_copy_moves_sqlite_history_to_postgres_and_migrate_says_what_it_did() {
    let Some(url) = switchyard_testkit::fresh_postgres_database("copy") else {
        return;
    };
    // Trust authentication ignores the password; it must still never be printed.
    let url = url.replacen("postgres@", "postgres:sekrit-db-pw@", 1);
    let server = MockServer::start(vec![
        complete_reply("One."),
        complete_reply("Two."),
        complete_reply("Three."),
        complete_reply("Four."),
    ])
    .await;
    let base = server.url();
    let local = Env::new();
    let mut ids = Vec::new();
    for prompt in ["First", "Second"] {
        let mut args: Vec<String> = vec!["task".into()];
        args.extend(provider_args(&base));
        args.push(prompt.into());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, _) = local.run(&argv).await;
        assert_eq!(code, Some(0), "{stdout}");
        ids.push(task_id(&lines(&stdout)));
    }
    let team = Env::on_store(url.clone());
    let no_pw = |out: &str| assert!(!out.contains("sekrit"), "password printed: {out}");

    let (code, stdout, stderr) = team.run(&["store", "migrate"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    no_pw(&format!("{stdout}{stderr}"));
    let latest = switchyard_core::store::PG_SCHEMA_VERSION;
    assert!(
        stdout.contains(&format!("migrated from version 0 to {latest}")),
        "{stdout}"
    );
    let (code, stdout, _) = team.run(&["store", "migrate"]).await;
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains(&format!("schema version {latest}, up to date")),
        "{stdout}"
    );

    let from = format!("sqlite:{}", local.data.path().display());
    let (code, stdout, stderr) = team.run(&["store", "copy", "--from", &from]).await;
    assert_eq!(code, Some(0), "{stderr}");
    no_pw(&format!("{stdout}{stderr}"));
    assert!(
        stdout.contains("copied 2 task(s) (4 messages)")
            && stdout.contains("0 already there")
            && stdout.contains("postgres://postgres@127.0.0.1"),
        "{stdout}"
    );
    for id in &ids {
        let (_, here, _) = local.run(&["export", id]).await;
        let (code, there, _) = team.run(&["export", id]).await;
        assert_eq!(code, Some(0));
        assert_eq!(here, there);
    }
    let (_, here, _) = local.run(&["tasks", "--json"]).await;
    let (_, there, _) = team.run(&["tasks", "--json"]).await;
    assert_eq!(here, there);
    let (local_store, team_store) = (local.store().await, team.store().await);
    for id in &ids {
        let a = local_store.events(id).await.unwrap();
        let b = team_store.events(id).await.unwrap();
        let strip = |e: &[switchyard_core::store::StoredEvent]| -> Vec<(i64, String, Value)> {
            e.iter()
                .map(|e| (e.ts_ms, e.kind.clone(), e.event.clone()))
                .collect()
        };
        assert_eq!(strip(&a), strip(&b));
        assert_eq!(
            team_store.max_request_index(id).await.unwrap(),
            local_store.max_request_index(id).await.unwrap()
        );
    }

    // Again: nothing copied twice. The explicit --to names the same store.
    let (code, stdout, _) = local
        .run(&["store", "copy", "--from", &from, "--to", &url])
        .await;
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains("copied 0 task(s)") && stdout.contains("2 already there"),
        "{stdout}"
    );

    // The copied task goes on on the team's store.
    let (code, stdout, stderr) = team
        .run(&[
            "resume",
            &ids[0],
            "And then?",
            "--json",
            "--base-url",
            &format!("{base}/v1"),
        ])
        .await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(team_store.messages(&ids[0]).await.unwrap().len(), 4);
    assert_eq!(sent_messages(&server, 2).len(), 3);

    // Clear refusals.
    let (code, _, stderr) = team
        .run(&["store", "copy", "--from", "sqlite:/nonexistent/x.db"])
        .await;
    assert_eq!(code, Some(2));
    assert_refused(&stderr, "there is no task database at /nonexistent/x.db");
    let (code, _, stderr) = team
        .run(&["store", "copy", "--from", "mysql://u:sekrit-db-pw@h/db"])
        .await;
    assert_eq!(code, Some(2));
    no_pw(&stderr);
    assert_refused(
        &stderr,
        "write postgres://USER@HOST:PORT/DATABASE or sqlite:PATH",
    );
}

/// A private PostgreSQL server (scripts/postgres.sh on its own port and folder), stopped and
/// removed when dropped: the restart test must not restart the server other tests use.
struct PrivateServer {
    port: String,
    dir: std::path::PathBuf,
}

impl PrivateServer {
    fn script(&self, command: &str) -> String {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/postgres.sh");
        let out = Command::new(script)
            .arg(command)
            .env("SWITCHYARD_PG_PORT", &self.port)
            .env("SWITCHYARD_PG_DIR", &self.dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/postgres.sh {command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.script("stop")));
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(self.dir.with_extension("initdb.log"));
    }
}

/// Starts `switchyard task` whose answer stops at a gate after two pieces, and waits until
/// the store holds those two pieces.
async fn task_at_gate(
    env: &Env,
    server: &MockServer,
    gate: &Gate,
    reached: usize,
) -> tokio::task::JoinHandle<(Option<i32>, String, String)> {
    let mut args: Vec<String> = vec!["task".into()];
    args.extend(provider_args(&server.url()));
    args.push("Tell a story".into());
    let mut cmd = env.command(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let run = tokio::task::spawn_blocking(move || {
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    });
    tokio::time::timeout(Duration::from_secs(60), gate.wait_until_reached(reached))
        .await
        .expect("the answer did not reach the gate within 60 s");
    let store = env.store().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let mut pieces = 0;
        for t in store.list_tasks().await.unwrap() {
            let events = store.events(&t.id).await.unwrap();
            if events.iter().filter(|e| e.kind == "text").count() == 2 {
                pieces += 1;
            }
        }
        if pieces == reached {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "pieces not stored");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run
}

/// A PostgreSQL restart in the middle of a streamed answer: the task reconnects and finishes,
/// nothing is lost. A server that stays down fails the task clearly (after the reconnect
/// time), what was stored before stays, and the task resumes once the server is back.
#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_restart_mid_task_reconnects_and_a_server_down_fails_clearly() {
    if switchyard_testkit::postgres_server_url().is_none() {
        return;
    }
    let server_pg = PrivateServer {
        port: "54338".into(),
        dir: std::env::temp_dir().join(format!("switchyard-pg-restart-{}", std::process::id())),
    };
    let url = server_pg.script("start");
    let (body, ends) = answer();
    let gate = Gate::new();
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::sse(&body)).gate_at(ends[1], &gate),
        Reply::new(HttpResponse::sse(&body)).gate_at(ends[1], &gate),
        complete_reply("Resumed."),
    ])
    .await;
    let env = Env::on_store(url);

    // Restart mid-answer: the stream goes on and is stored whole.
    let run = task_at_gate(&env, &server, &gate, 1).await;
    server_pg.script("restart");
    gate.open();
    let (code, stdout, stderr) = run.await.unwrap();
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let id = task_id(&lines(&stdout));
    let store = env.store().await;
    let history: Vec<Value> = store
        .messages(&id)
        .await
        .unwrap()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert_eq!(
        history,
        vec![user("Tell a story"), assistant(&["Once upon a time."])]
    );
    let texts = store.events(&id).await.unwrap();
    assert_eq!(texts.iter().filter(|e| e.kind == "text").count(), 4);
    drop(store);

    // Down for good mid-answer: a clear failure, earlier rows kept, resumable later.
    let gate = Gate::new();
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::sse(&body)).gate_at(ends[1], &gate),
        complete_reply("Resumed."),
    ])
    .await;
    let env = Env::on_store(env.store_url.clone().unwrap());
    let before: Vec<String> = env
        .store()
        .await
        .list_tasks()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    let run = task_at_gate(&env, &server, &gate, 1).await;
    server_pg.script("stop");
    gate.open();
    let (code, stdout, stderr) = run.await.unwrap();
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(all.contains("cannot reach the task store"), "{all}");
    assert!(all.contains("start the server"), "{all}");
    server_pg.script("start");
    let store = env.store().await;
    let task = store
        .list_tasks()
        .await
        .unwrap()
        .into_iter()
        .find(|t| !before.contains(&t.id))
        .expect("the new task was stored before the server went down");
    let stored = store.messages(&task.id).await.unwrap();
    assert_eq!(stored.len(), 1, "the question is kept");
    let base = format!("{}/v1", server.url());
    let (code, stdout, stderr) = env
        .run(&["resume", &task.id, "--json", "--base-url", &base])
        .await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let last = store.messages(&task.id).await.unwrap();
    assert_eq!(
        serde_json::to_value(last.last().unwrap()).unwrap(),
        assistant(&["Resumed."])
    );
}
