//! `switchyard serve` end to end on 127.0.0.1 (SPEC R14.1–R14.5, R14.9, R14.10): the gateway
//! started in-process on port 0 in front of the testkit's scripted upstreams replaying the
//! recorded fixtures, each client dialect on an upstream of another dialect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_api::ApiConfiguration;
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{AfterBody, HttpResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-gateway-test-key-0123456789";

/// A gateway serving on 127.0.0.1:0 until dropped.
struct Running {
    base: String,
    shutdown: CancellationToken,
    served: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn start_with(text: &str, body_limit: usize) -> Running {
    start_limited(text, body_limit, ServerLimits::default()).await
}

async fn start_limited(text: &str, body_limit: usize, limits: ServerLimits) -> Running {
    let config = ApiConfiguration::from_toml(text, "serve.toml", |_| Some(KEY.to_owned())).unwrap();
    let gateway = Gateway::new(config).unwrap().with_body_limit(body_limit);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(serve(listener, Arc::new(gateway), limits, shutdown.clone()));
    Running {
        base,
        shutdown,
        served,
    }
}

async fn start(text: &str) -> Running {
    start_with(text, switchyard_gateway::DEFAULT_BODY_LIMIT).await
}

/// A route `name` to `provider`'s `model` at `base_url`.
fn route(name: &str, provider: &str, model: &str, base_url: &str) -> String {
    format!(
        "[serve.routes.\"{name}\"]\nprovider = \"{provider}\"\nmodel = \"{model}\"\nbase_url = \"{base_url}\"\n"
    )
}

/// A Chat Completions upstream replaying `fixture` (its base URL ends in `/v1`).
async fn chat_upstream(fixture: &str) -> (MockServer, String) {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(fixture))]).await;
    let url = format!("{}/v1", server.url());
    (server, url)
}

/// An Anthropic Messages upstream replaying `replies`.
async fn anthropic_upstream(replies: Vec<Reply>) -> (MockServer, String) {
    let server = MockServer::start(replies).await;
    let url = server.url();
    (server, url)
}

/// POSTs `body` to `path`, checks the `x-request-id`, gives the status, headers and body.
async fn post(base: &str, path: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, String) {
    let client = reqwest::Client::new();
    let response = client
        .post(format!("{base}{path}"))
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    assert!(
        headers["x-request-id"]
            .to_str()
            .unwrap()
            .starts_with("req_"),
        "{headers:?}"
    );
    (status, headers, response.text().await.unwrap())
}

/// Starts a streamed request for `model` at `path` and reads until the body so far contains
/// `until`: the response (the rest unread) and what was read.
async fn stream_until(base: &str, path: &str, until: &str) -> (reqwest::Response, String) {
    let client = reqwest::Client::new();
    let request = client
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(user("sonnet", true).to_string());
    let mut response = request.send().await.unwrap();
    let mut seen = String::new();
    while !seen.contains(until) {
        let chunk = response.chunk().await.unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    (response, seen)
}

/// The `data:` payloads of an SSE body as JSON, `[DONE]` as the string "[DONE]".
fn sse_data(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap_or_else(|_| json!(data)))
        .collect()
}

/// The events of `events` whose `type` is `t`.
fn of_type<'a>(events: &'a [Value], t: &'a str) -> impl Iterator<Item = &'a Value> {
    events.iter().filter(move |e| e["type"] == t)
}

fn user(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "max_tokens": 256,
           "messages": [{"role": "user", "content": "What is the weather?"}]})
}

