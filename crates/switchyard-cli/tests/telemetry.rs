//! OpenTelemetry export through the binary (SPEC R14.13; issue 45, item 1; cases O01–O06 in
//! tests/cases/CASES.md).
//!
//! `switchyard serve` with `[telemetry]` pointed at scripts/otlp-receiver.py, which decodes
//! each export with the official `opentelemetry-proto` package, over OTLP/HTTP protobuf (content
//! captured) and over OTLP/gRPC (content not captured). One streamed Messages request carrying
//! the client's `traceparent` fails over once (a 429 on the first entry), is cut mid-stream on
//! the second and continued on the third: the receiver gets the request span (SERVER, a child
//! of the client's span) and three attempt spans (CLIENT, children of it, in order, within it)
//! with the GenAI attributes; each upstream got the `traceparent` naming its own attempt span
//! and the client's `tracestate`; the provider key planted in the prompt is in no span. A
//! streamed Responses request has its usage on its spans; a stream whose client went away ends
//! its spans as cancelled. The metrics arrive too. Then the receiver is killed: requests are
//! still answered at once, and `/metrics` counts the dropped spans.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_testkit::{AfterBody, HttpResponse, MockServer, Reply, skip_or_fail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;

const KEY: &str = "sk-ant-telemetry-test-0123456789abcdef";
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const TRACESTATE: &str = "vendor=opaque-value";
const COLLECTOR_TOKEN: &str = "collector-token-5f2a9c71";
const SERVER: i64 = 2;
const CLIENT: i64 = 3;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The receiver's python, when scripts/otlp-receiver.sh installed it.
fn receiver_python() -> Option<PathBuf> {
    let out = Command::new(workspace().join("scripts/otlp-receiver.sh"))
        .arg("python")
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    path.exists().then_some(path)
}

struct Receiver {
    child: Child,
    out: PathBuf,
    http: u16,
    grpc: u16,
}

