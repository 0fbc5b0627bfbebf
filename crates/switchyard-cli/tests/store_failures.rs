//! Store failures are the store's (SPEC R10.2, R13.1; issue 26), through the real binary on
//! real file systems: a full disk (a 2 MiB tmpfs) says so in one sentence, keeps what was
//! saved, exits non-zero and never blames the provider; a first run on a full disk leaves no
//! file behind; a read-only mount is listed, exported and shown by `limits`.
//!
//! Public reports of the same failures, which these tests keep from happening here:
//! - opencode: SQLITE_FULL during a session killed the process with no word of what was saved
//!   (https://github.com/anomalyco/opencode/issues/17589), and after a full disk the tool could
//!   not be opened again (https://github.com/anomalyco/opencode/issues/12848);
//! - xonsh's SQLite history shows a message instead of exiting on a full disk
//!   (https://github.com/xonsh/xonsh/pull/4116); a full disk wiped qTox's chat history
//!   (https://github.com/qTox/qTox/issues/2179);
//! - a read-only open of a WAL database still needs its `-shm`, so a read-only directory
//!   reported no sessions (https://github.com/getagentseal/codeburn/pull/1017); haiku.rag opens
//!   read-only for its listing commands (https://github.com/ggozad/haiku.rag/pull/285).
//!
//! Mounting needs root (CI runs as root); elsewhere these tests are skipped through
//! [`switchyard_testkit::skip_or_fail`], which fails them in CI.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use switchyard_testkit::{HttpResponse, MockServer, Reply};
use tempfile::TempDir;

const KEY: &str = "sk-test-store-failures-key-never-printed-7d2e";

/// A mount made by the test, unmounted (lazily, so a stray open file cannot keep it) when
/// dropped.
struct Mount {
    at: PathBuf,
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}

/// Runs `mount ARGS`; `None` (the test skipped, or failed in CI) when it cannot.
#[track_caller]
fn mount(args: &[&str], at: &Path) -> Option<Mount> {
    let out = Command::new("mount").args(args).arg(at).output();
    match out {
        Ok(out) if out.status.success() => Some(Mount { at: at.to_owned() }),
        Ok(out) => {
            switchyard_testkit::skip_or_fail(&format!(
                "`mount {}` failed ({}); run the tests as root",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            None
        }
        Err(e) => {
            switchyard_testkit::skip_or_fail(&format!("`mount` cannot be run ({e})"));
            None
        }
    }
}

/// A 2 MiB tmpfs at a new directory.
#[track_caller]
fn small_tmpfs(dir: &TempDir) -> Option<Mount> {
    mount(&["-t", "tmpfs", "-o", "size=2m", "tmpfs"], dir.path())
}

/// Fills the file system holding `dir` with a file there, until it refuses one more byte.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = vec![0u8; 4096];
    while f.write_all(&block).is_ok() {}
    while f.write_all(&[0]).is_ok() {}
    path
}

/// An OpenAI chat stream answering `text` in pieces of 64 KiB, with usage and `[DONE]`.
fn answer(text: &str) -> Reply {
    let mut body = String::new();
    for piece in text.as_bytes().chunks(64 * 1024) {
        let piece = std::str::from_utf8(piece).unwrap();
        body.push_str(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{piece}\"}}}}]}}\n\n"
        ));
    }
    body.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    );
    body.push_str("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2,\"total_tokens\":9}}\n\n");
    body.push_str("data: [DONE]\n\n");
    Reply::new(HttpResponse::sse(&body))
}

/// Runs the binary with its home in `home` and its data directory `data`.
fn run(home: &Path, data: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home)
        .env("SWITCHYARD_DATA_DIR", data)
        .env("OPENAI_API_KEY", KEY)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY), "key leaked");
    (out.status.code(), stdout, stderr)
}

/// `task --json` against `server` with `prompt`.
fn task(
    home: &Path,
    data: &Path,
    server: &MockServer,
    prompt: &str,
) -> (Option<i32>, String, String) {
    let base = format!("{}/v1", server.url());
    let args = [
        "task",
        "--json",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
        &base,
        prompt,
    ];
    run(home, data, &args)
}

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `error` events of a `--json` run.
fn errors(stdout: &str) -> Vec<Value> {
    lines(stdout)
        .into_iter()
        .filter(|l| l["type"] == "error")
        .collect()
}

