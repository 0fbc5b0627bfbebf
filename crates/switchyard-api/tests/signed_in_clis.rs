//! `qwen-code` and `openai-codex` with only their sign-in files: the shapes the Qwen CLI and
//! the Codex CLI write (`tests/fixtures/credentials/`, copied into a temporary folder with the
//! expiries each test needs), against the testkit server standing in for both the API and the
//! OAuth token endpoint. Checked: the request each sends with a valid token, the refresh of a
//! token about to expire (what is posted, what is written back: the tool's shape, its unknown
//! fields, mode 0600, no stray files), the forced refresh after a 401, a refused refresh, and
//! the files that cannot be used.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use futures_util::StreamExt;
use serde_json::{Value, json};
use switchyard_api::{
    ApiConfiguration, ApiError, ApiHandler, ApiStreamChunk, ErrorKind, Message, Mode,
    RequestOptions, ToolSpec, build_api_handler,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, Split, test_data_dir};

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn credentials(name: &str) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(test_data_dir().join("fixtures/credentials").join(name)).unwrap(),
    )
    .unwrap()
}

/// Writes `value` as the tools do (pretty, two spaces) at `dir/name`.
fn write(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path
}

fn handler(provider: &str, file: &Path, server: &MockServer, extra: &str) -> Box<dyn ApiHandler> {
    let base = match provider {
        "qwen-code" => format!("{}/v1", server.url()),
        _ => format!("{}/backend-api/codex", server.url()),
    };
    let text = format!(
        "[act]\nprovider = \"{provider}\"\n{extra}\n[providers.{provider}]\nbase_url = \"{base}\"\ncredentials_file = \"{}\"\ntoken_url = \"{}/oauth/token\"\n",
        file.display(),
        server.url()
    );
    // No environment at all: the sign-in file is the only credential.
    let config = ApiConfiguration::from_toml(&text, "t.toml", |_| None).unwrap();
    build_api_handler(&config, Mode::Act).unwrap()
}

async fn run(h: &dyn ApiHandler, tools: &[ToolSpec]) -> Vec<Result<ApiStreamChunk, ApiError>> {
    h.create_message(
        "SYSTEM PROMPT",
        &[Message::user_text("How do I run the tests?")],
        tools,
        RequestOptions::default(),
    )
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

fn token_answer(access: &str, refresh: &str) -> Reply {
    Reply::new(HttpResponse::json(
        200,
        &json!({"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
                "expires_in": 21600, "resource_url": "portal.qwen.ai"})
        .to_string(),
    ))
}

/// The paths of `requests`, in order.
fn paths(requests: &[switchyard_testkit::RecordedRequest]) -> Vec<&str> {
    requests.iter().map(|r| r.path.as_str()).collect()
}

/// The folder's file names, to see that no lock or temporary file is left behind.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[cfg(unix)]
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn qwen_file(dir: &Path, expiry_ms: u64) -> PathBuf {
    let mut creds = credentials("qwen_oauth_creds.json");
    creds["expiry_date"] = json!(expiry_ms);
    write(dir, "oauth_creds.json", &creds)
}

#[tokio::test]
async fn qwen_code_sends_the_valid_token_and_the_reference_body() {
    let dir = tempfile::tempdir().unwrap();
    let file = qwen_file(dir.path(), (now_secs() + 3600) * 1000);
    let before = std::fs::read(&file).unwrap();
    for split in [
        Split::Whole,
        Split::Every(1),
        Split::Every(5),
        Split::Every(7),
    ] {
        let server = MockServer::start(vec![
            Reply::new(HttpResponse::fixture("openai_chat_text")).split(split),
        ])
        .await;
        let h = handler("qwen-code", &file, &server, "");
        assert_eq!(
            h.get_model().id,
            "qwen3-coder-plus",
            "the reference's default"
        );
        let items = run(h.as_ref(), &[]).await;
        assert!(items.iter().all(Result::is_ok), "{items:?}");
        assert!(!text(&items).is_empty());
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "no refresh for a valid token");
        let req = &requests[0];
        assert_eq!(req.path, "/v1/chat/completions");
        assert_eq!(
            req.header("authorization"),
            Some("Bearer qwen-fixture-access-token-0001")
        );
        let body = req.json();
        assert_eq!(body["model"], "qwen3-coder-plus");
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["max_completion_tokens"], 65536, "the model's limit");
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "SYSTEM PROMPT"})
        );
    }
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the file is untouched"
    );
}

