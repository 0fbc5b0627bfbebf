//! Every Anthropic, OpenAI Chat and Responses, OpenRouter, DeepSeek, Gemini, Ollama and Bedrock fixture of `tests/fixtures`,
//! replayed byte for byte by the testkit server in several splits, must yield the chunks of its
//! `.expected.json`, normalised as `tests/fixtures/README.md` says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use switchyard_api::providers::preset;
use switchyard_api::{
    ApiError, ApiStreamChunk, CancellationToken, ErrorKind, Message, RequestOptions, ToolSpec,
};
use switchyard_testkit::{AfterBody, HttpResponse, MockServer, Reply, Split, test_data_dir};

mod common;

use common::{KEY, handler};

/// The wire family of a fixture's provider, for its raw usage numbers.
fn provider_family(provider: &str) -> &str {
    match provider {
        "anthropic" | "bedrock" | "gemini" | "deepseek" => provider,
        _ => "openai_chat",
    }
}

/// Which provider replays a fixture, and how its usage maps back to the raw wire numbers.
fn provider_for(fixture: &str) -> (&'static str, &'static str, &'static str) {
    if fixture.starts_with("anthropic") {
        ("anthropic", "claude-sonnet-4-5-20250929", "")
    } else if fixture.starts_with("openrouter") {
        ("openrouter", "anthropic/claude-sonnet-4.5", "/api/v1")
    } else if fixture.starts_with("gemini") {
        ("gemini", "gemini-2.5-flash", "")
    } else if fixture == "openai_responses" {
        ("openai-native", "gpt-5.4", "/v1")
    } else if fixture.starts_with("ollama") {
        ("ollama", "qwen3:8b", "")
    } else if fixture.starts_with("bedrock") {
        ("bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", "")
    } else if fixture.starts_with("deepseek") {
        ("deepseek", "deepseek-reasoner", "/v1")
    } else {
        ("openai-native", "o4-mini", "/v1")
    }
}

fn class(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::RateLimited => "rate_limit",
        ErrorKind::Overloaded => "overloaded",
        ErrorKind::ContextWindowExceeded => "context_window",
        ErrorKind::Auth => "auth",
        ErrorKind::QuotaExceeded => "quota",
        ErrorKind::Server => "server",
        ErrorKind::InvalidRequest => "invalid_request",
        other => other.as_str(),
    }
}

/// Normalises our items into the fixtures' expected shape (`common::normalise`), an error as
/// its class and whole seconds of retry-after.
fn normalise(provider: &str, items: &[Result<ApiStreamChunk, ApiError>]) -> Vec<Value> {
    common::normalise(provider_family(provider), items, |e| {
        let mut v = json!({"type": "error", "class": class(e.kind)});
        if let Some(d) = e.retry_after {
            v["retry_after_s"] = json!(d.as_secs());
        }
        v
    })
}

async fn replay(
    fixture: &str,
    split: Split,
) -> (Vec<Result<ApiStreamChunk, ApiError>>, MockServer) {
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::fixture(fixture)).split(split),
    ])
    .await;
    let (provider, model, prefix) = provider_for(fixture);
    let h = handler(provider, model, &format!("{}{prefix}", server.url()), "");
    let items: Vec<_> = h
        .create_message(
            "You are terse.",
            &[Message::user_text("hi")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    (items, server)
}

fn fixtures() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(test_data_dir().join("fixtures"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".http").map(str::to_owned))
        .filter(|n| {
            n.starts_with("anthropic_")
                || n.starts_with("openai_chat_")
                || n == "openai_context_length"
                || n == "openai_insufficient_quota"
                || n.starts_with("openrouter_")
                || n == "deepseek_reasoner"
                || n.starts_with("ollama_")
                || n == "openai_responses"
                || n.starts_with("gemini_")
                || n.starts_with("bedrock_")
        })
        .collect();
    names.sort();
    names
}

