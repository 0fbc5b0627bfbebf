//! AIhubmix, AskSage, Dify and SAP AI Core against the testkit server speaking each one's wire
//! format (recorded shapes in `tests/fixtures`, see `make_signin_fixtures.py`), each with only
//! its credential variable: the path, headers and body each request has, and the chunks each
//! answer becomes, in 1-, 5- and 7-byte writes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use serde_json::json;
use switchyard_api::{
    ApiConfiguration, ApiError, ApiHandler, ApiStreamChunk, ConfigError, ErrorKind, Message, Mode,
    RequestOptions, build_api_handler,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, Split, fixture_text};

const KEY: &str = "own-provider-test-key-0123456789";
const SPLITS: [Split; 4] = [
    Split::Whole,
    Split::Every(1),
    Split::Every(5),
    Split::Every(7),
];

/// A handler for `provider` with `var` = `value` as the whole environment.
fn handler(
    provider: &str,
    mode: &str,
    endpoint: &str,
    var: &'static str,
    value: &str,
) -> Result<Box<dyn ApiHandler>, ConfigError> {
    let text =
        format!("[act]\nprovider = \"{provider}\"\n{mode}\n[providers.{provider}]\n{endpoint}\n");
    let value = value.to_owned();
    let config =
        ApiConfiguration::from_toml(&text, "t.toml", move |k| (k == var).then(|| value.clone()))
            .unwrap();
    build_api_handler(&config, Mode::Act)
}

async fn run(h: &dyn ApiHandler, messages: &[Message]) -> Vec<Result<ApiStreamChunk, ApiError>> {
    h.create_message("SYSTEM PROMPT", messages, &[], RequestOptions::default())
        .collect()
        .await
}

