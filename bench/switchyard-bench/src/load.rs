//! `switchyard-bench load`: the gateway benchmark's load generator (bench/gateway/, issue 25).
//!
//! A closed loop: `concurrency` workers, each on its own keep-alive HTTP/1.1 connection
//! (hyper's client connection, not the gateway's code), send `requests` requests in all, one
//! after another, to `url` in one dialect, streamed or not. Or, with a `rate`, an open loop
//! (`open_loop.rs`): request `i` is due at `i / rate` seconds and its times are counted from
//! then, so a gateway that queues cannot hide it behind a slower client. Every answer is
//! checked: status
//! 200, the whole text the paced upstream sends (`paced.rs`: `n` chunks of `size` bytes, chunk
//! `i` the letter `a + i % 26`, in order, whatever the gateway's own chunking), the dialect's
//! end (`[DONE]`, `message_stop`, `response.completed`) and its usage — so a gateway that
//! buffers, truncates or drops usage fails instead of scoring well. Prints one JSON line:
//! requests, errors (and the first one, and how many of each kind: what the client saw — a
//! status, an error event, a clean 200 without its end, a cut connection, a timeout), wall time,
//! requests per second, time to the first text and to the last byte (p50, p99, microseconds, of
//! the answers that passed).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::paced::Dialect;

/// What to send and what to expect.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Full URL to POST to.
    pub url: String,
    /// The client's dialect.
    pub dialect: Dialect,
    /// Streamed (`"stream": true`) or a whole answer.
    pub stream: bool,
    /// The `model` sent.
    pub model: String,
    /// Workers at once.
    pub concurrency: usize,
    /// Requests in all.
    pub requests: usize,
    /// Text chunks the upstream sends (`n`).
    pub chunks: usize,
    /// Bytes per chunk (`size`).
    pub size: usize,
    /// Extra request headers (`name: value`), e.g. an authorization a peer requires.
    pub headers: Vec<(String, String)>,
    /// Open loop: requests per second, each due at its own time (`concurrency` is ignored).
    pub rate: Option<f64>,
    /// The longest one answer may take, request to last byte.
    pub timeout: Duration,
}

/// One answer's timings, microseconds from its request (in an open loop, from when it was due).
pub(crate) struct Sample {
    first_text_us: u64,
    last_byte_us: u64,
}

/// Runs the plan and prints its JSON line.
pub fn run(plan: Plan) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    let plan = Arc::new(plan);
    let line = match plan.rate {
        Some(rate) => runtime.block_on(crate::open_loop::open_loop(plan, rate))?,
        None => runtime.block_on(closed_loop(plan))?,
    };
    println!("{line}");
    Ok(())
}

async fn closed_loop(plan: Arc<Plan>) -> Result<Value, String> {
    let uri: hyper::Uri = (plan.url.parse()).map_err(|e| format!("bad URL {}: {e}", plan.url))?;
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..plan.concurrency.max(1) {
        let (plan, uri, next) = (Arc::clone(&plan), uri.clone(), Arc::clone(&next));
        workers.push(tokio::spawn(
            async move { worker(&plan, &uri, &next).await },
        ));
    }
    let mut samples = Vec::new();
    let mut failed = Vec::new();
    for worker in workers {
        let (got, lost) = worker
            .await
            .map_err(|e| format!("a worker panicked: {e}"))?;
        samples.extend(got);
        failed.extend(lost);
    }
    Ok(summary(&plan, &samples, &failed, start.elapsed()))
}

/// The JSON line of a run: counts, the first error, errors by kind, rate and percentiles.
pub(crate) fn summary(plan: &Plan, samples: &[Sample], failed: &[String], wall: Duration) -> Value {
    let mut first: Vec<u64> = samples.iter().map(|s| s.first_text_us).collect();
    let mut last: Vec<u64> = samples.iter().map(|s| s.last_byte_us).collect();
    let mut kinds = serde_json::Map::new();
    for e in failed {
        let n = kinds.entry(error_kind(e)).or_insert(json!(0));
        *n = json!(n.as_u64().unwrap_or(0) + 1);
    }
    json!({
        "requests": plan.requests, "ok": samples.len(), "errors": failed.len(),
        "first_error": failed.first(), "error_kinds": kinds,
        "wall_ms": wall.as_secs_f64() * 1e3,
        "rps": samples.len() as f64 / wall.as_secs_f64(),
        "first_text_us": percentiles(&mut first), "last_byte_us": percentiles(&mut last),
    })
}