/// The one error a store failure gives: kind `store`, naming the full disk, blaming nobody
/// else.
fn assert_disk_full(stdout: &str, stderr: &str) {
    let errors = errors(stdout);
    assert_eq!(errors.len(), 1, "one error: {stdout}\n{stderr}");
    assert_eq!(errors[0]["kind"], "store", "{stdout}");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(message.contains("is full"), "{message}");
    assert!(message.contains("free some space"), "{message}");
    // stderr holds the warning that `m` is not in the catalogue, naming the provider: only
    // its error lines must not blame anybody.
    let error_lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
    for blame in ["provider", "openai", "rejected", "reached"] {
        assert!(!message.contains(blame), "{message}");
        assert!(!error_lines.iter().any(|l| l.contains(blame)), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_first_run_on_a_full_disk_leaves_nothing_and_sends_nothing() {
    let (home, disk) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let Some(_mount) = small_tmpfs(&disk) else {
        return;
    };
    let filler = fill(disk.path());
    let server = MockServer::start(vec![answer("never sent")]).await;
    let data = disk.path().join("data");

    let (code, stdout, stderr) =
        tokio::task::block_in_place(|| task(home.path(), &data, &server, "hello"));

    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert_disk_full(&stdout, &stderr);
    assert_eq!(server.request_count(), 0);
    let left: Vec<_> = std::fs::read_dir(disk.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(left, vec![filler], "nothing but the filler is left");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_keeps_what_was_saved_and_is_the_stores_failure() {
    let (home, disk) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let Some(_mount) = small_tmpfs(&disk) else {
        return;
    };
    let data = disk.path().join("data");
    // 3 MiB of text cannot be saved on a 2 MiB disk.
    let long = "abcdefgh".repeat(3 * 1024 * 1024 / 8);
    let server = MockServer::start(vec![answer("Saved."), answer(&long)]).await;

    let (code, stdout, _) =
        tokio::task::block_in_place(|| task(home.path(), &data, &server, "first"));
    assert_eq!(code, Some(0), "{stdout}");
    let first = lines(&stdout)[0]["task_id"].as_str().unwrap().to_owned();

    // The disk fills up: the next task says so, and sends nothing (its first message cannot
    // be saved; the process that ended folded its WAL into the file, so none is left to
    // reuse).
    let filler = fill(disk.path());
    let (code, stdout, stderr) =
        tokio::task::block_in_place(|| task(home.path(), &data, &server, "second"));
    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert_disk_full(&stdout, &stderr);
    assert_eq!(server.request_count(), 1);

    // Room again, but not for the answer: it is shown, then the failure is the store's.
    std::fs::remove_file(filler).unwrap();
    let (code, stdout, stderr) =
        tokio::task::block_in_place(|| task(home.path(), &data, &server, "third"));
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert_disk_full(&stdout, &stderr);
    assert_eq!(server.request_count(), 2);

    // What was saved is kept, and shown.
    let (code, stdout, stderr) = run(home.path(), &data, &["export", &first]);
    assert_eq!(code, Some(0), "{stderr}");
    let exported: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(exported[1]["content"][0]["text"], "Saved.");
    let (code, stdout, stderr) = run(home.path(), &data, &["tasks"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains(&first[..8]), "{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_store_is_listed_exported_and_shown_by_limits() {
    let home = tempfile::tempdir().unwrap();
    let (data, view) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let server = MockServer::start(vec![answer("Kept."), answer("never sent")]).await;
    let (code, stdout, _) =
        tokio::task::block_in_place(|| task(home.path(), data.path(), &server, "hello"));
    assert_eq!(code, Some(0), "{stdout}");
    let id = lines(&stdout)[0]["task_id"].as_str().unwrap().to_owned();
    let db = data.path().join("switchyard.db");
    let before = std::fs::read(&db).unwrap();

    let Some(_bind) = mount(&["--bind", &data.path().display().to_string()], view.path()) else {
        return;
    };
    // The same mount made read-only: `_bind` unmounts it.
    let Some(ro) = mount(&["-o", "remount,ro,bind"], view.path()) else {
        return;
    };
    std::mem::forget(ro);
    assert!(
        std::fs::File::create(view.path().join("probe")).is_err(),
        "the view is read-only"
    );

    let (code, stdout, stderr) = run(home.path(), view.path(), &["tasks"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains(&id[..8]), "{stdout}");
    assert!(stdout.contains("hello"), "{stdout}");
    let (code, stdout, stderr) = run(home.path(), view.path(), &["export", &id]);
    assert_eq!(code, Some(0), "{stderr}");
    let exported: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(exported[1]["content"][0]["text"], "Kept.");
    let (code, _, stderr) = run(home.path(), view.path(), &["limits"]);
    assert_eq!(code, Some(0), "{stderr}");

    // A task needs to write: refused, naming the read-only store, nothing sent.
    let (code, stdout, stderr) =
        tokio::task::block_in_place(|| task(home.path(), view.path(), &server, "again"));
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(
        errors(&stdout)[0]["message"]
            .as_str()
            .unwrap()
            .contains("is read-only")
    );
    assert_eq!(server.request_count(), 1);

    let files: Vec<_> = std::fs::read_dir(data.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files, vec!["switchyard.db"], "no -wal or -shm was made");
    assert_eq!(std::fs::read(&db).unwrap(), before);
}