#[tokio::test]
async fn an_anthropic_client_on_a_chat_upstream_gets_both_tool_calls_and_the_usage() {
    for stream in [true, false] {
        let (upstream, url) = chat_upstream("openai_chat_tool_calls").await;
        let gateway = start(&route("claude-*", "openai", "gpt-4o", &url)).await;
        let body = user("claude-sonnet-4-5-20250929", stream);
        let (status, _, text) = post(&gateway.base, "/v1/messages?beta=true", &body).await;
        assert_eq!(status, 200, "{text}");
        assert_eq!(upstream.request_count(), 1);
        let (names, arguments, usage) = if stream {
            let events = sse_data(&text);
            let of = |t: &'static str| of_type(&events, t);
            let names: Vec<Value> = of("content_block_start")
                .map(|e| e["content_block"]["name"].clone())
                .collect();
            let arguments: String = of("content_block_delta")
                .filter_map(|e| e["delta"]["partial_json"].as_str())
                .collect();
            let usage = of("message_delta").last().unwrap()["usage"].clone();
            assert_eq!(
                of("message_delta").last().unwrap()["delta"]["stop_reason"],
                "tool_use"
            );
            assert_eq!(events.last().unwrap()["type"], "message_stop");
            // A Chat upstream reports usage only at its end: `message_start` cannot carry it,
            // so the final `message_delta` does (the cumulative usage, as Anthropic's do).
            (names, arguments, usage)
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["stop_reason"], "tool_use", "{v}");
            let blocks = v["content"].as_array().unwrap();
            let names = blocks.iter().map(|b| b["name"].clone()).collect();
            let arguments = blocks.iter().map(|b| b["input"].to_string()).collect();
            (names, arguments, v["usage"].clone())
        };
        assert_eq!(
            names,
            [json!("GetWeatherArgs"), json!("get_stock_price")],
            "{text}"
        );
        assert!(
            arguments.contains("Edinburgh") && arguments.contains("AAPL"),
            "{arguments}"
        );
        assert_eq!(usage["output_tokens"], 60, "{usage}");
        assert_eq!(usage["input_tokens"], 149, "{usage}");
    }
}

#[tokio::test]
async fn a_chat_client_on_an_anthropic_upstream_gets_text_tool_call_and_usage() {
    for stream in [true, false] {
        let fixture = HttpResponse::fixture("anthropic_tool_use");
        let (upstream, url) = anthropic_upstream(vec![Reply::new(fixture)]).await;
        let gateway = start(&route("sonnet", "anthropic", "claude-sonnet-4-5", &url)).await;
        let mut body = user("sonnet", stream);
        body["stream_options"] = json!({"include_usage": true});
        body["logprobs"] = json!(true);
        let (status, headers, text) = post(&gateway.base, "/v1/chat/completions", &body).await;
        assert_eq!(status, 200, "{text}");
        assert_eq!(headers["x-switchyard-dropped"], "logprobs", "{headers:?}");
        assert_eq!(upstream.request_count(), 1);
        let (content, call, usage) = if stream {
            let events = sse_data(&text);
            assert_eq!(events.last().unwrap(), "[DONE]", "{text}");
            let deltas = || events.iter().filter_map(|e| e["choices"].get(0));
            let content: String = deltas()
                .filter_map(|c| c["delta"]["content"].as_str())
                .collect();
            let calls: Vec<&Value> = deltas()
                .filter_map(|c| c["delta"]["tool_calls"].get(0))
                .collect();
            let mut call = calls[0]["function"].clone();
            call["arguments"] = calls
                .iter()
                .filter_map(|c| c["function"]["arguments"].as_str())
                .collect::<String>()
                .into();
            let finish = deltas()
                .filter_map(|c| c["finish_reason"].as_str())
                .next_back();
            assert_eq!(finish, Some("tool_calls"), "{text}");
            let usage = events
                .iter()
                .rev()
                .find(|e| e["usage"].is_object())
                .unwrap();
            (content, call, usage["usage"].clone())
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            let message = &v["choices"][0]["message"];
            assert_eq!(v["choices"][0]["finish_reason"], "tool_calls", "{v}");
            let content = message["content"].as_str().unwrap().to_owned();
            (
                content,
                message["tool_calls"][0]["function"].clone(),
                v["usage"].clone(),
            )
        };
        assert_eq!(
            content,
            "Okay, let's check the weather for San Francisco, CA:"
        );
        assert_eq!(call["name"], "get_weather", "{call}");
        let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments["location"], "San Francisco, CA");
        assert_eq!(
            (
                usage["prompt_tokens"].clone(),
                usage["completion_tokens"].clone()
            ),
            (json!(472), json!(89)),
            "{usage}"
        );
    }
}