/// What the client saw, from a failure's sentence (the messages of [`one`] and its checks).
fn error_kind(e: &str) -> String {
    const KINDS: [(&str, &str); 10] = [
        ("status ", ""),
        ("body cut", "connection cut"),
        ("request:", "connection cut"),
        ("error event", "error event"),
        ("stream ended with", "error event"),
        ("no complete answer", "timeout"),
        ("the stream has no end event", "clean 200 without its end"),
        ("text of", "wrong or short text"),
        ("the answer has no usage", "no usage"),
        ("bad event", "malformed event passed on"),
    ];
    for (prefix, kind) in KINDS {
        if e.starts_with(prefix) {
            if kind.is_empty() {
                // `status 429: …` → `status 429`
                return e.split(':').next().unwrap_or(e).to_owned();
            }
            return kind.to_owned();
        }
    }
    "other".to_owned()
}

/// p50 and p99 (nearest rank) of `values`, or nulls when empty.
fn percentiles(values: &mut [u64]) -> Value {
    if values.is_empty() {
        return json!({"p50": null, "p99": null});
    }
    values.sort_unstable();
    let rank =
        |q: f64| values[((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
    json!({"p50": rank(0.50), "p99": rank(0.99)})
}

pub(crate) type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// One worker: takes request numbers until `plan.requests` are taken.
async fn worker(plan: &Plan, uri: &hyper::Uri, next: &AtomicUsize) -> (Vec<Sample>, Vec<String>) {
    let (mut samples, mut failed) = (Vec::new(), Vec::new());
    let mut sender: Option<Sender> = None;
    let body = Bytes::from(request_body(plan).to_string());
    while next.fetch_add(1, Ordering::Relaxed) < plan.requests {
        if sender.as_ref().is_none_or(|s| s.is_closed()) {
            match connect(uri).await {
                Ok(s) => sender = Some(s),
                Err(e) => {
                    failed.push(e);
                    continue;
                }
            }
        }
        let Some(s) = sender.as_mut() else { continue };
        let answer = one(plan, uri, s, body.clone(), Instant::now());
        match tokio::time::timeout(plan.timeout, answer).await {
            Ok(Ok(sample)) => samples.push(sample),
            Ok(Err(e)) => {
                sender = None;
                failed.push(e);
            }
            Err(_) => {
                sender = None;
                failed.push(timed_out(plan));
            }
        }
    }
    (samples, failed)
}

/// The failure of an answer that took longer than the plan's timeout.
pub(crate) fn timed_out(plan: &Plan) -> String {
    format!(
        "no complete answer within {:.0} s",
        plan.timeout.as_secs_f64()
    )
}

pub(crate) async fn connect(uri: &hyper::Uri) -> Result<Sender, String> {
    let host = uri.host().unwrap_or("127.0.0.1");
    let port = uri.port_u16().unwrap_or(80);
    let tcp = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// The dialect's request body.
pub(crate) fn request_body(plan: &Plan) -> Value {
    let user = json!([{"role": "user", "content": "Say something."}]);
    match plan.dialect {
        Dialect::Chat => json!({"model": plan.model, "messages": user, "stream": plan.stream,
            "stream_options": if plan.stream { json!({"include_usage": true}) } else { Value::Null },
            "max_tokens": 4096}),
        Dialect::Messages => json!({"model": plan.model, "messages": user,
            "stream": plan.stream, "max_tokens": 4096}),
        Dialect::Responses => json!({"model": plan.model, "input": "Say something.",
            "stream": plan.stream, "store": false, "max_output_tokens": 4096}),
    }
}

/// Sends one request and reads and checks its whole answer; times count from `from` (now in
/// a closed loop, when the request was due in an open one).
pub(crate) async fn one(
    plan: &Plan,
    uri: &hyper::Uri,
    sender: &mut Sender,
    body: Bytes,
    from: Instant,
) -> Result<Sample, String> {
    let mut request = hyper::Request::post(uri.path_and_query().map_or("/", |p| p.as_str()))
        .header("host", uri.authority().map_or("127.0.0.1", |a| a.as_str()))
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01");
    // A placeholder key in both places, unless the plan gives its own.
    let defaults = [
        ("x-api-key", "sk-bench-unused"),
        ("authorization", "Bearer sk-bench-unused"),
    ];
    for (name, value) in defaults {
        if !plan
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            request = request.header(name, value);
        }
    }
    for (name, value) in &plan.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = request.body(Full::new(body)).map_err(|e| e.to_string())?;
    let sent = from;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("request: {e}"))?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut check = Check::new(plan);
    let mut first_text_us = None;
    let mut raw = Vec::new();
    let mut bytes = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("body cut after {bytes} bytes: {e}"))?;
        let Some(data) = frame.data_ref() else {
            continue;
        };
        bytes += data.len();
        if status != 200 || !plan.stream {
            raw.extend_from_slice(data);
            if raw.len() > 64 << 20 {
                return Err("answer over 64 MiB".to_owned());
            }
            first_text_us.get_or_insert(sent.elapsed().as_micros() as u64);
            continue;
        }
        check.feed(data)?;
        if !check.text.is_empty() {
            first_text_us.get_or_insert(sent.elapsed().as_micros() as u64);
        }
    }
    let last_byte_us = sent.elapsed().as_micros() as u64;
    if status != 200 {
        let text = String::from_utf8_lossy(&raw);
        return Err(format!(
            "status {status}: {}",
            text.chars().take(300).collect::<String>()
        ));
    }
    if !plan.stream {
        check.whole(&raw)?;
    }
    check.finish()?;
    Ok(Sample {
        first_text_us: first_text_us.unwrap_or(last_byte_us),
        last_byte_us,
    })
}