impl Receiver {
    fn start(python: &Path, dir: &Path) -> Self {
        use std::io::BufRead;
        let out = dir.join("otlp.jsonl");
        let mut child = Command::new(python)
            .arg(workspace().join("scripts/otlp-receiver.py"))
            .arg("--out")
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("cannot start the OTLP receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ports: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the receiver announced no ports ({e}): {line:?}"));
        let port = |k: &str| u16::try_from(ports[k].as_u64().unwrap()).unwrap();
        Self {
            http: port("http"),
            grpc: port("grpc"),
            child,
            out,
        }
    }

    fn lines(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn signal(&self, signal: &str) -> Vec<Value> {
        let lines = self.lines().into_iter();
        lines.filter(|l| l["signal"] == signal).collect()
    }

    /// Waits up to 20 s for `done` to hold of the lines received.
    async fn until(&self, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let lines = self.lines();
            if done(&lines) {
                return lines;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the receiver never got {what}: {lines:#?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `switchyard serve` on 127.0.0.1:0, its stderr drained in the background.
struct Serve {
    child: Child,
    addr: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Serve {
    async fn start(home: &Path, config: &Path) -> Self {
        let store = format!("sqlite:{}", home.join("store.db").display());
        let mut cmd = common::switchyard_on(home, &store, KEY);
        cmd.arg("--config")
            .arg(config)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (addr, text, stderr) = tokio::task::spawn_blocking(move || {
            use std::io::Read;
            let mut reader = BufReader::new(stderr);
            let (addr, line) = common::serve::announced_address(&mut reader);
            let text = std::sync::Arc::new(std::sync::Mutex::new(line));
            let sink = std::sync::Arc::clone(&text);
            let drain = std::thread::spawn(move || {
                let mut rest = String::new();
                let _ = reader.read_to_string(&mut rest);
                sink.lock().unwrap().push_str(&rest);
            });
            (addr, text, drain)
        })
        .await
        .unwrap();
        drop(stderr);
        Self {
            child,
            addr,
            stderr: text,
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request on a fresh connection: the status, the body as sent (a stream's
/// chunked framing left in) and how long the whole answer took.
async fn post(
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, Duration) {
    let start = Instant::now();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    (status, body.to_owned(), start.elapsed())
}

async fn get(addr: &str, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

/// The recorded Anthropic answer, cut right after its first text delta.
fn cut_after_first_text() -> Reply {
    let fixture = HttpResponse::fixture("anthropic_text");
    let body = String::from_utf8_lossy(&fixture.body).into_owned();
    let at = body.find("text_delta").unwrap();
    let cut = at + body[at..].find("\n\n").unwrap() + 2;
    Reply::new(fixture).drop_at(cut)
}

/// An Anthropic stream saying `texts`, with usage.
fn anthropic_answer(texts: &[&str]) -> Reply {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut body = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_2", "type": "message",
               "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
               "usage": {"input_tokens": 30, "output_tokens": 1,
                         "cache_read_input_tokens": 7, "cache_creation_input_tokens": 3}}}),
    );
    body += &event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for text in texts {
        body += &event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": text}}),
        );
    }
    body += &event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    body += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
               "usage": {"output_tokens": 4}}),
    );
    body += &event("message_stop", json!({"type": "message_stop"}));
    Reply::new(HttpResponse::sse(&body))
}

fn entry(url: &str, first: bool) -> String {
    let head = if first {
        "[serve.routes.sonnet]\n".to_owned()
    } else {
        "[[serve.routes.sonnet.fallbacks]]\n".to_owned()
    };
    format!("{head}provider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{url}\"\n")
}

/// What the test's upstreams are: three entries of one route, a plain route, and a route whose
/// upstream stops after its first text and holds the connection open.
struct Upstreams {
    limited: MockServer,
    cut: MockServer,
    rest: MockServer,
    plain: MockServer,
    slow: MockServer,
}

impl Upstreams {
    async fn start() -> Self {
        let limited = HttpResponse::fixture("anthropic_429");
        let plain = (0..8).map(|_| Reply::new(HttpResponse::fixture("anthropic_text")));
        let mut held = HttpResponse::fixture("anthropic_text");
        let body = String::from_utf8_lossy(&held.body).into_owned();
        let at = body.find("text_delta").unwrap();
        held.body
            .truncate(at + body[at..].find("\n\n").unwrap() + 2);
        let held = Reply::new(held).after_body(AfterBody::HoldOpen(Duration::from_secs(60)));
        Self {
            slow: MockServer::start(vec![held]).await,
            limited: MockServer::start(vec![Reply::new(limited)]).await,
            cut: MockServer::start(vec![cut_after_first_text()]).await,
            rest: MockServer::start(vec![anthropic_answer(&[
                "The capital of France is",
                " Paris.",
            ])])
            .await,
            plain: MockServer::start(plain.collect()).await,
        }
    }

    fn config(&self, telemetry: &str) -> String {
        let route = |name: &str, url: String| {
            format!(
                "[serve.routes.{name}]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{url}\"\n"
            )
        };
        format!(
            "{telemetry}\n{}{}{}{}{}",
            entry(&self.limited.url(), true),
            entry(&self.cut.url(), false),
            entry(&self.rest.url(), false),
            route("plain", self.plain.url()),
            route("slow", self.slow.url()),
        )
    }
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

fn nanos(span: &Value, key: &str) -> u64 {
    span[key].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_over_and_continued_request_is_traced_to_an_otlp_receiver_over_http_and_grpc() {
    let Some(python) = receiver_python() else {
        skip_or_fail("the OTLP receiver is not installed: run scripts/otlp-receiver.sh install");
        return;
    };
    for protocol in ["http/protobuf", "grpc"] {
        one_protocol(&python, protocol).await;
    }
}

async fn one_protocol(python: &Path, protocol: &str) {
    let home = tempfile::tempdir().unwrap();
    let mut receiver = Receiver::start(python, home.path());
    let upstreams = Upstreams::start().await;
    let port = if protocol == "grpc" {
        receiver.grpc
    } else {
        receiver.http
    };
    // Content is captured over HTTP only, so that each way of the rule is seen once.
    let capture = protocol != "grpc";
    let telemetry = format!(
        "[telemetry]\nendpoint = \"http://127.0.0.1:{port}\"\nprotocol = \"{protocol}\"\n\
         capture_content = {capture}\nmetrics_interval = 1\nservice_name = \"switchyard-test\"\n\
         headers = {{ \"x-collector-token\" = \"{COLLECTOR_TOKEN}\" }}\n"
    );
    let config = home.path().join("serve.toml");
    std::fs::write(&config, upstreams.config(&telemetry)).unwrap();
    let serve = Serve::start(home.path(), &config).await;
    failed_over_and_continued(&serve.addr, protocol).await;
    streamed_responses(&serve.addr).await;
    client_gone_mid_stream(&serve.addr).await;

    let lines = receiver
        .until("the three requests' spans", |l| {
            let spans = l.iter().filter(|x| x["signal"] == "span");
            let servers: Vec<&Value> = spans.filter(|x| x["kind"] == SERVER).collect();
            ["sonnet", "plain", "slow"]
                .iter()
                .all(|route| servers.iter().any(|x| attr(x, "switchyard.route") == route))
                && l.iter().filter(|x| x["kind"] == CLIENT).count() >= 5
        })
        .await;
    let spans: Vec<&Value> = lines.iter().filter(|l| l["signal"] == "span").collect();
    let transport = if protocol == "grpc" { "grpc" } else { "http" };
    assert!(
        spans.iter().all(|s| s["transport"] == transport),
        "{spans:#?}"
    );
    let request = check_request_span(&spans, protocol);
    let attempts = check_attempt_spans(&spans, request);
    check_upstream_traceparents(&upstreams, &attempts);
    check_content(&receiver, request, attempts[0], capture);
    check_responses_usage(&spans);
    check_cancelled(&spans);
    // The collector's own header reached it with each export.
    let exports = receiver.signal("export");
    assert!(
        exports
            .iter()
            .all(|e| e["headers"]["x-collector-token"] == COLLECTOR_TOKEN),
        "{exports:#?}"
    );
    check_metrics(&receiver).await;
    dead_collector(&mut receiver, &serve, protocol).await;
    let stderr = serve.stderr.lock().unwrap().clone();
    assert!(
        !stderr.contains(KEY) && !stderr.contains(COLLECTOR_TOKEN),
        "{stderr}"
    );
}

/// The streamed Messages request with the client's trace context that fails over once and is
/// continued after a cut, answered whole.
async fn failed_over_and_continued(addr: &str, protocol: &str) {
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let body = json!({"model": "sonnet", "max_tokens": 256, "stream": true,
                      "messages": [{"role": "user",
                                    "content": format!("Capital of France? My key is {KEY}.")}]});
    let headers = [
        ("traceparent", traceparent.as_str()),
        ("tracestate", TRACESTATE),
    ];
    let (status, answer, _) = post(addr, "/v1/messages", &headers, &body.to_string()).await;
    assert_eq!(status, 200, "{protocol}: {answer}");
    assert!(
        answer.contains("Paris") && answer.contains("message_stop"),
        "{answer}"
    );
}

/// A streamed Responses request, translated to the Anthropic upstream of route `plain`.
async fn streamed_responses(addr: &str) {
    let body = json!({"model": "plain", "stream": true, "input": "Capital of France?"});
    let (status, answer, _) = post(addr, "/v1/responses", &[], &body.to_string()).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("response.completed"), "{answer}");
}

/// A streamed request on route `slow` whose client goes away once the answer has started.
async fn client_gone_mid_stream(addr: &str) {
    let body = json!({"model": "slow", "max_tokens": 64, "stream": true,
                      "messages": [{"role": "user", "content": "Capital of France?"}]})
    .to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("content_block_start") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
            .await
            .expect("the held answer never started")
            .unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buffer[..n]);
    }
    drop(stream);
}

/// The request span: a SERVER child of the client's span, with the route's and the answer's
/// attributes.
fn check_request_span<'a>(spans: &[&'a Value], protocol: &str) -> &'a Value {
    let request = *spans
        .iter()
        .find(|s| s["kind"] == SERVER && attr(s, "switchyard.route") == "sonnet")
        .unwrap_or_else(|| panic!("{protocol}: no SERVER span for sonnet: {spans:#?}"));
    assert_eq!(request["name"], "chat sonnet", "{request:#}");
    assert_eq!(request["trace_id"], TRACE);
    assert_eq!(request["parent_span_id"], CLIENT_SPAN);
    assert_eq!(request["resource"]["service.name"], "switchyard-test");
    for (key, want) in [
        ("gen_ai.operation.name", json!("chat")),
        ("gen_ai.request.model", json!("sonnet")),
        ("gen_ai.provider.name", json!("anthropic")),
        ("gen_ai.response.model", json!("claude-sonnet-4-5")),
        ("gen_ai.response.finish_reasons", json!(["stop"])),
        ("switchyard.route", json!("sonnet")),
        ("switchyard.dialect", json!("messages")),
    ] {
        assert_eq!(attr(request, key), &want, "{key}: {request:#}");
    }
    assert!(
        attr(request, "gen_ai.usage.output_tokens")
            .as_i64()
            .unwrap()
            > 0,
        "{request:#}"
    );
    assert!(attr(request, "error.type").is_null(), "{request:#}");
    assert_eq!(request["status"]["code"], 0, "{request:#}");
    request
}