#[tokio::test]
async fn a_responses_client_on_a_chat_upstream_gets_the_text_and_cached_and_reasoning_tokens() {
    for stream in [true, false] {
        let (_upstream, url) = chat_upstream("openai_chat_text").await;
        let gateway = start(&route("mini", "openai", "o4-mini", &url)).await;
        let body = json!({"model": "mini", "stream": stream, "input": "Why is the sky blue?"});
        let (status, _, text) = post(&gateway.base, "/v1/responses", &body).await;
        assert_eq!(status, 200, "{text}");
        let (said, usage) = if stream {
            let events = sse_data(&text);
            let said: String = (events.iter())
                .filter(|e| e["type"] == "response.output_text.delta")
                .filter_map(|e| e["delta"].as_str())
                .collect();
            let done = events.last().unwrap();
            assert_eq!(done["type"], "response.completed", "{text}");
            (said, done["response"]["usage"].clone())
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            let said = (v["output"].as_array().unwrap().iter())
                .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
                .filter_map(|part| part["text"].as_str().map(str::to_owned))
                .collect();
            (said, v["usage"].clone())
        };
        assert_eq!(
            said,
            "The sky looks blue because air molecules scatter short (blue) wavelengths more — Rayleigh scattering."
        );
        assert_eq!(usage["output_tokens"], 214, "{usage}");
        assert_eq!(
            usage["input_tokens_details"]["cached_tokens"], 1024,
            "{usage}"
        );
        assert_eq!(
            usage["output_tokens_details"]["reasoning_tokens"], 192,
            "{usage}"
        );
        assert_eq!(usage["input_tokens"], 1187, "{usage}");
    }
}