fn text(items: &[Result<ApiStreamChunk, ApiError>]) -> String {
    items
        .iter()
        .filter_map(|i| match i {
            Ok(ApiStreamChunk::Text { text, .. }) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// A server answering every request with `fixture` in `split` writes.
async fn serve(fixture: &str, split: Split) -> MockServer {
    MockServer::start(vec![
        Reply::new(HttpResponse::fixture(fixture)).split(split),
    ])
    .await
}

fn usage(items: &[Result<ApiStreamChunk, ApiError>]) -> switchyard_api::Usage {
    items
        .iter()
        .rev()
        .find_map(|i| match i {
            Ok(ApiStreamChunk::Usage(u)) => Some(u.clone()),
            _ => None,
        })
        .expect("a usage chunk")
}

#[tokio::test]
async fn aihubmix_routes_each_model_family_to_its_wire() {
    // (model, fixture, path, key header, expected key value)
    let rows = [
        (
            "claude-sonnet-4-5",
            "anthropic_text",
            "/v1/messages",
            "x-api-key",
            KEY.to_owned(),
        ),
        (
            "gemini-2.5-pro",
            "gemini_stream",
            "/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
            "x-goog-api-key",
            KEY.to_owned(),
        ),
        (
            "gpt-5-codex",
            "openai_responses",
            "/v1/responses",
            "authorization",
            format!("Bearer {KEY}"),
        ),
        (
            "deepseek-v3",
            "openai_chat_text",
            "/v1/chat/completions",
            "authorization",
            format!("Bearer {KEY}"),
        ),
        (
            "gemini-2.5-flash-nothink",
            "openai_chat_text",
            "/v1/chat/completions",
            "authorization",
            format!("Bearer {KEY}"),
        ),
    ];
    for (model, fixture, path, header, value) in rows {
        for split in SPLITS {
            let label = format!("{model} {split:?}");
            let server = serve(fixture, split).await;
            let h = handler(
                "aihubmix",
                &format!("model = \"{model}\""),
                &format!("base_url = \"{}\"\napp_code = \"APPX\"", server.url()),
                "AIHUBMIX_API_KEY",
                KEY,
            )
            .unwrap();
            let items = run(h.as_ref(), &[Message::user_text("hi")]).await;
            assert!(items.iter().all(Result::is_ok), "{model}: {items:?}");
            assert_eq!(text(&items), fixture_text(fixture), "{label}");
            let req = &server.requests()[0];
            assert_eq!(req.path, path, "{model}");
            assert_eq!(req.header(header), Some(value.as_str()), "{model}");
            assert_eq!(req.header("app-code"), Some("APPX"), "{model}");
            if model.starts_with("gemini-2.5-pro") {
                assert_eq!(
                    req.header("authorization"),
                    Some(format!("Bearer {KEY}").as_str())
                );
            } else {
                assert_eq!(req.json()["model"], model);
            }
            if path == "/v1/chat/completions" {
                let body = req.json();
                assert_eq!(body["temperature"], 0.0);
                assert!(
                    body.get("max_tokens").is_none() && body.get("max_completion_tokens").is_none()
                );
            }
        }
    }
    // No APP-Code unless configured; the default base URL is AIhubmix's.
    let h = handler("aihubmix", "", "", "AIHUBMIX_API_KEY", KEY).unwrap();
    assert_eq!(h.get_model().id, "gpt-4o-mini", "the reference's default");
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let h = handler(
        "aihubmix",
        "",
        &format!("base_url = \"{}\"", server.url()),
        "AIHUBMIX_API_KEY",
        KEY,
    )
    .unwrap();
    let _ = run(h.as_ref(), &[Message::user_text("hi")]).await;
    assert_eq!(server.requests()[0].header("app-code"), None);
}

#[tokio::test]
async fn asksage_posts_the_query_and_reads_the_one_json_answer() {
    for split in SPLITS {
        let server = serve("asksage_query", split).await;
        let h = handler(
            "asksage",
            "",
            &format!("base_url = \"{}/server\"", server.url()),
            "ASKSAGE_API_KEY",
            KEY,
        )
        .unwrap();
        assert_eq!(
            h.get_model().id,
            "claude-4-sonnet",
            "the reference's default"
        );
        let messages = [
            Message::user_text("What does the borrow checker allow?"),
            Message::assistant_text("Ask me."),
            Message::user_text("Go on."),
        ];
        let items = run(h.as_ref(), &messages).await;
        assert!(items.iter().all(Result::is_ok), "{items:?}");
        assert_eq!(
            text(&items),
            "The borrow checker allows many `&T` or one `&mut T`."
        );
        let u = usage(&items);
        assert_eq!((u.input_tokens, u.output_tokens), (1387, 18));
        assert_eq!(u.total_cost_usd, None, "AskSage tokens are not dollars");
        let req = &server.requests()[0];
        assert_eq!(req.path, "/server/query");
        assert_eq!(req.header("x-access-tokens"), Some(KEY));
        assert!(req.header("authorization").is_none());
        assert_eq!(
            req.json(),
            json!({
                "system_prompt": "SYSTEM PROMPT",
                "message": [
                    {"user": "me", "message": "What does the borrow checker allow?"},
                    {"user": "gpt", "message": "Ask me."},
                    {"user": "me", "message": "Go on."},
                ],
                "model": "claude-4-sonnet",
                "dataset": "none",
                "usage": true,
            })
        );
    }
    // Refusals keep their HTTP meaning; an answer without a message is an error.
    let server = MockServer::start(vec![Reply::new(HttpResponse::json(
        401,
        r#"{"message":"Invalid token","status":401}"#,
    ))])
    .await;
    let h = handler(
        "asksage",
        "",
        &format!("base_url = \"{}\"", server.url()),
        "ASKSAGE_API_KEY",
        KEY,
    )
    .unwrap();
    let items = run(h.as_ref(), &[Message::user_text("x")]).await;
    assert!(
        matches!(&items[..], [Err(e)] if e.kind == ErrorKind::Auth),
        "{items:?}"
    );
    let server = MockServer::start(vec![Reply::new(HttpResponse::json(
        200,
        r#"{"message":"","status":200}"#,
    ))])
    .await;
    let h = handler(
        "asksage",
        "",
        &format!("base_url = \"{}\"", server.url()),
        "ASKSAGE_API_KEY",
        KEY,
    )
    .unwrap();
    let items = run(h.as_ref(), &[Message::user_text("x")]).await;
    assert!(
        matches!(&items[..], [Err(e)] if e.message.contains("without a message")),
        "{items:?}"
    );
}

#[tokio::test]
async fn dify_streams_text_chunks_and_prices_in_dollars() {
    for split in SPLITS {
        let server = serve("dify_chat_messages", split).await;
        let h = handler(
            "dify",
            "",
            &format!("base_url = \"{}/v1\"", server.url()),
            "DIFY_API_KEY",
            KEY,
        )
        .unwrap();
        assert_eq!(h.get_model().id, "dify-workflow");
        let items = run(h.as_ref(), &[Message::user_text("hello")]).await;
        assert!(items.iter().all(Result::is_ok), "{items:?}");
        // Each `message` is a chunk of the answer: no repetition.
        assert_eq!(text(&items), "Dify says «hello» — in three parts.");
        let u = usage(&items);
        assert_eq!((u.input_tokens, u.output_tokens), (1033, 135));
        assert_eq!(u.total_cost_usd, Some(0.001303));
        let req = &server.requests()[0];
        assert_eq!(req.path, "/v1/chat-messages");
        assert_eq!(
            req.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert_eq!(
            req.json(),
            json!({"inputs": {}, "query": "SYSTEM PROMPT\n\n---\n\nhello", "response_mode": "streaming",
                   "conversation_id": "", "user": "switchyard", "files": []})
        );
    }
    // A later turn carries the conversation; an error event ends the stream.
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "dify_error_midstream",
    ))])
    .await;
    let h = handler(
        "dify",
        "",
        &format!("base_url = \"{}/v1\"", server.url()),
        "DIFY_API_KEY",
        KEY,
    )
    .unwrap();
    let items = run(
        h.as_ref(),
        &[
            Message::user_text("a"),
            Message::assistant_text("b"),
            Message::user_text("c"),
        ],
    )
    .await;
    assert_eq!(
        server.requests()[0].json()["query"],
        "SYSTEM PROMPT\n\n---\n\nUser: a\n\nAssistant: b\n\nUser: c"
    );
    let (last, before) = items.split_last().unwrap();
    assert!(before.iter().all(Result::is_ok), "{items:?}");
    let Err(e) = last else { panic!("{items:?}") };
    assert!(e.message.contains("Rate Limit Error"), "{e}");
    assert_eq!(e.provider_id.as_deref(), Some("dify"));
}