/// Reads one answer's SSE (or whole JSON) and checks it is complete.
struct Check<'a> {
    plan: &'a Plan,
    pending: Vec<u8>,
    text: String,
    ended: bool,
    usage: bool,
}

impl<'a> Check<'a> {
    fn new(plan: &'a Plan) -> Self {
        Self {
            plan,
            pending: Vec::new(),
            text: String::new(),
            ended: false,
            usage: false,
        }
    }

    /// Feeds stream bytes, handling every complete event.
    fn feed(&mut self, data: &[u8]) -> Result<(), String> {
        self.pending.extend_from_slice(data);
        if self.pending.len() > 16 << 20 {
            return Err("an SSE event over 16 MiB".to_owned());
        }
        while let Some(end) = event_end(&self.pending) {
            let raw: Vec<u8> = self.pending.drain(..end.1).collect();
            let text = String::from_utf8_lossy(&raw[..end.0]).replace('\r', "");
            let data: Vec<&str> = (text.lines())
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                self.event(&data.join("\n"))?;
            }
        }
        Ok(())
    }

    fn event(&mut self, data: &str) -> Result<(), String> {
        if data == "[DONE]" {
            if self.plan.dialect == Dialect::Chat {
                self.ended = true;
            }
            return Ok(());
        }
        let v: Value =
            serde_json::from_str(data).map_err(|e| format!("bad event {data:.200}: {e}"))?;
        if v.get("error").is_some_and(|e| !e.is_null()) || v["type"] == "error" {
            return Err(format!("error event: {data:.300}"));
        }
        match self.plan.dialect {
            Dialect::Chat => {
                if let Some(t) = v["choices"][0]["delta"]["content"].as_str() {
                    self.text.push_str(t);
                }
                self.usage |= v["usage"]["completion_tokens"].is_u64();
            }
            Dialect::Messages => match v["type"].as_str() {
                Some("content_block_delta") => {
                    if let Some(t) = v["delta"]["text"].as_str() {
                        self.text.push_str(t);
                    }
                }
                Some("message_delta") => self.usage |= v["usage"]["output_tokens"].is_u64(),
                Some("message_stop") => self.ended = true,
                _ => {}
            },
            Dialect::Responses => match v["type"].as_str() {
                Some("response.output_text.delta") => {
                    if let Some(t) = v["delta"].as_str() {
                        self.text.push_str(t);
                    }
                }
                Some("response.completed") => {
                    self.ended = true;
                    self.usage |= v["response"]["usage"]["output_tokens"].is_u64();
                }
                Some("response.failed" | "response.incomplete") => {
                    return Err(format!("stream ended with {data:.300}"));
                }
                _ => {}
            },
        }
        Ok(())
    }

    /// Reads a whole (non-streamed) answer.
    fn whole(&mut self, raw: &[u8]) -> Result<(), String> {
        let v: Value = serde_json::from_slice(raw).map_err(|e| format!("bad JSON answer: {e}"))?;
        let (text, usage) = match self.plan.dialect {
            Dialect::Chat => (
                &v["choices"][0]["message"]["content"],
                &v["usage"]["completion_tokens"],
            ),
            Dialect::Messages => (&v["content"][0]["text"], &v["usage"]["output_tokens"]),
            Dialect::Responses => {
                let message = (v["output"].as_array().into_iter().flatten())
                    .find(|item| item["type"] == "message")
                    .unwrap_or(&Value::Null);
                (&message["content"][0]["text"], &v["usage"]["output_tokens"])
            }
        };
        self.text = text.as_str().unwrap_or("").to_owned();
        self.usage = usage.is_u64();
        self.ended = true;
        Ok(())
    }

    /// Checks the whole text, the end and the usage.
    fn finish(&self) -> Result<(), String> {
        let expected_len = self.plan.chunks * self.plan.size;
        let in_order = self.text.len() == expected_len
            && (self
                .text
                .as_bytes()
                .chunks(self.plan.size.max(1))
                .enumerate())
            .all(|(i, c)| c.iter().all(|&b| b == b'a' + (i % 26) as u8));
        if !in_order {
            return Err(format!(
                "text of {} bytes, not the {expected_len} sent (or out of order)",
                self.text.len()
            ));
        }
        if !self.ended {
            return Err("the stream has no end event".to_owned());
        }
        if !self.usage {
            return Err("the answer has no usage".to_owned());
        }
        Ok(())
    }
}