#[tokio::test]
async fn qwen_code_refreshes_an_expiring_token_and_writes_the_file_back_in_its_shape() {
    let dir = tempfile::tempdir().unwrap();
    let mut creds = credentials("qwen_oauth_creds.json");
    creds["expiry_date"] = json!((now_secs() + 10) * 1000); // inside the 30 s margin
    creds["id_token"] = json!("kept-unknown-field");
    let file = write(dir.path(), "oauth_creds.json", &creds);
    let server = MockServer::start(vec![
        token_answer("qwen-new-access", "qwen-new-refresh"),
        Reply::new(HttpResponse::fixture("openai_chat_text")),
    ])
    .await;
    let items = run(handler("qwen-code", &file, &server, "").as_ref(), &[]).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let refresh = &requests[0];
    assert_eq!(refresh.path, "/oauth/token");
    assert_eq!(
        refresh.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        String::from_utf8(refresh.body.clone()).unwrap(),
        "grant_type=refresh_token&refresh_token=qwen-fixture-refresh-token-0001&client_id=f0304373b74a44d2b584a3fb70ca9e56"
    );
    assert_eq!(
        requests[1].header("authorization"),
        Some("Bearer qwen-new-access")
    );
    // Written back: the CLI's fields in its order, the unknown one kept, pretty-printed.
    let written = std::fs::read_to_string(&file).unwrap();
    let saved: Value = serde_json::from_str(&written).unwrap();
    let keys: Vec<&str> = saved
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let order: Vec<usize> = [
        "access_token",
        "token_type",
        "refresh_token",
        "resource_url",
        "expiry_date",
        "id_token",
    ]
    .iter()
    .map(|k| written.find(&format!("\"{k}\"")).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{written}");
    assert_eq!(keys.len(), 6, "{written}");
    assert!(
        written.starts_with("{\n  \"access_token\": \"qwen-new-access\""),
        "{written}"
    );
    assert_eq!(saved["refresh_token"], "qwen-new-refresh");
    assert_eq!(saved["id_token"], "kept-unknown-field");
    let expiry = saved["expiry_date"].as_u64().unwrap();
    let expected = (now_secs() + 21600) * 1000;
    assert!(expiry.abs_diff(expected) < 60_000, "{expiry} vs {expected}");
    #[cfg(unix)]
    assert_eq!(mode_of(&file), 0o600);
    assert_eq!(
        files(dir.path()),
        ["oauth_creds.json"],
        "no lock or temporary file left"
    );
}

#[tokio::test]
async fn qwen_code_follows_the_sign_in_resource_url() {
    let server =
        MockServer::start(vec![Reply::new(HttpResponse::fixture("openai_chat_text"))]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut creds = credentials("qwen_oauth_creds.json");
    creds["expiry_date"] = json!((now_secs() + 3600) * 1000);
    creds["resource_url"] = json!(server.url());
    let file = write(dir.path(), "oauth_creds.json", &creds);
    // No base_url configured: the file's resource_url (with /v1 added) decides.
    let text = format!(
        "[act]\nprovider = \"qwen-code\"\n[providers.qwen-code]\ncredentials_file = \"{}\"\n",
        file.display()
    );
    let config = ApiConfiguration::from_toml(&text, "t.toml", |_| None).unwrap();
    let h = build_api_handler(&config, Mode::Act).unwrap();
    let items = run(h.as_ref(), &[]).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn qwen_code_refreshes_once_after_a_401() {
    let dir = tempfile::tempdir().unwrap();
    let file = qwen_file(dir.path(), (now_secs() + 3600) * 1000);
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::json(
            401,
            r#"{"error":{"message":"Invalid access token or token expired","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        )),
        token_answer("qwen-forced-access", "qwen-forced-refresh"),
        Reply::new(HttpResponse::fixture("openai_chat_text")),
    ])
    .await;
    let items = run(handler("qwen-code", &file, &server, "").as_ref(), &[]).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let requests = server.requests();
    assert_eq!(
        paths(&requests),
        [
            "/v1/chat/completions",
            "/oauth/token",
            "/v1/chat/completions"
        ]
    );
    assert_eq!(
        requests[2].header("authorization"),
        Some("Bearer qwen-forced-access")
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["access_token"], "qwen-forced-access");
}

#[tokio::test]
async fn qwen_code_refusals_and_missing_files_say_how_to_sign_in() {
    let dir = tempfile::tempdir().unwrap();
    let file = qwen_file(dir.path(), 1000);
    let before = std::fs::read(&file).unwrap();
    let server = MockServer::start(vec![Reply::new(HttpResponse::json(
        400,
        r#"{"error":"invalid_grant","error_description":"Refresh token expired or revoked"}"#,
    ))])
    .await;
    let items = run(handler("qwen-code", &file, &server, "").as_ref(), &[]).await;
    let [Err(e)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(
        e.message
            .contains("invalid_grant: Refresh token expired or revoked"),
        "{e}"
    );
    assert!(e.message.contains("run `qwen`"), "{e}");
    assert!(!e.to_string().contains("qwen-fixture-refresh-token-0001"));
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "a refused refresh changes nothing"
    );
    assert_eq!(files(dir.path()), ["oauth_creds.json"]);

    let missing = dir.path().join("nope.json");
    let items = run(handler("qwen-code", &missing, &server, "").as_ref(), &[]).await;
    let [Err(e)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(
        e.message.contains("no sign-in found at") && e.message.contains("nope.json"),
        "{e}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn qwen_code_takes_over_a_stale_lock() {
    let dir = tempfile::tempdir().unwrap();
    let file = qwen_file(dir.path(), 1000);
    let lock = dir.path().join("oauth_creds.lock");
    let f = std::fs::File::create(&lock).unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(60))
        .unwrap();
    drop(f);
    let server = MockServer::start(vec![
        token_answer("qwen-new-access", "qwen-new-refresh"),
        Reply::new(HttpResponse::fixture("openai_chat_text")),
    ])
    .await;
    let items = run(handler("qwen-code", &file, &server, "").as_ref(), &[]).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(files(dir.path()), ["oauth_creds.json"]);
}

/// A JWT (unsigned; only its claims are read) expiring at `exp`.
fn jwt(exp: u64) -> String {
    let claims = json!({"exp": exp}).to_string();
    let b64 = |bytes: &[u8]| {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b))
                << (8 * (3 - chunk.len()));
            for i in 0..=chunk.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            }
        }
        out
    };
    format!("eyJhbGciOiJub25lIn0.{}.c2ln", b64(claims.as_bytes()))
}