/// An SAP AI Core service key pointing at `server`.
fn service_key(server: &MockServer) -> String {
    json!({
        "clientid": "sb-fixture-client!b1|aicore!b540",
        "clientsecret": "sap-fixture-client-secret-0123",
        "url": format!("{}/auth", server.url()),
        "identityzone": "fixture",
        "serviceurls": {"AI_API_URL": format!("{}/", server.url())},
    })
    .to_string()
}

fn sap(server: &MockServer, mode: &str, endpoint: &str) -> Box<dyn ApiHandler> {
    handler(
        "sapaicore",
        mode,
        endpoint,
        "AICORE_SERVICE_KEY",
        &service_key(server),
    )
    .unwrap()
}

#[tokio::test]
async fn sapaicore_gets_a_token_finds_the_deployment_and_streams_converse() {
    for split in SPLITS {
        let server = MockServer::start(vec![
            Reply::new(HttpResponse::fixture("sapaicore_token")),
            Reply::new(HttpResponse::fixture("sapaicore_deployments")),
            Reply::new(HttpResponse::fixture("sapaicore_converse_stream")).split(split),
        ])
        .await;
        let h = sap(&server, "model = \"anthropic--claude-4.5-sonnet\"", "");
        let items = run(h.as_ref(), &[Message::user_text("Explain borrowing.")]).await;
        assert!(items.iter().all(Result::is_ok), "{items:?}");
        assert_eq!(text(&items), "One owner; many `&T` or one `&mut T`.");
        assert!(items.iter().any(|i| matches!(i, Ok(ApiStreamChunk::Reasoning { reasoning, .. }) if reasoning == "Two rules to state.")));
        assert!(items.iter().any(|i| matches!(i, Ok(ApiStreamChunk::Reasoning { signature: Some(s), .. }) if s == "sap-fixture-signature-0001")));
        let u = usage(&items);
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens,
                u.total_cost_usd
            ),
            (812, 41, Some(4000), Some(0), None)
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        let token = &requests[0];
        assert_eq!(
            (token.method.as_str(), token.path.as_str()),
            ("POST", "/auth/oauth/token")
        );
        assert_eq!(
            String::from_utf8(token.body.clone()).unwrap(),
            "grant_type=client_credentials&client_id=sb-fixture-client%21b1%7Caicore%21b540&client_secret=sap-fixture-client-secret-0123"
        );
        let list = &requests[1];
        assert_eq!(
            (list.method.as_str(), list.path.as_str()),
            ("GET", "/v2/lm/deployments?$top=10000&$skip=0")
        );
        assert_eq!(list.header("ai-resource-group"), Some("default"));
        let bearer = "Bearer eyJhbGciOiJSUzI1NiJ9.sap-fixture-access-token.c2ln";
        assert_eq!(list.header("authorization"), Some(bearer));
        let call = &requests[2];
        assert_eq!(
            call.path,
            "/v2/inference/deployments/d1a2b3c4d5e6f708/converse-stream"
        );
        assert_eq!(call.header("authorization"), Some(bearer));
        assert_eq!(call.header("ai-client-type"), Some("Switchyard"));
        let body = call.json();
        assert_eq!(body["inferenceConfig"]["temperature"], 0.0);
        // The reference's table gives this model prompt caching: a cache point after the
        // system prompt and after the last user message, as on Bedrock.
        assert_eq!(
            body["system"],
            json!([{"text": "SYSTEM PROMPT"}, {"cachePoint": {"type": "default"}}])
        );
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [{"text": "Explain borrowing."}, {"cachePoint": {"type": "default"}}]}])
        );
        // The second request of the handler reuses the token and the deployment.
        let server_calls = server.request_count();
        let _ = run(h.as_ref(), &[Message::user_text("again")]).await;
        assert_eq!(server.request_count(), server_calls + 1);
    }
}