#[tokio::test]
async fn an_unknown_model_is_a_404_in_the_clients_dialect_listing_the_routes() {
    let gateway = start(&route("fast", "openai", "gpt-4o", "http://127.0.0.1:9/v1")).await;
    let (status, _, text) = post(&gateway.base, "/v1/messages", &user("nope", false)).await;
    assert_eq!(status, 404, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["type"], "error", "{v}");
    assert_eq!(v["error"]["type"], "not_found_error", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    // The gateway's own refusal: no provider was asked, so none is blamed.
    assert!(
        message.contains("fast") && !message.contains("provider rejected"),
        "{v}"
    );
    let (status, _, text) = post(&gateway.base, "/v1/chat/completions", &user("x/y", false)).await;
    assert_eq!(status, 404, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["code"], "model_not_found", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("fast") && !message.contains("provider rejected"),
        "{v}"
    );
}

#[tokio::test]
async fn a_429_before_content_is_answered_by_the_fallback_with_one_request_to_each() {
    let (primary, primary_url) =
        anthropic_upstream(vec![Reply::new(HttpResponse::fixture("anthropic_429"))]).await;
    let (backup, backup_url) =
        anthropic_upstream(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let text = format!(
        "{}[[serve.routes.sonnet.fallbacks]]\nprovider = \"anthropic\"\nmodel = \"claude-haiku-4-5\"\nbase_url = \"{backup_url}\"\n",
        route("sonnet", "anthropic", "claude-sonnet-4-5", &primary_url)
    );
    let gateway = start(&text).await;
    for stream in [true, false] {
        let (status, _, text) = post(
            &gateway.base,
            "/v1/chat/completions",
            &user("sonnet", stream),
        )
        .await;
        assert_eq!(status, 200, "{text}");
        assert!(text.contains("content"), "{text}");
    }
    // The 429 cooled the primary down (SPEC R12.1): the second request went to the backup.
    assert_eq!((primary.request_count(), backup.request_count()), (1, 2));
}

/// The body offset just after the first `text_delta` event of an Anthropic fixture.
fn after_first_text(response: &HttpResponse) -> usize {
    let body = String::from_utf8_lossy(&response.body);
    let at = body.find("text_delta").unwrap();
    at + body[at..].find("\n\n").unwrap() + 2
}

/// A streamed request for `sonnet` at `path` through a gateway whose upstream (Anthropic)
/// is cut right after its first text: the events the client got.
async fn cut_after_first_text(path: &str) -> Vec<Value> {
    let fixture = HttpResponse::fixture("anthropic_text");
    let cut = after_first_text(&fixture);
    let (_upstream, url) = anthropic_upstream(vec![Reply::new(fixture).drop_at(cut)]).await;
    let gateway = start(&route("sonnet", "anthropic", "claude-sonnet-4-5", &url)).await;
    let mut body = user("sonnet", true);
    body["input"] = json!("Capital of France?");
    let (status, _, text) = post(&gateway.base, path, &body).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("The capital"), "{text}");
    sse_data(&text)
}

// Every continuation of the cut answer is cut the same way (the upstream repeats its last
// reply): after three, 2/4/8 s apart (a paused clock), the in-band error (tests/continue.rs).
#[tokio::test(start_paused = true)]
async fn a_cut_after_the_first_text_ends_with_the_in_band_error_and_no_clean_end() {
    let chat = cut_after_first_text("/v1/chat/completions").await;
    assert!(
        chat.last().unwrap()["error"]["message"].is_string(),
        "{chat:?}"
    );
    let ends = |e: &Value| e == "[DONE]" || e["choices"][0]["finish_reason"].is_string();
    assert!(!chat.iter().any(ends), "{chat:?}");
    let messages = cut_after_first_text("/v1/messages").await;
    assert_eq!(messages.last().unwrap()["type"], "error", "{messages:?}");
    assert!(
        !messages.iter().any(|e| e["type"] == "message_stop"),
        "{messages:?}"
    );
    let responses = cut_after_first_text("/v1/responses").await;
    assert_eq!(
        responses.last().unwrap()["type"],
        "response.failed",
        "{responses:?}"
    );
    assert!(
        !responses.iter().any(|e| e["type"] == "response.completed"),
        "{responses:?}"
    );
}

#[tokio::test]
async fn no_content_within_the_request_deadline_is_a_504_in_the_clients_dialect() {
    let reply = Reply::new(HttpResponse::fixture("anthropic_text"));
    let (_upstream, url) =
        anthropic_upstream(vec![reply.delay_before(Duration::from_secs(5))]).await;
    let text = format!(
        "[serve]\nrequest_deadline = 1\n{}",
        route("sonnet", "anthropic", "claude-sonnet-4-5", &url)
    );
    let gateway = start(&text).await;
    let (status, _, text) = post(&gateway.base, "/v1/messages", &user("sonnet", true)).await;
    assert_eq!(status, 504, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["type"], "error", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("1 s"),
        "{v}"
    );
}

#[tokio::test]
async fn a_body_over_the_cap_is_a_413_in_the_clients_dialect() {
    let gateway = start_with(
        &route("m", "openai", "gpt-4o", "http://127.0.0.1:9/v1"),
        1024,
    )
    .await;
    let mut body = user("m", false);
    body["messages"][0]["content"] = json!("x".repeat(2048));
    let (status, _, text) = post(&gateway.base, "/v1/messages", &body).await;
    assert_eq!(status, 413, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["type"], "error", "{v}");
    let (status, _, text) = post(&gateway.base, "/v1/responses", &body).await;
    assert_eq!(status, 413, "{text}");
    assert!(serde_json::from_str::<Value>(&text).unwrap()["error"]["message"].is_string());
}

#[tokio::test]
async fn a_client_that_goes_away_mid_stream_closes_the_upstream_connection() {
    let mut fixture = HttpResponse::fixture("anthropic_text");
    let cut = after_first_text(&fixture);
    fixture.body.truncate(cut);
    // The upstream sends its first text, then stays open and silent until its client goes.
    let reply = Reply::new(fixture).after_body(AfterBody::HoldOpen(Duration::from_secs(60)));
    let (upstream, url) = anthropic_upstream(vec![reply]).await;
    let gateway = start(&route("sonnet", "anthropic", "claude-sonnet-4-5", &url)).await;
    let sent = Instant::now();
    // The answer has started: its text delta itself may wait with the scrubber, whose held
    // "s" ("… is") could start the configured `sk-` key (SPEC R10.5).
    let (response, _) = stream_until(&gateway.base, "/v1/messages", "content_block_start").await;
    eprintln!(
        "the answer started through the gateway after {:?}",
        sent.elapsed()
    );
    drop(response);
    let gone = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), upstream.wait_for_closed(1))
        .await
        .expect("the upstream connection stays open after the client went away");
    eprintln!(
        "upstream connection closed {:?} after the client went",
        gone.elapsed()
    );
}