fn codex_file(dir: &Path, access: &str) -> PathBuf {
    let mut auth = credentials("codex_auth.json");
    auth["tokens"]["access_token"] = json!(access);
    write(dir, "auth.json", &auth)
}

fn tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "reads a file".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

#[tokio::test]
async fn openai_codex_sends_the_reference_request_to_the_chatgpt_backend() {
    let dir = tempfile::tempdir().unwrap();
    let access = jwt(now_secs() + 3600);
    let file = codex_file(dir.path(), &access);
    let before = std::fs::read(&file).unwrap();
    for split in [
        Split::Whole,
        Split::Every(1),
        Split::Every(5),
        Split::Every(7),
    ] {
        let server = MockServer::start(vec![
            Reply::new(HttpResponse::fixture("openai_codex_responses")).split(split),
        ])
        .await;
        let h = handler("openai-codex", &file, &server, "");
        assert_eq!(h.get_model().id, "gpt-5.3-codex", "the reference's default");
        let items = run(h.as_ref(), &[tool()]).await;
        assert_eq!(
            text(&items),
            "Use `cargo test` — it builds and runs every test."
        );
        let chunks: Vec<ApiStreamChunk> = items.into_iter().map(Result::unwrap).collect();
        assert!(chunks.iter().any(|c| matches!(c, ApiStreamChunk::Reasoning { reasoning, .. } if reasoning == "**Answering briefly**")));
        let Some(ApiStreamChunk::Usage(u)) = chunks.last() else {
            panic!("{chunks:?}");
        };
        assert_eq!(
            (u.input_tokens, u.cache_read_tokens, u.output_tokens),
            (674, Some(1536), 96)
        );
        assert_eq!(
            u.total_cost_usd,
            Some(0.0),
            "a subscription bills no tokens"
        );

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let req = &requests[0];
        assert_eq!(req.path, "/backend-api/codex/responses");
        assert_eq!(
            req.header("authorization"),
            Some(format!("Bearer {access}").as_str())
        );
        assert_eq!(req.header("chatgpt-account-id"), Some("acct-fixture-0001"));
        assert_eq!(req.header("originator"), Some("switchyard"));
        assert_eq!(req.header("session_id").map(str::len), Some(36));
        assert_eq!(
            req.json(),
            json!({
                "model": "gpt-5.3-codex",
                "instructions": "SYSTEM PROMPT",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "How do I run the tests?"}]}],
                "stream": true,
                "store": false,
                "include": ["reasoning.encrypted_content"],
                "reasoning": {"effort": "medium", "summary": "auto"},
                "tools": [{"type": "function", "name": "read_file", "description": "reads a file",
                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                           "strict": false}],
            })
        );
    }
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the file is untouched"
    );
    // Effort `none`: no reasoning fields.
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "openai_codex_responses",
    ))])
    .await;
    let h = handler(
        "openai-codex",
        &file,
        &server,
        "reasoning_effort = \"none\"",
    );
    let _ = run(h.as_ref(), &[]).await;
    let body = server.requests()[0].json();
    assert!(
        body.get("reasoning").is_none() && body.get("include").is_none(),
        "{body}"
    );
}