#[tokio::test]
async fn sapaicore_configured_deployment_and_other_families() {
    // (model, fixture, path below the deployment)
    let rows = [
        (
            "gpt-4o",
            "openai_chat_text",
            "chat/completions?api-version=2024-12-01-preview",
        ),
        (
            "o4-mini",
            "openai_chat_text",
            "chat/completions?api-version=2024-12-01-preview",
        ),
        (
            "gemini-2.5-pro",
            "gemini_stream",
            "models/gemini-2.5-pro:streamGenerateContent",
        ),
        (
            "anthropic--claude-3.5-sonnet",
            "anthropic_text",
            "invoke-with-response-stream",
        ),
        ("sonar-pro", "openai_chat_text", "chat/completions"),
    ];
    for (model, fixture, path) in rows {
        let server = MockServer::start(vec![
            Reply::new(HttpResponse::fixture("sapaicore_token")),
            Reply::new(HttpResponse::fixture(fixture)),
        ])
        .await;
        let h = sap(
            &server,
            &format!(
                "model = \"{model}\"\nreasoning_effort = \"high\"\n[act.model_info]\nmax_tokens = 4096"
            ),
            "deployment_id = \"dep-configured\"\nresource_group = \"team-a\"",
        );
        let items = run(h.as_ref(), &[Message::user_text("hi")]).await;
        assert!(items.iter().all(Result::is_ok), "{model}: {items:?}");
        assert_eq!(text(&items), fixture_text(fixture), "{model}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{model}: no deployment lookup");
        let call = &requests[1];
        assert_eq!(
            call.path,
            format!("/v2/inference/deployments/dep-configured/{path}"),
            "{model}"
        );
        assert_eq!(call.header("ai-resource-group"), Some("team-a"));
        let body = call.json();
        match model {
            "gpt-4o" => {
                assert_eq!(body["temperature"], 0.0);
                assert_eq!(body["max_tokens"], 4096);
                assert_eq!(body["frequency_penalty"], 0);
                assert!(body["stop"].is_null() && body.get("reasoning_effort").is_none());
            }
            "o4-mini" => {
                assert!(body.get("temperature").is_none() && body.get("max_tokens").is_none());
                assert_eq!(body["reasoning_effort"], "high");
            }
            "gemini-2.5-pro" => {
                assert_eq!(
                    body["generationConfig"],
                    json!({"temperature": 0.0, "maxOutputTokens": 4096})
                );
                assert_eq!(
                    body["systemInstruction"]["parts"][0]["text"],
                    "SYSTEM PROMPT"
                );
            }
            "anthropic--claude-3.5-sonnet" => {
                assert_eq!(body["anthropic_version"], "bedrock-2023-05-31");
                assert_eq!(body["max_tokens"], 4096);
                assert_eq!(body["system"], "SYSTEM PROMPT");
            }
            _ => assert_eq!(body["model"], "sonar-pro"),
        }
    }
}

