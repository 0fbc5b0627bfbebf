//! Google's Gemini API through the in-process gateway (SPEC R14.12, R14.2, R14.5, R14.6): a
//! Gemini client on a Gemini route sends its own body and gets the events as they came; the
//! JSON-array stream, forwarded and translated, from upstreams writing 1, 5 and 7 bytes at a
//! time; `countTokens`, the model list and one model; keys from `x-goog-api-key` and `?key=`;
//! Google's error bodies; what a translated route names dropped. Every recording through the
//! Gemini dialect is in tests/through.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{KEY, route, start};
use serde_json::{Value, json};
use switchyard_api::ApiConfiguration;
use switchyard_core::store::{NewKeyRequest, SqliteStore, TaskStore, create_client_key};
use switchyard_gateway::{Gateway, ServerLimits, serve};
use switchyard_testkit::{HttpResponse, MockServer, Reply, Split};
use tokio_util::sync::CancellationToken;

/// Sends `method` to `path` with `body` and `headers`: the status, headers and body.
async fn send(
    base: &str,
    (method, path): (&str, &str),
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, String) {
    let client = reqwest::Client::new();
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = client.request(method, format!("{base}{path}"));
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

/// A Gemini CLI turn with what Switchyard's messages cannot hold: safety settings, `topK`,
/// Google Search, a cached content's name, a field newer than this build.
fn gemini_cli_body() -> Value {
    json!({
        "contents": [{"role": "user", "parts": [{"text": "What is photosynthesis?"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
        "tools": [{"functionDeclarations": [{"name": "read_file", "description": "Reads a file.",
            "parametersJsonSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]},
            {"googleSearch": {}}],
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "cachedContent": "cachedContents/abc123",
        "generationConfig": {"temperature": 0, "topK": 40, "maxOutputTokens": 65536,
            "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 8192}},
        "futureField": {"kept": true}
    })
}

/// The JSON data of each `data:` event in `text`.
fn data_events(text: &str) -> Vec<Value> {
    (text.lines())
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// The text of every non-thought part of `responses`, joined.
fn text_of(responses: &[Value]) -> String {
    (responses.iter())
        .flat_map(|r| {
            r["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|p| p["thought"] != true)
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_gemini_client_on_a_gemini_route_sends_its_own_body_and_gets_the_events() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("gemini_stream"))]).await;
    let gateway = start(&route(
        "gemini-*",
        "gemini",
        "gemini-2.5-flash",
        &upstream.url(),
    ))
    .await;
    let body = gemini_cli_body();
    let path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
    let headers = [("x-goog-api-client", "google-genai-sdk/1.30.0 gl-node/v20")];
    let (status, headers, text) = send(&gateway.base, ("POST", path), Some(&body), &headers).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert!(headers.get("x-switchyard-dropped").is_none(), "{headers:?}");
    let fixture = String::from_utf8(HttpResponse::fixture("gemini_stream").body).unwrap();
    assert_eq!(
        data_events(&text),
        data_events(&fixture),
        "the provider's events, as they came"
    );
    let sent = &upstream.requests()[0];
    assert_eq!(
        sent.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        sent.json(),
        body,
        "the client's body as it came: no model, no stream added"
    );
    assert_eq!(sent.header("x-goog-api-key"), Some(KEY));
}

/// Case G14 (tests/cases/CASES.md): the google-genai SDK omits `alt` and reads JSON
/// (https://github.com/BerriAI/litellm/issues/28777).
#[tokio::test]
async fn the_json_array_stream_forwarded_and_translated_in_1_5_and_7_byte_writes() {
    for split in [
        Split::Whole,
        Split::Every(1),
        Split::Every(5),
        Split::Every(7),
    ] {
        let gemini = Reply::new(HttpResponse::fixture("gemini_stream")).split(split.clone());
        let anthropic = Reply::new(HttpResponse::fixture("anthropic_text")).split(split.clone());
        let gemini_up = MockServer::start(vec![gemini]).await;
        let anthropic_up = MockServer::start(vec![anthropic]).await;
        let routes = route("flash", "gemini", "gemini-2.5-flash", &gemini_up.url())
            + &route(
                "sonnet",
                "anthropic",
                "claude-sonnet-4-5",
                &anthropic_up.url(),
            );
        let gateway = start(&routes).await;
        let body = json!({"contents": [{"parts": [{"text": "hi"}]}]});
        for (model, want) in [
            (
                "flash",
                "Photosynthesis converts light energy into chemical energy stored in glucose (C₆H₁₂O₆).",
            ),
            (
                "sonnet",
                "The capital of France is Paris, often called « la Ville Lumière » — the City of Light.\n\nWant more facts?",
            ),
        ] {
            let path = format!("/v1/models/{model}:streamGenerateContent");
            let (status, headers, text) =
                send(&gateway.base, ("POST", &path), Some(&body), &[]).await;
            let label = format!("{model} {split:?}");
            assert_eq!(status, 200, "{label}: {text}");
            assert!(
                headers["content-type"]
                    .to_str()
                    .unwrap()
                    .starts_with("application/json"),
                "{label}"
            );
            let array: Vec<Value> =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{label}: {e}: {text}"));
            assert_eq!(text_of(&array), want, "{label}");
            let last = array.last().unwrap();
            assert_eq!(last["candidates"][0]["finishReason"], "STOP", "{label}");
            assert!(
                last["usageMetadata"]["promptTokenCount"].as_u64().unwrap() > 0,
                "{label}"
            );
        }
        let (_, _, whole) = send(
            &gateway.base,
            ("POST", "/v1beta/models/sonnet:generateContent"),
            Some(&body),
            &[],
        )
        .await;
        let whole: Value = serde_json::from_str(&whole).unwrap();
        assert_eq!(
            whole["candidates"][0]["content"]["parts"]
                .as_array()
                .unwrap()
                .len(),
            1,
            "{whole}"
        );
        assert_eq!(
            whole["usageMetadata"]["cachedContentTokenCount"], 2048,
            "{whole}"
        );
    }
}

#[tokio::test]
async fn a_translated_route_names_what_it_cannot_carry_in_googles_spelling() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let gateway = start(&route(
        "gemini-*",
        "anthropic",
        "claude-sonnet-4-5",
        &upstream.url(),
    ))
    .await;
    let path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
    let (status, headers, text) =
        send(&gateway.base, ("POST", path), Some(&gemini_cli_body()), &[]).await;
    assert_eq!(status, 200, "{text}");
    let dropped = headers["x-switchyard-dropped"].to_str().unwrap();
    let names: Vec<&str> = dropped.split(',').collect();
    for name in [
        "tools.googleSearch",
        "safetySettings",
        "cachedContent",
        "topK",
    ] {
        assert!(names.contains(&name), "{name} in {dropped}");
    }
    let events = data_events(&text);
    assert!(
        text_of(&events).starts_with("The capital of France"),
        "{text}"
    );
    let sent = upstream.requests()[0].json();
    assert_eq!(sent["system"][0]["text"], "You are Gemini CLI.", "{sent}");
    assert_eq!(sent["tools"][0]["name"], "read_file", "{sent}");
    assert_eq!(sent["thinking"]["budget_tokens"], 8192, "{sent}");
}

/// Cases G15 and G17 (tests/cases/CASES.md): `:countTokens` answered above 0 with no provider
/// asked (https://github.com/lbjlaq/Antigravity-Manager/issues/3294), and one model by its name
/// (https://github.com/maximhq/bifrost/pull/2070).
#[tokio::test]
async fn count_tokens_the_model_list_and_one_model_in_googles_shapes() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let gateway = start(&format!(
        "[serve]\nlist_catalogue = false\n\n{}",
        route(
            "gemini-x",
            "anthropic",
            "claude-sonnet-4-5",
            &upstream.url()
        )
    ))
    .await;
    let base = &gateway.base;
    let count = json!({"contents": [{"parts": [{"text": "count these words please"}]}]});
    let (status, headers, text) = send(
        base,
        ("POST", "/v1beta/models/gemini-x:countTokens"),
        Some(&count),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(headers["x-switchyard-usage"], "estimated");
    let counted: Value = serde_json::from_str(&text).unwrap();
    assert!(counted["totalTokens"].as_u64().unwrap() > 0, "{counted}");
    assert_eq!(upstream.request_count(), 0, "no provider is asked");
    let (_, _, list) = send(base, ("GET", "/v1beta/models"), None, &[]).await;
    let list: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list["models"][0]["name"], "models/gemini-x", "{list}");
    let (_, _, one) = send(base, ("GET", "/v1beta/models/gemini-x"), None, &[]).await;
    let one: Value = serde_json::from_str(&one).unwrap();
    assert_eq!(one["name"], "models/gemini-x", "{one}");
    assert!(
        one["supportedGenerationMethods"]
            .as_array()
            .unwrap()
            .contains(&json!("streamGenerateContent"))
    );
    assert!(one["inputTokenLimit"].as_u64().unwrap() > 0, "{one}");
    let (status, _, missing) = send(base, ("GET", "/v1beta/models/nope"), None, &[]).await;
    assert_eq!(status, 404, "{missing}");
    let missing: Value = serde_json::from_str(&missing).unwrap();
    assert_eq!(missing["error"]["status"], "NOT_FOUND", "{missing}");
    // `/v1/models` is OpenAI's unless the client is Google's.
    let (_, _, openai) = send(base, ("GET", "/v1/models"), None, &[]).await;
    assert_eq!(
        serde_json::from_str::<Value>(&openai).unwrap()["object"],
        "list"
    );
    let google = [("x-goog-api-key", "anything")];
    let (_, _, listed) = send(base, ("GET", "/v1/models"), None, &google).await;
    assert_eq!(
        serde_json::from_str::<Value>(&listed).unwrap()["models"][0]["name"],
        "models/gemini-x"
    );
    let (_, _, openai_one) = send(base, ("GET", "/v1/models/gemini-x"), None, &[]).await;
    assert_eq!(
        serde_json::from_str::<Value>(&openai_one).unwrap()["object"],
        "model"
    );
}

#[tokio::test]
async fn googles_error_bodies_for_a_malformed_body_an_unknown_model_and_path() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let gateway = start(&route(
        "gemini-*",
        "anthropic",
        "claude-sonnet-4-5",
        &upstream.url(),
    ))
    .await;
    let base = &gateway.base;
    let bad = json!({"contents": [{"role": "system", "parts": [{"text": "x"}]}]});
    let path = "/v1beta/models/gemini-2.5-pro:generateContent";
    let (status, _, text) = send(base, ("POST", path), Some(&bad), &[]).await;
    assert_eq!(status, 400, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (v["error"]["code"].as_u64(), v["error"]["status"].as_str()),
        (Some(400), Some("INVALID_ARGUMENT"))
    );
    assert_eq!(
        v["error"]["details"][0]["fieldViolations"][0]["field"],
        "contents[0].role"
    );
    let fine = json!({"contents": [{"parts": [{"text": "hi"}]}]});
    let (status, _, text) = send(
        base,
        ("POST", "/v1beta/models/other:generateContent"),
        Some(&fine),
        &[],
    )
    .await;
    assert_eq!(status, 404, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["status"], "NOT_FOUND", "{v}");
    let (status, _, text) = send(base, ("POST", "/v1beta/files"), Some(&fine), &[]).await;
    assert_eq!(status, 404, "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["error"]["status"],
        "NOT_FOUND"
    );
    // Case G18: a base URL ending in `/v1`, Google's 404 naming the fix
    // (https://github.com/chatanywhere/GPT_API_free/issues/469).
    let wrong = "/v1/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
    let (status, _, text) = send(base, ("POST", wrong), Some(&fine), &[]).await;
    assert_eq!(status, 404, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["status"], "NOT_FOUND", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("without `/v1`"),
        "{v}"
    );
    assert_eq!(upstream.request_count(), 0);
}

/// litellm#18604 (x-goog-api-key not read by a gateway): a keyed gateway takes the key from
/// `x-goog-api-key` and from `?key=`, and refuses none in Google's shape.
/// https://github.com/BerriAI/litellm/issues/18604
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_in_x_goog_api_key_or_the_url_opens_the_door() {
    let upstream =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("anthropic_text"))]).await;
    let text = route(
        "gemini-*",
        "anthropic",
        "claude-sonnet-4-5",
        &upstream.url(),
    );
    let config =
        ApiConfiguration::from_toml(&text, "serve.toml", |_| Some(KEY.to_owned())).unwrap();
    let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::in_memory().unwrap());
    let new = NewKeyRequest {
        name: "gemini-cli".into(),
        ..NewKeyRequest::default()
    };
    let key = create_client_key(&*store, &new, 0)
        .await
        .unwrap()
        .secret
        .key;
    let gateway = Gateway::with_store(config, store).with_client_keys(true);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    tokio::spawn(serve(
        listener,
        Arc::new(gateway),
        ServerLimits::default(),
        shutdown.clone(),
    ));
    let body = json!({"contents": [{"parts": [{"text": "hi"}]}]});
    let path = "/v1beta/models/gemini-2.5-pro:generateContent";
    let (status, _, text) = send(&base, ("POST", path), Some(&body), &[]).await;
    assert_eq!(status, 401, "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["error"]["status"],
        "UNAUTHENTICATED"
    );
    let (status, _, text) = send(
        &base,
        ("POST", path),
        Some(&body),
        &[("x-goog-api-key", &key)],
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let in_url = format!("{path}?key={key}");
    let (status, _, text) = send(&base, ("POST", &in_url), Some(&body), &[]).await;
    assert_eq!(status, 200, "{text}");
    assert!(!text.contains(&key));
    shutdown.cancel();
}