/// The three attempts: CLIENT children of the request span, one after the other within it.
fn check_attempt_spans<'a>(spans: &[&'a Value], request: &Value) -> Vec<&'a Value> {
    let mut attempts: Vec<&Value> = spans
        .iter()
        .copied()
        .filter(|s| s["kind"] == CLIENT && s["parent_span_id"] == request["span_id"])
        .collect();
    attempts.sort_by_key(|s| nanos(s, "start_ns"));
    let why: Vec<&str> = attempts
        .iter()
        .map(|s| attr(s, "switchyard.attempt").as_str().unwrap())
        .collect();
    assert_eq!(why, ["first", "failover", "continuation"], "{attempts:#?}");
    for a in &attempts {
        assert_eq!(a["trace_id"], TRACE);
        assert_eq!(a["parent_span_id"], request["span_id"], "{a:#}");
        assert_eq!(a["name"], "chat claude-sonnet-4-5");
        assert_eq!(attr(a, "gen_ai.provider.name"), "anthropic");
        assert_eq!(attr(a, "server.address"), "127.0.0.1");
        assert!(attr(a, "server.port").as_i64().unwrap() > 0);
        assert!(
            nanos(a, "start_ns") >= nanos(request, "start_ns"),
            "{a:#} {request:#}"
        );
        assert!(
            nanos(a, "end_ns") <= nanos(request, "end_ns"),
            "{a:#} {request:#}"
        );
    }
    for pair in attempts.windows(2) {
        assert!(
            nanos(pair[0], "end_ns") <= nanos(pair[1], "start_ns"),
            "{pair:#?}"
        );
    }
    let [limited, cut, rest] = attempts[..] else {
        unreachable!()
    };
    assert_eq!(attr(limited, "error.type"), "rate_limited", "{limited:#}");
    assert_eq!(limited["status"]["code"], 2);
    assert!(attr(cut, "error.type").is_string(), "{cut:#}");
    // A Messages client on an Anthropic route is forwarded; a continuation never is.
    assert_eq!(attr(cut, "switchyard.forwarded"), true, "{cut:#}");
    assert_eq!(attr(rest, "switchyard.forwarded"), false, "{rest:#}");
    assert!(attr(rest, "error.type").is_null(), "{rest:#}");
    assert_eq!(
        attr(rest, "gen_ai.response.finish_reasons"),
        &json!(["stop"])
    );
    assert_eq!(attr(rest, "gen_ai.usage.input_tokens"), 40, "{rest:#}");
    assert_eq!(attr(rest, "gen_ai.usage.cache_read.input_tokens"), 7);
    assert_eq!(attr(rest, "gen_ai.usage.cache_creation.input_tokens"), 3);
    assert_eq!(attr(rest, "gen_ai.usage.output_tokens"), 4);
    assert!(
        attr(rest, "switchyard.cost_usd").as_f64().unwrap() > 0.0,
        "{rest:#}"
    );
    attempts
}