#[tokio::test(start_paused = true)]
async fn every_fixture_matches_its_expected_chunks_in_every_split() {
    let names = fixtures();
    assert_eq!(names.len(), 23, "{names:?}");
    for name in &names {
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(
                test_data_dir().join(format!("fixtures/{name}.expected.json")),
            )
            .unwrap(),
        )
        .unwrap();
        for split in [
            Split::Whole,
            Split::Every(1),
            Split::Every(5),
            Split::Every(7),
            Split::Every(4096),
        ] {
            let label = format!("{name} {split:?}");
            let (items, server) = replay(name, split).await;
            // Runs of text (or reasoning) joined: the secret scrubber may hold a delta's tail
            // that could start a key until the next delta (SPEC R10.5).
            let got = common::merge_text_runs(&normalise(provider_for(name).0, &items));
            let want = common::merge_text_runs(expected.as_array().unwrap());
            assert_eq!(got, want, "{label}");
            // A rate limit before the stream is retried at the provider level (SPEC R5.1): the
            // same 429 is served to all 3 attempts. Everything else, and a throttling
            // exception after chunks arrived (R5.4), is sent once.
            let rate_limited =
                matches!(items.as_slice(), [Err(e)] if e.kind == ErrorKind::RateLimited);
            assert_eq!(
                server.request_count(),
                if rate_limited {
                    preset(provider_for(name).0).unwrap().retry.max_attempts as usize
                } else {
                    1
                },
                "{label}"
            );
            // An error is always the last item and carries the provider and model.
            if let Some(Err(e)) = items.last() {
                assert_eq!(
                    e.provider_id.as_deref(),
                    Some(provider_for(name).0),
                    "{label}"
                );
                assert!(!e.to_string().contains(KEY));
            }
        }
    }
}

#[tokio::test]
async fn anthropic_request_shape() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let h = handler(
        "anthropic",
        "claude-3-7-sonnet-20250219",
        &server.url(),
        "thinking_budget_tokens = 200000",
    );
    let tools = [ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let messages = [
        Message::user_text("one"),
        Message::assistant_text("two"),
        Message::user_text("three"),
        Message::assistant_text("four"),
        Message::user_text("five"),
    ];
    let _: Vec<_> = h
        .create_message("SYS", &messages, &tools, RequestOptions::default())
        .collect()
        .await;
    let req = &server.requests()[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    let body = req.json();
    assert_eq!(body["model"], "claude-3-7-sonnet-20250219");
    assert_eq!(body["stream"], true);
    // The reference's max output for the model: 128,000 tokens.
    assert_eq!(body["max_tokens"], 128_000);
    // 200000 > max_tokens: clipped to max_tokens − 1 (SPEC R3.3); thinking means no temperature.
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 127_999})
    );
    assert!(body.get("temperature").is_none());
    assert_eq!(
        body["system"][0],
        json!({"type": "text", "text": "SYS", "cache_control": {"type": "ephemeral"}})
    );
    // The last block of the last two user messages is marked; the first user message is not.
    let msgs = body["messages"].as_array().unwrap();
    assert!(msgs[0]["content"][0].get("cache_control").is_none());
    assert_eq!(
        msgs[2]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        msgs[4]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(msgs[3]["content"][0].get("cache_control").is_none());
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
}

