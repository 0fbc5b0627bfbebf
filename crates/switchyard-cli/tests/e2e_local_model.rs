//! End-to-end: the built `switchyard` binary against real local model servers (llama.cpp's
//! OpenAI-compatible servers serving SmolLM2-135M, started by `scripts/local-model.sh`).
//!
//! Compiled only with `--features e2e`; `scripts/test.sh` starts the servers and passes their
//! base URLs in `SWITCHYARD_E2E_BASE_URLS` as comma-separated `NAME=URL` entries
//! (`python=…,native=…`). Without it this test fails: it never skips silently.
//!
//! llama.cpp's native server reports usage in the stream (`stream_options.include_usage`), so
//! for the entry named `native` the usage must be the server's, not an estimate;
//! llama-cpp-python's server reports none, so its usage is the labelled estimate.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use serde_json::Value;

/// `(name, base URL)` pairs.
fn base_urls() -> Vec<(String, String)> {
    let urls = std::env::var("SWITCHYARD_E2E_BASE_URLS").expect(
        "SWITCHYARD_E2E_BASE_URLS is not set: run scripts/test.sh, which starts the local model servers",
    );
    urls.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(|entry| match entry.split_once('=') {
            Some((name, url)) => (name.to_owned(), url.to_owned()),
            None => (entry.to_owned(), entry.to_owned()),
        })
        .collect()
}

fn switchyard(home: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("SWITCHYARD_HOME", home);
    cmd
}

#[test]
fn streams_a_real_answer_with_usage_from_every_local_server() {
    let urls = base_urls();
    assert!(!urls.is_empty());
    let home = std::env::temp_dir().join(format!("switchyard-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    for (name, url) in urls {
        let out = switchyard(&home)
            .args([
                "task",
                "--json",
                "--provider",
                "openai",
                "--model",
                "smollm2-135m-instruct",
            ])
            .args(["--base-url", &url, "Name three colors of the rainbow."])
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{url}: exit {:?}\n{stdout}\n{stderr}",
            out.status
        );
        let lines: Vec<Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
        assert_eq!(kinds.first(), Some(&"task_started"), "{url}: {kinds:?}");
        assert_eq!(kinds.last(), Some(&"task_finished"), "{url}: {kinds:?}");
        let text: String = lines
            .iter()
            .filter(|l| l["type"] == "text")
            .map(|l| l["text"].as_str().unwrap())
            .collect();
        assert!(!text.trim().is_empty(), "{url}: empty answer");
        let texts = kinds.iter().filter(|k| **k == "text").count();
        assert!(
            texts > 1,
            "{url}: the answer arrived in {texts} piece(s), not streamed"
        );
        let usage = lines
            .iter()
            .find(|l| l["type"] == "usage")
            .expect("a usage line");
        assert!(
            usage["input_tokens"].as_u64().unwrap() > 0,
            "{url}: {usage}"
        );
        assert!(
            usage["output_tokens"].as_u64().unwrap() > 0,
            "{url}: {usage}"
        );
        let finished = lines.last().unwrap();
        assert_eq!(finished["status"], "completed");
        let first_token_ms = finished["first_token_ms"].as_u64().expect("first_token_ms");
        eprintln!(
            "{name} {url}: {texts} text chunks, usage {} in / {} out (estimated: {}), first token {first_token_ms} ms, total {} ms",
            usage["input_tokens"],
            usage["output_tokens"],
            usage["estimated"],
            finished["duration_ms"]
        );

        // The same through the terminal renderer: text on stdout, the usage line last on stderr.
        let out = switchyard(&home)
            .args([
                "task",
                "--provider",
                "openai",
                "--model",
                "smollm2-135m-instruct",
            ])
            .args(["--base-url", &url, "Say hello."])
            .output()
            .unwrap();
        assert!(out.status.success(), "{url}: {:?}", out);
        assert!(!String::from_utf8_lossy(&out.stdout).trim().is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().last().unwrap_or_default();
        assert!(
            last.contains("out tokens") && last.contains("first token"),
            "{url}: {last}"
        );
    }
    let _ = std::fs::remove_dir_all(&home);
}