#[tokio::test]
async fn sapaicore_problems_are_clear_sentences() {
    // No running deployment for the model: the running ones are named.
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::fixture("sapaicore_token")),
        Reply::new(HttpResponse::fixture("sapaicore_deployments")),
    ])
    .await;
    let h = sap(&server, "model = \"anthropic--claude-4-opus\"", "");
    let items = run(h.as_ref(), &[Message::user_text("hi")]).await;
    let [Err(e)] = &items[..] else {
        panic!("{items:?}")
    };
    assert!(
        e.message
            .contains("no running SAP AI Core deployment serves `anthropic--claude-4-opus`"),
        "{e}"
    );
    assert!(
        e.message.contains("anthropic--claude-4.5-sonnet:1") && e.message.contains("deployment_id"),
        "{e}"
    );
    assert!(
        !e.message.contains("claude-3.5"),
        "stopped deployments are not offered: {e}"
    );
    // A refused client secret.
    let server = MockServer::start(vec![Reply::new(HttpResponse::json(
        401,
        r#"{"error":"unauthorized","error_description":"Bad credentials"}"#,
    ))])
    .await;
    let h = sap(&server, "model = \"gpt-4o\"", "deployment_id = \"d\"");
    let items = run(h.as_ref(), &[Message::user_text("hi")]).await;
    let [Err(e)] = &items[..] else {
        panic!("{items:?}")
    };
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(
        e.message.contains("Bad credentials") && e.message.contains("AICORE_SERVICE_KEY"),
        "{e}"
    );
    assert!(!e.to_string().contains("sap-fixture-client-secret"));
    // A key that is not a service key is refused when the handler is built, unquoted.
    let err = handler(
        "sapaicore",
        "",
        "",
        "AICORE_SERVICE_KEY",
        "not-json-secret-value",
    )
    .err()
    .unwrap();
    let message = err.to_string();
    assert!(
        message.contains("AICORE_SERVICE_KEY is not an SAP AI Core service key"),
        "{message}"
    );
    assert!(!message.contains("not-json-secret-value"));
    // A model family Switchyard cannot call is refused before anything is sent.
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("sapaicore_token"))]).await;
    let h = sap(
        &server,
        "model = \"meta--llama3-70b\"",
        "deployment_id = \"d\"",
    );
    let items = run(h.as_ref(), &[Message::user_text("hi")]).await;
    assert!(
        matches!(&items[..], [Err(e)] if e.message.contains("not an SAP AI Core model family")),
        "{items:?}"
    );
    assert_eq!(server.request_count(), 0);
}