#[tokio::test]
async fn anthropic_1m_model_sends_beta_header_and_plain_id() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let h = handler(
        "anthropic",
        "claude-sonnet-4-5-20250929:1m",
        &server.url(),
        "",
    );
    let _: Vec<_> = h
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    let req = &server.requests()[0];
    assert_eq!(req.header("anthropic-beta"), Some("context-1m-2025-08-07"));
    assert_eq!(req.json()["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(req.json()["temperature"], 0.0);
}

#[tokio::test]
async fn a_gemini_signature_on_a_tool_use_is_not_sent_to_anthropic() {
    // A conversation begun with Gemini 3 and continued with Claude: the call's thought
    // signature is Gemini's; Anthropic's tool_use has no such field and would reject it.
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let h = handler("anthropic", "claude-sonnet-4-5-20250929", &server.url(), "");
    let messages = [
        Message::user_text("read it"),
        Message {
            role: switchyard_api::Role::Assistant,
            content: vec![switchyard_api::ContentBlock::ToolUse {
                id: "call_g".into(),
                name: "read_file".into(),
                input: json!({"path": "a.md"}),
                signature: Some("GEMINI-SIG".into()),
            }],
        },
        Message {
            role: switchyard_api::Role::User,
            content: vec![switchyard_api::ContentBlock::ToolResult {
                tool_use_id: "call_g".into(),
                content: "text".into(),
                is_error: false,
            }],
        },
    ];
    let _: Vec<_> = h
        .create_message("SYS", &messages, &[], RequestOptions::default())
        .collect()
        .await;
    let body = server.requests()[0].json();
    assert_eq!(
        body["messages"][1]["content"][0],
        json!({"type": "tool_use", "id": "call_g", "name": "read_file", "input": {"path": "a.md"}})
    );
}

#[tokio::test]
async fn openai_reasoning_family_request_shape() {
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let h = handler(
        "openai-native",
        "o4-mini",
        &format!("{}/v1", server.url()),
        "reasoning_effort = \"high\"",
    );
    let _: Vec<_> = h
        .create_message(
            "SYS",
            &[Message::user_text("q")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = req.json();
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["messages"][0],
        json!({"role": "developer", "content": "SYS"})
    );
    assert_eq!(body["reasoning_effort"], "high");
    assert!(body.get("temperature").is_none());
    assert_eq!(body["max_completion_tokens"], 100000);
}

#[tokio::test]
async fn openai_compatible_request_shape_and_tools() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "openai_chat_tool_calls",
    ))])
    .await;
    let h = handler(
        "openai",
        "gpt-4o",
        &format!("{}/v1", server.url()),
        "reasoning_effort = \"bogus\"",
    );
    let tools = [ToolSpec {
        name: "t".into(),
        description: "d".into(),
        input_schema: json!({"type": "object"}),
    }];
    let _: Vec<_> = h
        .create_message(
            "SYS",
            &[Message::user_text("q")],
            &tools,
            RequestOptions::default(),
        )
        .collect()
        .await;
    let body = server.requests()[0].json();
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["temperature"], 0.0);
    assert!(body.get("reasoning_effort").is_none());
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {"name": "t", "description": "d", "parameters": {"type": "object"}}})
    );
}

#[tokio::test]
async fn html_and_wrong_content_type_are_clear_errors() {
    let page = "<!doctype html><html><body>Bad gateway — secret internals</body></html>";
    for (status, want) in [
        (502, ErrorKind::Server),
        (200, ErrorKind::Decode),
        (404, ErrorKind::InvalidRequest),
    ] {
        let resp = HttpResponse::new(
            status,
            &[("content-type", "text/html; charset=utf-8")],
            page,
        );
        let server = MockServer::start(vec![Reply::new(resp)]).await;
        let h = handler("openai", "m", &format!("{}/v1", server.url()), "");
        let items: Vec<_> = h
            .create_message(
                "s",
                &[Message::user_text("x")],
                &[],
                RequestOptions::default(),
            )
            .collect()
            .await;
        let [Err(e)] = items.as_slice() else {
            panic!("{items:?}")
        };
        assert_eq!(e.kind, want);
        let text = e.to_string();
        assert!(text.contains(&format!("HTTP {status}")), "{text}");
        assert!(text.contains("text/html"), "{text}");
        assert!(!text.contains("secret internals"), "{text}");
    }
}