/// The end of the first complete SSE event in `buf`: (end of its text, end with the blank line).
fn event_end(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| (i, i + 2));
    let crlf = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, i + 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn plan(dialect: Dialect) -> Plan {
        Plan {
            url: String::new(),
            dialect,
            stream: true,
            model: "m".to_owned(),
            concurrency: 1,
            requests: 1,
            chunks: 2,
            size: 3,
            headers: Vec::new(),
            rate: None,
            timeout: Duration::from_secs(60),
        }
    }

    #[test]
    fn a_whole_chat_stream_passes_in_any_chunking_and_a_cut_one_fails() {
        let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"aaa\"}}]}\n\n\
                      data: {\"choices\":[{\"delta\":{\"content\":\"bbb\"}}]}\n\n\
                      data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n\
                      data: [DONE]\n\n";
        for split in [1, 7, stream.len()] {
            let p = plan(Dialect::Chat);
            let mut check = Check::new(&p);
            for piece in stream.as_bytes().chunks(split) {
                check.feed(piece).unwrap();
            }
            check.finish().unwrap();
        }
        let p = plan(Dialect::Chat);
        let mut check = Check::new(&p);
        check.feed(&stream.as_bytes()[..stream.len() - 16]).unwrap();
        assert!(check.finish().is_err(), "no [DONE]");
    }

    #[test]
    fn messages_need_their_stop_and_usage_and_the_text_in_order() {
        let p = plan(Dialect::Messages);
        let mut check = Check::new(&p);
        check
            .feed(b"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"bbbaaa\"}}\r\n\r\n")
            .unwrap();
        check
            .feed(b"data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":2}}\n\ndata: {\"type\":\"message_stop\"}\n\n")
            .unwrap();
        assert!(check.finish().unwrap_err().contains("out of order"));
    }

    #[test]
    fn failures_are_counted_by_what_the_client_saw() {
        let failed = [
            "status 429: {\"error\": 1}".to_owned(),
            "status 429: again".to_owned(),
            "the stream has no end event".to_owned(),
            "body cut after 10 bytes: x".to_owned(),
        ];
        let line = summary(&plan(Dialect::Chat), &[], &failed, Duration::from_secs(1));
        assert_eq!(line["error_kinds"]["status 429"], 2);
        assert_eq!(line["error_kinds"]["clean 200 without its end"], 1);
        assert_eq!(line["error_kinds"]["connection cut"], 1);
        assert_eq!(line["errors"], 4);
    }

    #[test]
    fn whole_responses_answers_are_read() {
        let p = Plan {
            stream: false,
            ..plan(Dialect::Responses)
        };
        let mut check = Check::new(&p);
        let body = json!({"output": [{"type": "reasoning"}, {"type": "message",
            "content": [{"text": "aaabbb"}]}], "usage": {"output_tokens": 2}});
        check.whole(body.to_string().as_bytes()).unwrap();
        check.finish().unwrap();
    }
}