/// Each upstream got the `traceparent` of its own attempt span, and the client's `tracestate`.
fn check_upstream_traceparents(upstreams: &Upstreams, attempts: &[&Value]) {
    for (server, span) in [&upstreams.limited, &upstreams.cut, &upstreams.rest]
        .into_iter()
        .zip(attempts)
    {
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let want = format!("00-{TRACE}-{}-01", span["span_id"].as_str().unwrap());
        assert_eq!(requests[0].header("traceparent"), Some(want.as_str()));
        assert_eq!(requests[0].header("tracestate"), Some(TRACESTATE));
    }
}

/// No provider key in any span, nor the attribute the conventions renamed; the prompt, the
/// answer and the upstream's error message only when content is captured.
fn check_content(receiver: &Receiver, request: &Value, limited: &Value, capture: bool) {
    let text = std::fs::read_to_string(&receiver.out).unwrap();
    assert!(!text.contains(KEY), "a span holds the provider key");
    // spring-projects/spring-ai#6668: `gen_ai.system` was renamed `gen_ai.provider.name`.
    assert!(
        !text.contains("\"gen_ai.system\""),
        "a span uses gen_ai.system"
    );
    let input = attr(request, "gen_ai.input.messages");
    let output = attr(request, "gen_ai.output.messages");
    let status = limited["status"]["message"].as_str().unwrap();
    if capture {
        let input = input.as_str().unwrap();
        assert!(
            input.contains("[redacted]") && input.contains("Capital of France"),
            "{input}"
        );
        assert!(output.as_str().unwrap().contains("Paris"), "{output}");
        assert!(status.contains("rate limit"), "{limited:#}");
    } else {
        assert!(input.is_null() && output.is_null(), "{request:#}");
        // envoyproxy/ai-gateway#2721: an upstream's error body can quote the prompt back.
        assert_eq!(status, "rate_limited", "{limited:#}");
        assert!(
            !text.contains("Capital of France"),
            "the prompt is in a span"
        );
        assert!(
            !text.contains("your organization"),
            "an error body is in a span"
        );
    }
}