#[tokio::test]
async fn unreachable_base_url_is_named() {
    // Bind then drop a listener so the port is closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let h = handler("openai", "m", &url, "");
    let items: Vec<_> = h
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    let [Err(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(e.kind, ErrorKind::Network);
    assert!(e.to_string().contains(&url), "{e}");
}

#[tokio::test]
async fn a_stream_cut_before_completion_is_an_error_not_a_success() {
    // The body stops after the second text delta: no message_stop.
    let fixture = HttpResponse::fixture("anthropic_text");
    let cut = fixture
        .body
        .windows(13)
        .position(|w| w == b"event: messag")
        .unwrap();
    let cut = fixture.body[cut + 1..]
        .windows(13)
        .position(|w| w == b"event: messag")
        .unwrap()
        + cut
        + 1;
    let server = MockServer::start(vec![Reply::new(fixture).drop_at(cut)]).await;
    let h = handler("anthropic", "claude-sonnet-4-5-20250929", &server.url(), "");
    let items: Vec<_> = h
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    let last = items.last().unwrap();
    assert!(
        matches!(last, Err(e) if e.kind == ErrorKind::Network),
        "{items:?}"
    );
}

#[tokio::test]
async fn cancelling_ends_a_stalled_stream_promptly() {
    let resp = HttpResponse::sse(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    );
    let server = MockServer::start(vec![
        Reply::new(resp).after_body(AfterBody::HoldOpen(Duration::from_secs(60))),
    ])
    .await;
    let h = handler("openai", "m", &format!("{}/v1", server.url()), "");
    let cancel = CancellationToken::new();
    let mut stream = h.create_message(
        "s",
        &[Message::user_text("x")],
        &[],
        RequestOptions::with_cancel(cancel.clone()),
    );
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first, ApiStreamChunk::text("Hel"));
    cancel.cancel();
    let next = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .unwrap();
    assert!(
        matches!(next, Some(Err(ref e)) if e.kind == ErrorKind::Cancelled),
        "{next:?}"
    );
    assert!(stream.next().await.is_none());
    // A request whose token is cancelled before it starts sends nothing; the next request
    // on the same handler, with its own options, is unaffected.
    let server2 =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let h2 = handler("openai", "m", &format!("{}/v1", server2.url()), "");
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let items: Vec<_> = h2
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::with_cancel(cancelled),
        )
        .collect()
        .await;
    assert!(
        matches!(items.as_slice(), [Err(e)] if e.kind == ErrorKind::Cancelled),
        "{items:?}"
    );
    assert_eq!(server2.request_count(), 0);
    let items: Vec<_> = h2
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(server2.request_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_is_retried_at_the_provider_level_honouring_retry_after() {
    // anthropic_429 says retry-after: 17; the third request succeeds.
    let replies = vec![
        Reply::new(HttpResponse::fixture("anthropic_429")),
        Reply::new(HttpResponse::fixture("anthropic_429")),
        Reply::new(HttpResponse::fixture("anthropic_text")),
    ];
    let server = MockServer::start(replies).await;
    let h = handler("anthropic", "claude-sonnet-4-5-20250929", &server.url(), "");
    let reports = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = reports.clone();
    let options = RequestOptions {
        on_retry: Some(std::sync::Arc::new(
            move |s: switchyard_api::handler::RetryStatus| {
                sink.lock()
                    .unwrap()
                    .push((s.attempt, s.max_attempts, s.delay, s.error.kind));
            },
        )),
        ..RequestOptions::default()
    };
    let items: Vec<_> = h
        .create_message("s", &[Message::user_text("x")], &[], options)
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(server.request_count(), 3);
    let reqs = server.requests();
    for pair in reqs.windows(2) {
        let gap = pair[1].at - pair[0].at;
        // 17 s, jittered only upward (at most +10 %): never before the server asked.
        assert!(
            gap >= Duration::from_secs(17) && gap <= Duration::from_millis(18_700),
            "{gap:?}"
        );
    }
    let reports = reports.lock().unwrap().clone();
    assert_eq!(reports.len(), 2);
    assert_eq!(
        (reports[0].0, reports[0].1, reports[0].3),
        (1, 3, ErrorKind::RateLimited)
    );
    assert_eq!(reports[1].0, 2);
    // Overload is not retried here (it goes to the task level, SPEC R5.1).
    let server = MockServer::start(vec![Reply::new(HttpResponse::case("C04"))]).await;
    let h = handler("anthropic", "claude-sonnet-4-5-20250929", &server.url(), "");
    let items: Vec<_> = h
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    assert!(matches!(items.as_slice(), [Err(e)] if e.kind == ErrorKind::Overloaded));
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn ollama_request_shape() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture("ollama_chat"))]).await;
    // A base URL copied from the OpenAI-compatible setup still reaches the native API.
    let h = handler("ollama", "qwen3:8b", &format!("{}/v1", server.url()), "");
    assert_eq!(h.get_model().info.context_window, 32_768);
    let tools = [ToolSpec {
        name: "get_weather".into(),
        description: "Weather".into(),
        input_schema: json!({"type": "object"}),
    }];
    let _: Vec<_> = h
        .create_message(
            "SYS",
            &[Message::user_text("q")],
            &tools,
            RequestOptions::default(),
        )
        .collect()
        .await;
    let req = &server.requests()[0];
    assert_eq!(req.path, "/api/chat");
    let body = req.json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["options"]["num_ctx"], 32_768);
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "SYS"})
    );
    assert_eq!(body["messages"][1], json!({"role": "user", "content": "q"}));
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}}})
    );
    // A configured context window is sent as num_ctx and reported.
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture("ollama_chat"))]).await;
    let h = handler(
        "ollama",
        "qwen3:8b",
        &server.url(),
        "[act.model_info]\ncontext_window = 8192",
    );
    assert_eq!(h.get_model().info.context_window, 8192);
    let _: Vec<_> = h
        .create_message(
            "s",
            &[Message::user_text("q")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    assert_eq!(server.requests()[0].json()["options"]["num_ctx"], 8192);
}

#[tokio::test]
async fn openai_responses_request_shape() {
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_responses"))]).await;
    let h = handler(
        "openai-native",
        "gpt-5.4",
        &format!("{}/v1", server.url()),
        "reasoning_effort = \"high\"",
    );
    let tools = [ToolSpec {
        name: "t".into(),
        description: "d".into(),
        input_schema: json!({"type": "object"}),
    }];
    let messages = [
        Message::user_text("q"),
        Message {
            role: switchyard_api::Role::Assistant,
            content: vec![switchyard_api::ContentBlock::ToolUse {
                id: "call_1".into(),
                name: "t".into(),
                input: json!({"a": 1}),
                signature: None,
            }],
        },
        Message {
            role: switchyard_api::Role::User,
            content: vec![switchyard_api::ContentBlock::ToolResult {
                tool_use_id: "call_1".into(),
                content: "ok".into(),
                is_error: false,
            }],
        },
    ];
    let items: Vec<_> = h
        .create_message("SYS", &messages, &tools, RequestOptions::default())
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok));
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/responses");
    let body = req.json();
    assert_eq!(body["instructions"], "SYS");
    assert_eq!(body["stream"], true);
    assert_eq!(body["store"], false);
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        body["input"][0],
        json!({"role": "user", "content": [{"type": "input_text", "text": "q"}]})
    );
    assert_eq!(
        body["input"][1],
        json!({"type": "function_call", "call_id": "call_1", "name": "t", "arguments": "{\"a\":1}"})
    );
    assert_eq!(
        body["input"][2],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "ok"})
    );
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "name": "t", "description": "d", "parameters": {"type": "object"}})
    );
}

