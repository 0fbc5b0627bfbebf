//! A cut answer through `switchyard serve` (SPEC R14.4, R9.3, R12.1), in each client dialect,
//! streamed and not: a cut after the first text is continued — on the same entry after R9.3's
//! wait (a paused clock), or on the next entry at once — and spliced in with no repeated text
//! and a clean end, the continuation request carrying the partial answer; a cut nothing can
//! continue (inside a tool call) ends in the dialect's in-band error; an answer the output
//! limit cut ends with the dialect's limit stop reason; usage no upstream reported is estimated.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_api::ApiConfiguration;
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{HttpResponse, MockServer, Reply};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-gateway-test-key-0123456789";
const DIALECTS: [&str; 3] = ["/v1/chat/completions", "/v1/messages", "/v1/responses"];
/// What the recorded Anthropic answer says before the cut (its first text delta).
const PARTIAL: &str = "The capital of France is";

/// A gateway on 127.0.0.1:0 over the configuration `text`, until dropped.
struct Running {
    base: String,
    shutdown: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn start(text: &str) -> Running {
    let config = ApiConfiguration::from_toml(text, "serve.toml", |_| Some(KEY.to_owned())).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let gateway = Arc::new(Gateway::new(config).unwrap());
    tokio::spawn(serve(
        listener,
        gateway,
        ServerLimits::default(),
        shutdown.clone(),
    ));
    Running { base, shutdown }
}

/// The route `sonnet` to Anthropic at `url`, with `fallback` (TOML lines) after it.
fn config(url: &str, fallback: &str) -> String {
    format!(
        "[serve.routes.sonnet]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{url}\"\n{fallback}"
    )
}

/// The recorded Anthropic answer, cut right after its first text delta.
fn cut_after_first_text() -> Reply {
    let fixture = HttpResponse::fixture("anthropic_text");
    let body = String::from_utf8_lossy(&fixture.body).into_owned();
    let at = body.find("text_delta").unwrap();
    let cut = at + body[at..].find("\n\n").unwrap() + 2;
    Reply::new(fixture).drop_at(cut)
}

/// An Anthropic stream saying `texts`, ending with `stop_reason`.
fn anthropic_answer(texts: &[&str], stop_reason: &str) -> Reply {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut body = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_2", "type": "message",
               "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
               "usage": {"input_tokens": 30, "output_tokens": 1}}}),
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
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
               "usage": {"input_tokens": 30, "output_tokens": 4}}),
    );
    body += &event("message_stop", json!({"type": "message_stop"}));
    Reply::new(HttpResponse::sse(&body))
}

/// A Chat Completions stream saying `text`, with no usage chunk.
fn chat_answer(text: &str) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1,
                       "model": "gpt-4o", "choices": [{"index": 0, "delta": delta,
                       "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let body = chunk(json!({"role": "assistant", "content": text}), Value::Null)
        + &chunk(json!({}), json!("stop"))
        + "data: [DONE]\n\n";
    Reply::new(HttpResponse::sse(&body))
}

/// POSTs the question to `path` (streamed or not): the status, the `x-switchyard-usage`
/// header and the body.
async fn ask(base: &str, path: &str, stream: bool) -> (u16, Option<String>, String) {
    let body = json!({"model": "sonnet", "stream": stream, "max_tokens": 256,
                      "stream_options": {"include_usage": true},
                      "messages": [{"role": "user", "content": "Capital of France?"}],
                      "input": "Capital of France?"});
    let mut body = body;
    if path != "/v1/chat/completions" {
        body.as_object_mut().unwrap().remove("stream_options");
    }
    if path == "/v1/responses" {
        body.as_object_mut().unwrap().remove("messages");
    }
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let usage =
        (response.headers().get("x-switchyard-usage")).map(|v| v.to_str().unwrap().to_owned());
    (status, usage, response.text().await.unwrap())
}

/// What the client got: the answer's text, how it ended (the dialect's stop reason; `error`
/// for an in-band error), and its (input, output) tokens.
struct Got {
    text: String,
    end: String,
    tokens: (u64, u64),
}

fn got(path: &str, stream: bool, body: &str) -> Got {
    if stream {
        let events: Vec<Value> = (body.lines())
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap_or_else(|_| json!(d)))
            .collect();
        streamed(path, &events)
    } else {
        whole(path, &serde_json::from_str(body).unwrap())
    }
}