/// agentgateway/agentgateway#1686: a streamed Responses request has its usage on its span.
fn check_responses_usage(spans: &[&Value]) {
    let request = *spans
        .iter()
        .find(|s| s["kind"] == SERVER && attr(s, "switchyard.route") == "plain")
        .unwrap();
    assert_eq!(
        attr(request, "switchyard.dialect"),
        "responses",
        "{request:#}"
    );
    let attempt = *spans
        .iter()
        .find(|s| s["parent_span_id"] == request["span_id"])
        .unwrap_or_else(|| panic!("no attempt under {request:#}"));
    for span in [request, attempt] {
        for (key, want) in [
            ("gen_ai.usage.input_tokens", json!(21 + 2048 + 248)),
            ("gen_ai.usage.output_tokens", json!(27)),
            ("gen_ai.usage.cache_read.input_tokens", json!(2048)),
            ("gen_ai.usage.cache_creation.input_tokens", json!(248)),
            ("gen_ai.response.finish_reasons", json!(["stop"])),
        ] {
            assert_eq!(attr(span, key), &want, "{key}: {span:#}");
        }
    }
}

/// openlit/openlit#1454, Arize-ai/openinference#3790: a stream its client left ends its spans,
/// as cancelled, instead of leaving them open and never exported.
fn check_cancelled(spans: &[&Value]) {
    let request = *spans
        .iter()
        .find(|s| s["kind"] == SERVER && attr(s, "switchyard.route") == "slow")
        .unwrap();
    let attempt = *spans
        .iter()
        .find(|s| s["parent_span_id"] == request["span_id"])
        .unwrap_or_else(|| panic!("no attempt under {request:#}"));
    for span in [request, attempt] {
        assert_eq!(attr(span, "error.type"), "cancelled", "{span:#}");
        assert_eq!(span["status"]["code"], 2, "{span:#}");
        assert!(nanos(span, "end_ns") > nanos(span, "start_ns"), "{span:#}");
    }
}

/// The metrics of `/metrics` reach the receiver under their OpenTelemetry names.
async fn check_metrics(receiver: &Receiver) {
    let lines = receiver
        .until("the request counted in the metrics", |lines| {
            lines.iter().any(|l| {
                l["name"] == "switchyard.gateway.requests" && l["attributes"]["outcome"] == "ok"
            }) && lines.iter().any(is_sonnet_duration)
        })
        .await;
    let duration = lines.iter().find(|l| is_sonnet_duration(l)).unwrap();
    assert_eq!(duration["kind"], "histogram");
    assert_eq!(duration["unit"], "s");
    assert_eq!(
        duration["attributes"]["gen_ai.response.model"], "claude-sonnet-4-5",
        "{duration:#}"
    );
    assert!(duration["count"].as_u64().unwrap() >= 1);
    assert_eq!(duration["bounds"][0], 0.01);
    let tokens = (lines.iter())
        .find(|l| l["name"] == "gen_ai.client.token.usage")
        .unwrap();
    assert_eq!(tokens["unit"], "{token}");
    // The streamed Responses request read 2,048 cached tokens and wrote 248: both reach the
    // receiver as token types of their own, as on `/metrics`.
    let lines = receiver
        .until("the cache token types in the metrics", |lines| {
            ["cache_read", "cache_creation"]
                .iter()
                .all(|kind| cache_sum(lines, kind) > 0.0)
        })
        .await;
    assert!(cache_sum(&lines, "cache_read") >= 2048.0);
    assert!(cache_sum(&lines, "cache_creation") >= 248.0);
}