#[tokio::test]
async fn models_are_listed_in_openais_shape_or_anthropics() {
    let gateway = start(&format!(
        "{}{}",
        route("fast", "openai", "gpt-4o", "http://127.0.0.1:9/v1"),
        route("claude-*", "openai", "gpt-4o", "http://127.0.0.1:9/v1")
    ))
    .await;
    let client = reqwest::Client::new();
    let url = format!("{}/v1/models", gateway.base);
    let openai = client.get(&url).send().await.unwrap().text().await.unwrap();
    let openai: Value = serde_json::from_str(&openai).unwrap();
    assert_eq!(openai["object"], "list");
    let data = openai["data"].as_array().unwrap();
    assert_eq!(
        data[0],
        json!({"id": "fast", "object": "model", "owned_by": "switchyard"})
    );
    assert!(
        data.iter()
            .any(|m| m["id"] == "anthropic/claude-sonnet-4-5-20250929")
    );
    assert!(!data.iter().any(|m| m["id"] == "claude-*"));
    let request = client.get(&url).header("anthropic-version", "2023-06-01");
    let anthropic = request.send().await.unwrap().text().await.unwrap();
    let anthropic: Value = serde_json::from_str(&anthropic).unwrap();
    assert_eq!(
        anthropic["data"][0],
        json!({"type": "model", "id": "fast", "display_name": "fast"})
    );
    assert_eq!(anthropic["has_more"], false);
    let health = client
        .get(format!("{}/health", gateway.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert!(health.headers().contains_key("x-request-id"));
    // Case D08: Claude Code's probe of its base URL, without a key.
    let hello = client
        .head(format!("{}/api/hello", gateway.base))
        .send()
        .await
        .unwrap();
    assert_eq!(hello.status(), 200);
    assert!(hello.text().await.unwrap().is_empty());
}

#[tokio::test]
async fn on_shutdown_a_stream_in_flight_finishes_and_no_new_connection_is_served() {
    let fixture = HttpResponse::fixture("anthropic_text");
    let cut = after_first_text(&fixture);
    let gate = switchyard_testkit::Gate::new();
    let (_upstream, url) = anthropic_upstream(vec![Reply::new(fixture).gate_at(cut, &gate)]).await;
    let gateway = start(&route("sonnet", "anthropic", "claude-sonnet-4-5", &url)).await;
    let path = "/v1/chat/completions";
    let (mut response, mut seen) = stream_until(&gateway.base, path, "content").await;
    gateway.shutdown.cancel();
    // The listener is closed at once: a new client is refused.
    let addr = gateway.base.trim_start_matches("http://").to_owned();
    let mut refused = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(&addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        refused,
        "the gateway still accepts connections after shutdown"
    );
    gate.open();
    while let Some(chunk) = response.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.ends_with("data: [DONE]\n\n"), "{seen}");
    assert!(seen.contains("Want more facts?"), "{seen}");
    let mut gateway = gateway;
    let served = tokio::time::timeout(Duration::from_secs(10), &mut gateway.served).await;
    served.unwrap().unwrap();
}

#[tokio::test]
async fn a_client_that_never_finishes_its_head_is_disconnected_after_the_header_read_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let limits = ServerLimits {
        header_read_timeout: Duration::from_millis(200),
        ..ServerLimits::default()
    };
    let gateway = start_limited("", switchyard_gateway::DEFAULT_BODY_LIMIT, limits).await;
    let addr = gateway.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    // Whatever hyper writes before closing (a 408, or nothing; a reset counts too), the
    // connection ends: the default 30 s would outlast the 10 s allowed here.
    let ended = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest)).await;
    assert!(
        ended.is_ok(),
        "the connection is open long after the header read timeout"
    );
}