fn tokens(usage: &Value, input: &str, output: &str) -> (u64, u64) {
    let n = |k: &str| usage[k].as_u64().unwrap_or(0);
    (n(input), n(output))
}

fn streamed(path: &str, events: &[Value]) -> Got {
    let last = events.last().unwrap();
    let texts =
        |f: &dyn Fn(&Value) -> Option<&str>| events.iter().filter_map(f).collect::<String>();
    match path {
        "/v1/chat/completions" => Got {
            text: texts(&|e| e["choices"][0]["delta"]["content"].as_str()),
            end: if last["error"].is_object() {
                "error".into()
            } else {
                assert_eq!(last, "[DONE]", "{events:?}");
                let mut finish = events
                    .iter()
                    .filter_map(|e| e["choices"][0]["finish_reason"].as_str());
                finish.next_back().unwrap().to_owned()
            },
            tokens: (events.iter().rev().find(|e| e["usage"].is_object())).map_or((0, 0), |e| {
                tokens(&e["usage"], "prompt_tokens", "completion_tokens")
            }),
        },
        "/v1/messages" => Got {
            text: texts(&|e| e["delta"]["text"].as_str()),
            end: if last["type"] == "error" {
                "error".into()
            } else {
                assert_eq!(last["type"], "message_stop", "{events:?}");
                let delta = events
                    .iter()
                    .find(|e| e["type"] == "message_delta")
                    .unwrap();
                delta["delta"]["stop_reason"].as_str().unwrap().to_owned()
            },
            tokens: (events.iter().find(|e| e["type"] == "message_delta")).map_or((0, 0), |e| {
                tokens(&e["usage"], "input_tokens", "output_tokens")
            }),
        },
        _ => Got {
            text: texts(&|e| {
                (e["type"] == "response.output_text.delta")
                    .then(|| e["delta"].as_str())
                    .flatten()
            }),
            end: responses_end(last, "response.failed"),
            tokens: tokens(&last["response"]["usage"], "input_tokens", "output_tokens"),
        },
    }
}

/// A Responses stream's or body's end: `completed`, `incomplete: REASON`, or `error`.
fn responses_end(v: &Value, failed: &str) -> String {
    let response = if v["response"].is_object() {
        &v["response"]
    } else {
        v
    };
    if v["type"] == failed
        || response["status"] == "failed"
        || v["error"].is_object() && !v["status"].is_string()
    {
        return "error".into();
    }
    match response["status"].as_str().unwrap() {
        "incomplete" => format!("incomplete: {}", response["incomplete_details"]["reason"]),
        status => status.to_owned(),
    }
}