#[tokio::test(start_paused = true)]
async fn c07_a_rate_limit_error_event_inside_a_responses_stream() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::case("C07"))]).await;
    let h = handler(
        "openai-native",
        "gpt-5.4",
        &format!("{}/v1", server.url()),
        "",
    );
    let items: Vec<_> = h
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    let [Err(e)] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(e.kind, ErrorKind::RateLimited);
    assert_eq!(e.retry_after, Some(Duration::from_millis(915)));
}

#[tokio::test]
async fn gemini_request_shape_keeps_the_key_out_of_the_url() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture("gemini_stream"))]).await;
    let h = handler(
        "gemini",
        "gemini-2.5-flash",
        &server.url(),
        "thinking_budget_tokens = 50000",
    );
    let tools = [ToolSpec {
        name: "t".into(),
        description: "d".into(),
        input_schema: json!({"type": "object"}),
    }];
    let messages = [
        Message::user_text("q"),
        Message {
            role: switchyard_api::Role::Assistant,
            content: vec![switchyard_api::ContentBlock::ToolUse {
                id: "call_1".into(),
                name: "t".into(),
                input: json!({"a": 1}),
                signature: Some("SIG-H21".into()),
            }],
        },
        Message {
            role: switchyard_api::Role::User,
            content: vec![switchyard_api::ContentBlock::ToolResult {
                tool_use_id: "call_1".into(),
                content: "ok".into(),
                is_error: false,
            }],
        },
    ];
    let items: Vec<_> = h
        .create_message("SYS", &messages, &tools, RequestOptions::default())
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert!(!req.path.contains(KEY));
    assert_eq!(req.header("x-goog-api-key"), Some(KEY));
    let body = req.json();
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "SYS"}]})
    );
    // 50000 is clipped to the model's max output − 1 (R3.3), then capped at its thinking max (R4.7).
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingBudget": 24576})
    );
    // The call's id goes out and comes back with its response (Gemini 3 pairs them), and its
    // thought signature goes back with it (Gemini 3 rejects a replayed call without; H21).
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [{"functionCall": {"name": "t", "args": {"a": 1}, "id": "call_1"}, "thoughtSignature": "SIG-H21"}]})
    );
    assert_eq!(
        body["contents"][2],
        json!({"role": "user", "parts": [{"functionResponse": {"id": "call_1", "name": "t", "response": {"content": "ok"}}}]})
    );
    assert_eq!(
        body["tools"],
        json!([{"functionDeclarations": [{"name": "t", "description": "d", "parameters": {"type": "object"}}]}])
    );
}