/// The largest sum exported for token type `kind`: exports are cumulative.
fn cache_sum(lines: &[Value], kind: &str) -> f64 {
    (lines.iter())
        .filter(|l| {
            l["name"] == "gen_ai.client.token.usage" && l["attributes"]["gen_ai.token.type"] == kind
        })
        .filter_map(|l| l["sum"].as_f64())
        .fold(0.0, f64::max)
}

fn is_sonnet_duration(line: &Value) -> bool {
    line["name"] == "gen_ai.server.request.duration"
        && line["attributes"]["gen_ai.request.model"] == "sonnet"
}

/// The receiver killed: requests are answered as before and the spans are dropped, counted.
async fn dead_collector(receiver: &mut Receiver, serve: &Serve, protocol: &str) {
    receiver.kill();
    let body = json!({"model": "plain", "max_tokens": 64,
                      "messages": [{"role": "user", "content": "Capital of France?"}]});
    for _ in 0..5 {
        let (status, answer, took) =
            post(&serve.addr, "/v1/messages", &[], &body.to_string()).await;
        assert_eq!(status, 200, "{protocol}: {answer}");
        assert!(
            took < Duration::from_secs(2),
            "{protocol}: a request took {took:?}"
        );
    }
    let start = Instant::now();
    loop {
        let metrics = get(&serve.addr, "/metrics").await;
        let dropped = (metrics.lines())
            .find_map(|l| l.strip_prefix("switchyard_telemetry_dropped_total "))
            .map(|n| n.trim().parse::<u64>().unwrap());
        if dropped.is_some_and(|n| n >= 5) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{protocol}: the dropped spans were never counted: {dropped:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `switchyard task` with `[telemetry]` exports its request's span and its attempt's, before
/// it exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_run_exports_its_request_and_attempt_spans() {
    let Some(python) = receiver_python() else {
        skip_or_fail("the OTLP receiver is not installed: run scripts/otlp-receiver.sh install");
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(&python, home.path());
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let config = format!(
        "[act]\nprovider = \"anthropic\"\n[providers.anthropic]\nbase_url = \"{}\"\n\
         [telemetry]\nendpoint = \"http://127.0.0.1:{}\"\nmetrics = false\n",
        upstream.url(),
        receiver.http
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let store = format!("sqlite:{}", home.path().join("store.db").display());
    let mut cmd = common::switchyard_on(home.path(), &store, KEY);
    cmd.args(["task", "capital of France?"]);
    let run = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(!stderr.contains(KEY), "{stderr}");
    // The spans went out before the process ended: nothing is waited for here.
    let spans = receiver.signal("span");
    let request = (spans.iter())
        .find(|s| s["parent_span_id"] == "")
        .unwrap_or_else(|| panic!("no request span: {spans:#?}"));
    let attempt = (spans.iter())
        .find(|s| s["parent_span_id"] == request["span_id"])
        .unwrap_or_else(|| panic!("no attempt span: {spans:#?}"));
    assert_eq!(attempt["kind"], CLIENT, "{attempt:#}");
    assert!(
        attr(request, "switchyard.task_id").is_string(),
        "{request:#}"
    );
    for span in [request, attempt] {
        assert_eq!(attr(span, "gen_ai.operation.name"), "chat", "{span:#}");
        assert_eq!(
            attr(span, "gen_ai.response.model"),
            attr(attempt, "gen_ai.request.model")
        );
        assert_eq!(attr(span, "gen_ai.usage.output_tokens"), 27, "{span:#}");
        assert_eq!(attr(span, "gen_ai.usage.cache_read.input_tokens"), 2048);
    }
    assert_eq!(attr(attempt, "gen_ai.provider.name"), "anthropic");
    let text = std::fs::read_to_string(&receiver.out).unwrap();
    assert!(!text.contains(KEY), "a task span holds the provider key");
}