#[tokio::test]
async fn openai_codex_refreshes_an_expiring_token_and_writes_auth_json_back() {
    let dir = tempfile::tempdir().unwrap();
    let file = codex_file(dir.path(), &jwt(now_secs() + 60)); // inside the 5-minute margin
    let fresh = jwt(now_secs() + 864_000);
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::json(
            200,
            &json!({"id_token": "new.id.token", "access_token": fresh, "refresh_token": "rt_new"})
                .to_string(),
        )),
        Reply::new(HttpResponse::fixture("openai_codex_responses")),
    ])
    .await;
    let items = run(handler("openai-codex", &file, &server, "").as_ref(), &[]).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/oauth/token");
    assert_eq!(
        requests[0].json(),
        json!({"client_id": "app_EMoamEEZ73f0CkXaXp7hrann", "grant_type": "refresh_token",
               "refresh_token": "rt_fixture-refresh-token-0001", "scope": "openid profile email"})
    );
    assert_eq!(
        requests[1].header("authorization"),
        Some(format!("Bearer {fresh}").as_str())
    );
    let written = std::fs::read_to_string(&file).unwrap();
    let saved: Value = serde_json::from_str(&written).unwrap();
    assert!(
        written.starts_with(
            "{\n  \"OPENAI_API_KEY\": null,\n  \"tokens\": {\n    \"id_token\": \"new.id.token\""
        ),
        "{written}"
    );
    assert_eq!(saved["tokens"]["refresh_token"], "rt_new");
    assert_eq!(saved["tokens"]["account_id"], "acct-fixture-0001");
    let last = saved["last_refresh"].as_str().unwrap();
    assert!(last.ends_with('Z') && last.len() == 27, "{last}");
    #[cfg(unix)]
    assert_eq!(mode_of(&file), 0o600);
    assert_eq!(files(dir.path()), ["auth.json"]);
}