#[tokio::test(start_paused = true)]
async fn bedrock_event_streams_match_their_expected_chunks_in_every_split() {
    // The raw `.bin` event streams (made by make_bedrock_fixture.py), served as the body of a
    // ConverseStream response in 1-, 5-, 7-byte and whole writes.
    for name in [
        "bedrock_converse_stream",
        "bedrock_throttling_midstream",
        "bedrock_model_stream_error",
    ] {
        let bytes = std::fs::read(test_data_dir().join(format!("fixtures/{name}.bin"))).unwrap();
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(
                test_data_dir().join(format!("fixtures/{name}.expected.json")),
            )
            .unwrap(),
        )
        .unwrap();
        for piece in [1, 5, 7, bytes.len()] {
            let response = HttpResponse::new(
                200,
                &[("content-type", "application/vnd.amazon.eventstream")],
                bytes.clone(),
            );
            let server =
                MockServer::start(vec![Reply::new(response).split(Split::Every(piece))]).await;
            let (provider, model, _) = provider_for(name);
            let h = handler(provider, model, &server.url(), "");
            let items: Vec<_> = h
                .create_message(
                    "You are terse.",
                    &[Message::user_text("hi")],
                    &[],
                    RequestOptions::default(),
                )
                .collect()
                .await;
            let got = Value::Array(normalise("bedrock", &items));
            assert_eq!(got, expected, "{name} in {piece}-byte pieces");
        }
    }
}
