//! Durable tasks through the real binary (SPEC R10): conversations survive between runs, a
//! process killed with SIGKILL while an answer streams loses nothing that was shown and
//! resumes as R9.3/R10.3 say, bad database files are refused untouched, and two processes
//! share one data directory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
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
}

impl Env {
    fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            data: tempfile::tempdir().unwrap(),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("SWITCHYARD_HOME", self.home.path())
            .env("SWITCHYARD_DATA_DIR", self.data.path())
            .env("OPENAI_API_KEY", KEY)
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

    fn store(&self) -> SqliteStore {
        SqliteStore::open(self.data.path()).unwrap()
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
    let server = MockServer::start(vec![
        complete_reply("Hi there."),
        complete_reply("Sure."),
        complete_reply("Yes."),
    ])
    .await;
    let env = Env::new();
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
    let store = env.store();
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
    assert_eq!(env.store().task(&id).await.unwrap().model, "m2");
    assert_eq!(env.store().task(&id).await.unwrap().provider, "openai");

    // Resuming an answered task without a prompt outside a terminal is a clear error.
    let (code, _, stderr) = env.run(&["resume", &id]).await;
    assert_eq!(code, Some(2));
    assert!(stderr.contains("pass the next message"), "{stderr}");
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
    let (body, ends) = answer();
    // Offsets: right after the head, inside the first event, after one and two complete
    // events, and inside the fourth.
    let offsets = [0, ends[0] - 5, ends[0], ends[1], ends[3] - 3];
    for offset in offsets {
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
        let env = Env::new();
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
        let store = env.store();
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
        let store = env.store();
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
    drop(env.store());
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
    let (body, ends) = answer();
    let gate = Gate::new();
    let reply = Reply::new(HttpResponse::sse(&body))
        .split(Split::Every(7))
        .gate_at(ends[1], &gate);
    let server = MockServer::start(vec![reply]).await;
    let env = std::sync::Arc::new(Env::new());
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
    tokio::time::timeout(Duration::from_secs(60), gate.wait_until_reached(4))
        .await
        .expect("four answers did not reach the gate within 60 s");
    // The pieces sent before the gate are stored as they arrive: poll until all four
    // processes have stored theirs (a deadline, not a guess).
    let store = env.store();
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
    let store = env.store();
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
