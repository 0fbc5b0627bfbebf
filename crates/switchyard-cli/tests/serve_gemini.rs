//! Google's Gemini API through `switchyard serve` as a user starts it (SPEC R14.12, R14.5,
//! R14.6): the real binary with a client key made by `switchyard keys create`, in front of the
//! testkit's scripted Anthropic and Gemini upstreams; a Gemini client's key from
//! `x-goog-api-key` and from the URL's `?key=`, its streams as server-sent events and as a JSON
//! array, `countTokens` and the model list; and the key, which rides in the URL, never in the
//! gateway's log at its most verbose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use switchyard_testkit::{HttpResponse, MockServer, Reply};

mod common;

const PROVIDER_KEY: &str = "sk-ant-serve-gemini-test-0123456789";

/// One HTTP/1.1 request with `headers` on a fresh connection: the status, head and body.
fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    stream
        .write_all(format!("{head}\r\n{body}").as_bytes())
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, head.to_owned(), body)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

#[tokio::test]
async fn serve_answers_a_gemini_client_keyed_in_its_header_or_url_and_never_logs_the_key() {
    let anthropic =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let gemini = MockServer::start(vec![Reply::new(HttpResponse::fixture("gemini_stream"))]).await;
    let home = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", home.path().join("store.db").display());
    let config = home.path().join("serve.toml");
    let text = format!(
        "[serve.routes.\"gemini-*\"]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{}\"\n\n[serve.routes.flash]\nprovider = \"gemini\"\nmodel = \"gemini-2.5-flash\"\nbase_url = \"{}\"\n",
        anthropic.url(),
        gemini.url()
    );
    std::fs::write(&config, text).unwrap();
    let cmd = common::switchyard_on(home.path(), &store, PROVIDER_KEY);
    let key = common::create_key(cmd, &["--name", "gemini-cli"])["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut cmd: Command = common::switchyard_on(home.path(), &store, PROVIDER_KEY);
    cmd.env("GEMINI_API_KEY", PROVIDER_KEY)
        .env("SWITCHYARD_LOG", "trace")
        .arg("--config")
        .arg(&config)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let k = key.clone();
    let (answers, log) = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let (addr, first) = common::serve::announced_address(&mut stderr);
        let log = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
            first + &rest
        });
        let body = r#"{"contents": [{"role": "user", "parts": [{"text": "Capital of France?"}]}]}"#;
        let google = [("x-goog-api-key", k.as_str())];
        let answers = vec![
            request(
                &addr,
                "POST",
                "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
                &google,
                body,
            ),
            request(
                &addr,
                "POST",
                &format!("/v1beta/models/gemini-2.5-pro:generateContent?key={k}"),
                &[],
                body,
            ),
            request(
                &addr,
                "POST",
                "/v1beta/models/flash:streamGenerateContent",
                &google,
                body,
            ),
            request(
                &addr,
                "POST",
                "/v1beta/models/gemini-2.5-pro:countTokens",
                &google,
                body,
            ),
            request(&addr, "GET", "/v1beta/models", &google, ""),
            request(
                &addr,
                "POST",
                "/v1beta/models/gemini-2.5-pro:generateContent",
                &[],
                body,
            ),
        ];
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = common::wait_or_kill(&mut child, Duration::from_secs(20), &"serve");
        assert_eq!(status.code(), Some(0));
        (answers, log.join().unwrap())
    })
    .await
    .unwrap();
    let [sse, whole, array, count, models, keyless] = answers.try_into().unwrap();
    assert_eq!(sse.0, 200, "{}", sse.2);
    assert!(
        sse.1.contains("content-type: text/event-stream"),
        "{}",
        sse.1
    );
    let last: Value = serde_json::from_str(
        sse.2
            .lines()
            .rfind(|l| l.starts_with("data: "))
            .unwrap()
            .strip_prefix("data: ")
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP", "{}", sse.2);
    assert_eq!(whole.0, 200, "{}", whole.2);
    let whole: Value = serde_json::from_str(&whole.2).unwrap();
    assert!(
        whole["candidates"][0]["content"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("The capital of France is Paris")
    );
    assert_eq!(array.0, 200, "{}", array.2);
    let array: Vec<Value> = serde_json::from_str(&array.2).unwrap();
    assert_eq!(
        array.len(),
        3,
        "the Gemini upstream's three events, as the array's elements"
    );
    assert_eq!(count.0, 200, "{}", count.2);
    assert!(
        serde_json::from_str::<Value>(&count.2).unwrap()["totalTokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(models.0, 200, "{}", models.2);
    assert!(models.2.contains("\"models/flash\""), "{}", models.2);
    assert_eq!(keyless.0, 401, "{}", keyless.2);
    assert_eq!(
        serde_json::from_str::<Value>(&keyless.2).unwrap()["error"]["status"],
        "UNAUTHENTICATED"
    );
    assert!(!log.contains(&key), "the client key in the log:\n{log}");
    assert!(
        !log.contains(PROVIDER_KEY),
        "the provider key in the log:\n{log}"
    );
    assert!(log.lines().count() > 1, "a log at trace level: {log}");
}