#[tokio::test]
async fn openai_codex_refreshes_once_after_a_401_and_reads_the_account_from_the_id_token() {
    let dir = tempfile::tempdir().unwrap();
    let mut auth = credentials("codex_auth.json");
    auth["tokens"]["access_token"] = json!(jwt(now_secs() + 3600));
    auth["tokens"].as_object_mut().unwrap().remove("account_id");
    let file = write(dir.path(), "auth.json", &auth);
    let fresh = jwt(now_secs() + 864_000);
    let server = MockServer::start(vec![
        Reply::new(HttpResponse::json(
            401,
            r#"{"detail":"Could not parse your authentication token."}"#,
        )),
        Reply::new(HttpResponse::json(
            200,
            &json!({"access_token": fresh}).to_string(),
        )),
        Reply::new(HttpResponse::fixture("openai_codex_responses")),
    ])
    .await;
    let items = run(handler("openai-codex", &file, &server, "").as_ref(), &[]).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let requests = server.requests();
    assert_eq!(
        paths(&requests),
        [
            "/backend-api/codex/responses",
            "/oauth/token",
            "/backend-api/codex/responses"
        ]
    );
    // From the id token's `https://api.openai.com/auth` claim.
    assert_eq!(
        requests[0].header("chatgpt-account-id"),
        Some("acct-fixture-0001")
    );
    assert_eq!(
        requests[2].header("authorization"),
        Some(format!("Bearer {fresh}").as_str())
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        saved["tokens"]["refresh_token"], "rt_fixture-refresh-token-0001",
        "kept when none came back"
    );
}

#[tokio::test]
async fn openai_codex_unusable_sign_ins_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![Reply::new(HttpResponse::json(
        401,
        r#"{"error":{"message":"Your refresh token has already been used to generate a new access token.","type":"invalid_request_error","code":"refresh_token_reused"}}"#,
    ))])
    .await;
    let api_key = write(
        dir.path(),
        "key.json",
        &credentials("codex_auth_api_key.json"),
    );
    let items = run(handler("openai-codex", &api_key, &server, "").as_ref(), &[]).await;
    let [Err(e)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(
        e.message.contains("signed in with an API key") && e.message.contains("openai-native"),
        "{e}"
    );
    assert!(!e.to_string().contains("sk-fixture"));
    assert_eq!(server.request_count(), 0);

    let expired = codex_file(dir.path(), &jwt(now_secs() - 10));
    let items = run(handler("openai-codex", &expired, &server, "").as_ref(), &[]).await;
    let [Err(e)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(e.message.contains("refresh_token_reused"), "{e}");
    assert!(e.message.contains("codex login"), "{e}");
    assert!(!e.to_string().contains("rt_fixture"));

    // An expired token and an empty refresh token (a converted or exported auth.json,
    // zhishile/codex-auth-helper#73): said at once, the token endpoint not asked.
    let asked = server.request_count();
    let mut auth = credentials("codex_auth.json");
    auth["tokens"]["access_token"] = json!(jwt(now_secs() - 10));
    auth["tokens"]["refresh_token"] = json!("");
    let no_refresh = write(dir.path(), "exported.json", &auth);
    let items = run(
        handler("openai-codex", &no_refresh, &server, "").as_ref(),
        &[],
    )
    .await;
    let [Err(e)] = &items[..] else {
        panic!("{items:?}");
    };
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(
        e.message.contains("has no refresh token") && e.message.contains("codex login"),
        "{e}"
    );
    assert_eq!(server.request_count(), asked);
}