fn whole(path: &str, v: &Value) -> Got {
    if v["error"].is_object() && !v["status"].is_string() || v["type"] == "error" {
        return Got {
            text: String::new(),
            end: "error".into(),
            tokens: (0, 0),
        };
    }
    match path {
        "/v1/chat/completions" => Got {
            text: v["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_owned(),
            end: v["choices"][0]["finish_reason"]
                .as_str()
                .unwrap()
                .to_owned(),
            tokens: tokens(&v["usage"], "prompt_tokens", "completion_tokens"),
        },
        "/v1/messages" => Got {
            text: v["content"][0]["text"].as_str().unwrap().to_owned(),
            end: v["stop_reason"].as_str().unwrap().to_owned(),
            tokens: tokens(&v["usage"], "input_tokens", "output_tokens"),
        },
        _ => {
            let output = v["output"].as_array().unwrap();
            let message = output.iter().find(|o| o["type"] == "message").unwrap();
            Got {
                text: message["content"][0]["text"].as_str().unwrap().to_owned(),
                end: responses_end(v, ""),
                tokens: tokens(&v["usage"], "input_tokens", "output_tokens"),
            }
        }
    }
}

/// The `messages` of a recorded Anthropic request body, or of a Chat one.
fn last_messages(body: &Value, n: usize) -> Vec<Value> {
    let messages = body["messages"].as_array().unwrap();
    messages[messages.len().saturating_sub(n)..].to_vec()
}

/// A message's text, whether its content is a string or blocks.
fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        other => panic!("{other}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_cut_after_the_first_text_is_continued_on_the_same_entry_with_no_repeated_text() {
    for path in DIALECTS {
        for stream in [true, false] {
            // The continuation repeats the tail (" France is"): it is left out.
            let continuation = anthropic_answer(&[" France is", " Paris."], "end_turn");
            let upstream = MockServer::start(vec![cut_after_first_text(), continuation]).await;
            let gateway = start(&config(&upstream.url(), "")).await;
            let (status, usage, body) = ask(&gateway.base, path, stream).await;
            assert_eq!(status, 200, "{path}: {body}");
            let got = got(path, stream, &body);
            assert_eq!(
                got.text, "The capital of France is Paris.",
                "{path} {stream}: {body}"
            );
            let clean = ["stop", "end_turn", "completed"];
            assert!(
                clean.contains(&got.end.as_str()),
                "{path} {stream}: {}",
                got.end
            );
            assert_eq!(upstream.request_count(), 2, "{path} {stream}");
            // The continuation carries the partial answer as the assistant's, to go on from
            // (an Anthropic prefill: the last message).
            let requests = upstream.requests();
            let sent = requests[1].json();
            let last = last_messages(&sent, 1);
            assert_eq!(last[0]["role"], "assistant", "{sent}");
            assert_eq!(text_of(&last[0]), PARTIAL, "{sent}");
            assert_eq!(
                requests[0].json()["messages"].as_array().unwrap().len() + 1,
                sent["messages"].as_array().unwrap().len()
            );
            // The cut attempt reported no usage: it is estimated, and added to the reported.
            let (input, output) = got.tokens;
            assert!(
                input > 30 && output > 4,
                "{path} {stream}: {:?}",
                got.tokens
            );
            assert_eq!(usage.is_some(), !stream, "{path} {stream}: {usage:?}");
        }
    }
}

// api7/aisix#794, router-for-me/CLIProxyAPI#3062 (usage no upstream reported recorded as
// zeros; "flag estimated vs upstream-reported usage"): neither upstream here reports usage
// for the answer; the client gets an estimate, flagged where a header can say so.
#[tokio::test]
async fn a_cut_is_continued_on_the_next_entry_at_once_asked_to_go_on() {
    for path in DIALECTS {
        for stream in [true, false] {
            let primary = MockServer::start(vec![cut_after_first_text()]).await;
            let backup = MockServer::start(vec![chat_answer("France is Paris.")]).await;
            let fallback = format!(
                "[[serve.routes.sonnet.fallbacks]]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\nbase_url = \"{}/v1\"\n",
                backup.url()
            );
            let gateway = start(&config(&primary.url(), &fallback)).await;
            let started = std::time::Instant::now();
            let (status, usage, body) = ask(&gateway.base, path, stream).await;
            assert_eq!(status, 200, "{path}: {body}");
            assert!(
                started.elapsed().as_secs() < 2,
                "no wait while another entry is there"
            );
            let got = got(path, stream, &body);
            assert_eq!(
                got.text, "The capital of France is Paris.",
                "{path} {stream}: {body}"
            );
            assert_eq!((primary.request_count(), backup.request_count()), (1, 1));
            // Chat has no prefill: the partial answer, then a user message asking to go on.
            let sent = backup.requests()[0].json();
            let last = last_messages(&sent, 2);
            assert_eq!(
                (last[0]["role"].as_str(), last[1]["role"].as_str()),
                (Some("assistant"), Some("user")),
                "{sent}"
            );
            assert_eq!(text_of(&last[0]), PARTIAL, "{sent}");
            assert!(text_of(&last[1]).contains("Continue"), "{sent}");
            // Neither upstream reported usage: the client gets an estimate, never zeros.
            assert!(
                got.tokens.0 > 0 && got.tokens.1 > 0,
                "{path} {stream}: {:?}",
                got.tokens
            );
            assert_eq!(usage.as_deref(), (!stream).then_some("estimated"), "{path}");
        }
    }
}

#[tokio::test]
async fn a_cut_inside_a_tool_call_cannot_be_continued_and_ends_in_the_in_band_error() {
    let fixture = HttpResponse::fixture("anthropic_tool_use");
    let body = String::from_utf8_lossy(&fixture.body).into_owned();
    let cut = body.find("ation\\\": \\\"San Fra").unwrap();
    for path in DIALECTS {
        for stream in [true, false] {
            let upstream = MockServer::start(vec![Reply::new(fixture.clone()).drop_at(cut)]).await;
            let gateway = start(&config(&upstream.url(), "")).await;
            let (status, _, body) = ask(&gateway.base, path, stream).await;
            let got = got(path, stream, &body);
            assert_eq!(got.end, "error", "{path} {stream}: {body}");
            assert_eq!(status == 200, stream, "{path} {stream}: {status}");
            assert_eq!(
                upstream.request_count(),
                1,
                "{path} {stream}: not continued"
            );
        }
    }
}

// Alishahryar1/free-claude-code#1180 (Anthropic `max_tokens` reached a Responses client as
// `response.completed`), MAXeaglet/commandcode-proxy#38 (every stop reason but tool calls
// reported as a normal end); envoyproxy/ai-gateway#2290 (the input tokens of an Anthropic
// `message_delta` dropped): the usage here comes on `message_delta` and is passed as is.
#[tokio::test]
async fn an_answer_the_output_limit_cut_ends_with_each_dialects_limit_stop_reason() {
    let want = |path: &str| match path {
        "/v1/chat/completions" => "length",
        "/v1/messages" => "max_tokens",
        _ => "incomplete: \"max_output_tokens\"",
    };
    for path in DIALECTS {
        for stream in [true, false] {
            let upstream =
                MockServer::start(vec![anthropic_answer(&["The capital"], "max_tokens")]).await;
            let gateway = start(&config(&upstream.url(), "")).await;
            let (status, _, body) = ask(&gateway.base, path, stream).await;
            assert_eq!(status, 200, "{path}: {body}");
            let got = got(path, stream, &body);
            assert_eq!(got.text, "The capital", "{path} {stream}");
            assert_eq!(got.end, want(path), "{path} {stream}: {body}");
            assert_eq!(
                got.tokens,
                (30, 4),
                "{path} {stream}: reported usage is passed as is"
            );
            assert_eq!(upstream.request_count(), 1);
        }
    }
}

/// A Chat Completions answer saying `text`, cut (no finish reason, no `[DONE]`) after it.
fn chat_cut(text: &str) -> Reply {
    let reply = chat_answer(text);
    let body = String::from_utf8_lossy(&reply.response.body).into_owned();
    let cut = body.find("\n\n").unwrap() + 2;
    reply.drop_at(cut)
}

// askalf/dario#1286 (review): a continuation that is itself cut must not be closed as a
// complete answer. Here every continuation is cut after its text: three of them (the next
// entry at once, then that entry again after 2 and 4 s: a paused clock), then the in-band
// error — and the text of each is still spliced in.
#[tokio::test(start_paused = true)]
async fn continuations_that_are_cut_too_end_in_the_in_band_error_after_three() {
    for path in DIALECTS {
        let primary = MockServer::start(vec![cut_after_first_text()]).await;
        let cuts = vec![chat_cut(" Paris"), chat_cut(", the"), chat_cut(" City")];
        let backup = MockServer::start(cuts).await;
        let fallback = format!(
            "[[serve.routes.sonnet.fallbacks]]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\nbase_url = \"{}/v1\"\n",
            backup.url()
        );
        let gateway = start(&config(&primary.url(), &fallback)).await;
        let (status, _, body) = ask(&gateway.base, path, true).await;
        assert_eq!(status, 200, "{path}: {body}");
        let got = got(path, true, &body);
        assert_eq!(got.end, "error", "{path}: {body}");
        assert_eq!(
            got.text, "The capital of France is Paris, the City",
            "{path}"
        );
        assert_eq!(
            (primary.request_count(), backup.request_count()),
            (1, 3),
            "{path}"
        );
        // Each continuation carries everything the client has so far.
        let requests = backup.requests();
        let partial = |i: usize| text_of(&last_messages(&requests[i].json(), 2)[0]);
        assert_eq!(partial(2), "The capital of France is Paris, the", "{path}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_cut_is_not_continued_once_the_request_deadline_passed() {
    for path in DIALECTS {
        let continuation = anthropic_answer(&[" Paris."], "end_turn");
        let upstream = MockServer::start(vec![cut_after_first_text(), continuation]).await;
        // The only entry would be asked again after 2 s; the deadline is 1 s.
        let text = format!(
            "[serve]\nrequest_deadline = 1\n{}",
            config(&upstream.url(), "")
        );
        let gateway = start(&text).await;
        let (status, _, body) = ask(&gateway.base, path, true).await;
        assert_eq!(status, 200, "{path}: {body}");
        let got = got(path, true, &body);
        assert_eq!(
            (got.text.as_str(), got.end.as_str()),
            (PARTIAL, "error"),
            "{path}: {body}"
        );
        assert_eq!(upstream.request_count(), 1, "{path}");
    }
}