#[tokio::test]
async fn a_client_that_goes_away_before_any_content_closes_the_upstream_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // An upstream that reads the request and never answers; it reports its connection's end.
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", upstream.local_addr().unwrap());
    let (got_request, request_seen) = tokio::sync::oneshot::channel();
    let closed = tokio::spawn(async move {
        let (mut stream, _) = upstream.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let mut got_request = Some(got_request);
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if let Some(tx) = got_request.take() {
                        let _ = tx.send(());
                    }
                }
            }
        }
    });
    let gateway = start(&route("sonnet", "anthropic", "claude-sonnet-4-5", &url)).await;
    // A non-streamed request: nothing at all is sent to the client before the answer ends.
    let addr = gateway.base.trim_start_matches("http://");
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = user("sonnet", false).to_string();
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await.unwrap();
    client.write_all(body.as_bytes()).await.unwrap();
    request_seen.await.unwrap();
    drop(client);
    tokio::time::timeout(Duration::from_secs(10), closed)
        .await
        .expect("the upstream connection stays open after its client went away")
        .unwrap();
}

/// A client's output limit above what the model can write is fitted to the catalogue's (SPEC
/// R14.2): Claude Code asks for 32,000–64,000 tokens whatever the route's model, which a model
/// that writes less would answer with a 400; a thinking budget stays below the limit.
#[tokio::test]
async fn a_clients_output_limit_is_fitted_to_the_models_and_the_thinking_budget_below_it() {
    let (upstream, url) =
        anthropic_upstream(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    // claude-opus-4-1-20250805 writes at most 32,000 tokens (the catalogue's `max_tokens`).
    let gateway = start(&route(
        "claude-*",
        "anthropic",
        "claude-opus-4-1-20250805",
        &url,
    ))
    .await;
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 64000, "stream": false,
        "thinking": {"type": "enabled", "budget_tokens": 40000},
        "messages": [{"role": "user", "content": "hi"}]});
    let (status, _, text) = post(&gateway.base, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{text}");
    let sent = upstream.requests()[0].json();
    assert_eq!(sent["max_tokens"], 32000, "{sent}");
    assert_eq!(sent["thinking"]["budget_tokens"], 31999, "{sent}");
}

/// A route's default thinking budget applies when the client sets none, Anthropic's
/// `adaptive` included (SPEC R14.3); a client's own budget wins.
#[tokio::test]
async fn a_routes_default_thinking_applies_unless_the_client_sets_its_own() {
    let replies = (0..3)
        .map(|_| Reply::new(HttpResponse::fixture("anthropic_text")))
        .collect();
    let (upstream, url) = anthropic_upstream(replies).await;
    let config = route("claude-*", "anthropic", "claude-sonnet-4-5-20250929", &url)
        + "thinking_budget_tokens = 4096\n";
    let gateway = start(&config).await;
    let ask = |thinking: Value| {
        let mut body = json!({"model": "claude-x", "max_tokens": 8192, "stream": false,
            "messages": [{"role": "user", "content": "hi"}]});
        if !thinking.is_null() {
            body["thinking"] = thinking;
        }
        body
    };
    for thinking in [
        Value::Null,
        json!({"type": "adaptive"}),
        json!({"type": "enabled", "budget_tokens": 2048}),
    ] {
        let (status, _, text) = post(&gateway.base, "/v1/messages", &ask(thinking)).await;
        assert_eq!(status, 200, "{text}");
    }
    let budgets: Vec<Value> = (upstream.requests().iter())
        .map(|r| r.json()["thinking"]["budget_tokens"].clone())
        .collect();
    assert_eq!(budgets, [json!(4096), json!(4096), json!(2048)]);
}
