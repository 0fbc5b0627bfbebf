//! Vertex AI against the testkit server: the real service-account token exchange (a JWT
//! signed with the key, posted to the credentials' `token_uri` on 127.0.0.1), then the stream
//! of a recorded fixture; Claude models through `streamRawPredict` with the Anthropic body,
//! Gemini models through `streamGenerateContent`; the bearer token sent, the project taken
//! from the settings or the credentials, and token failures as clear errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use serde_json::{Value, json};
use switchyard_api::{
    ApiConfiguration, ApiHandler, ApiStreamChunk, ErrorKind, Message, Mode, RequestOptions,
    build_api_handler,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply, fixture_text};

/// A throwaway RSA key made for this test only (it signs nothing anywhere else).
const TEST_PRIVATE_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCwn6ORI70VKB0T\nlbnJlTF8eJr3YReFRnUggYfFZY2ZAq/ubf5FyAQ8WLjv7CQbu9/C1OJ0vLFTpRuT\nGBmmUsosgG747ecZQx0C+SO1H/WXs30GmIUz5uMC7Frpx7MN8OVlrz5vUNdUqNVz\navih41SgQzOMt01Int4v+x+4+P0q8Q90aSXBrJSuVFpeyCLy3QxHY7q6/s1bFIqK\njtW746us3R53B5G8JAoWDxKNr1SAs1JaKzJhXLyjSN3aU2GD/FumiFVdBllIZnd6\nFFEmmNQXbHnlLEofHHYN6BUzP7aqIDx4nDQbm4xub08sFUPFnqznBCnjjj9Q6yx7\nWLWxASb/AgMBAAECggEAMgJBUcsIsoDVGsJ+BDGV/WQ4nGqFOlsktrt2MdH7MaOt\nJJlIMYHckSmd03DNGH0tcgDMzbjPjJtnH1LnkExIqikDQsA5etGh2UGpdpNB+l37\nvG5a6MMq65z4cND2RbA7g3sG9oWxMmtLZI6ZL10qjOX6JpGP9EvnJTa5WKpHJGz8\nB20NXWuys6o7j5dSk19wJsXFfQw0BoJKPd7UK0Ezgn2QDrVsDXv0DbIlNp/jOvHd\ns5vfxDIAj0ThYT9MuNLtcj+TYnqn92egWOnWu86NHjGV+JqB/FQ4jdVE/20TjZAZ\nTCERFSszy0lOezbBOJxQwi/+SxpHUvdf/Y2Yl+oMgQKBgQDihsGmJKADFW/8kLB8\nV+X6b0kyH5FB26QOUkZkuLmB3+oGPnH7cUnVInSusTWFSvzcLe7FsQNtbGZ7ZLJ9\nlKjPS6eu1b6uJ+JbD2oJjmGR3JOLbU8zRkAkDq5udMrIYJIxRvRLSjhu9p87LlQz\nf5znfqP6c6e+kZ0jJAyJ9ShkEQKBgQDHmrKGQbRTzLJ9kOiMd0nMK8qtpvAmv8Ca\nPOdYGHJqpXpfEu2fhfRl7rdunI6ku+fl2HHL4X5iA8OHEpAykh/5jGtAPlpz2+12\nFW4wVtwi/DsoRWsnMp10BHFLEr/wu/TsSaDiYr0bgJJpr2451gRKbCxOL+8UBFu8\nkRva3jCqDwKBgQCUicSli1KZcw8x0DbJ8mFNbHfUtDptsvbKpUyfcznBXfB5E61u\nMYU2ixd0DaOIuflA76WoYEBdGj3BH/CixD5FX9ienm4giOq2x07C4Wg9WyQswwqy\nFpisjCv5JgBqkFiMk3hRfmOu72zOQ7zW4BElAzfHXNtb7OPbTSIjvGw14QKBgGSf\necvwp4VvNbPTL0hQgmVo1h3AgGQoWmHmvgFNIbDdhtkS47N9hf004EfkqIwnJfpa\nqNNM87dZimI3W3YC8BePUCnsxRCPGCBlIU1BHGyOlwvwItp5y6JG8w4Tf6tONWRA\nodg+SnLo1+ZrR7fkSflymss3ouCGafCffllRlVrFAoGAPr+dnSbw19L4pVG6383s\nmZrzorU5uhJIg62opk1J9cY74JT/yXdKyPZk5DDRgHKbpTFG863AvSMKtciggyV6\ng/0/0pnBA6zYa7d1UBpMKQsraOHe959NXTUuqBXHtfxTqhTo2rF5He4OMP9I8AZe\nb2aIxWbirZ5R+SWqlEjgT/U=\n-----END PRIVATE KEY-----\n";
const CLIENT_EMAIL: &str = "switchyard-test@sy-test-project.iam.gserviceaccount.com";
const ACCESS_TOKEN: &str = "ya29.switchyard-test-access-token";

/// Writes a service-account key JSON whose `token_uri` is the test server.
fn service_account(dir: &tempfile::TempDir, token_uri: &str, project: Option<&str>) -> String {
    let mut key = json!({
        "type": "service_account",
        "private_key_id": "0123456789abcdef",
        "private_key": TEST_PRIVATE_KEY,
        "client_email": CLIENT_EMAIL,
        "client_id": "123456789",
        "token_uri": token_uri,
    });
    if let Some(p) = project {
        key["project_id"] = json!(p);
    }
    let path = dir.path().join("sa.json");
    std::fs::write(&path, key.to_string()).unwrap();
    path.display().to_string()
}

fn token_reply() -> Reply {
    Reply::new(HttpResponse::json(
        200,
        &json!({"access_token": ACCESS_TOKEN, "expires_in": 3599, "token_type": "Bearer"})
            .to_string(),
    ))
}

fn handler(model: &str, providers: &str, env: Vec<(&'static str, String)>) -> Box<dyn ApiHandler> {
    let text = format!(
        "[act]\nprovider = \"vertex\"\nmodel = \"{model}\"\n[providers.vertex]\n{providers}\n"
    );
    let config = ApiConfiguration::from_toml(&text, "test.toml", |k| {
        env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    })
    .unwrap();
    build_api_handler(&config, Mode::Act).unwrap()
}

fn base64url_decode(s: &str) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|c| *c != b'=') {
        let v = alphabet.iter().position(|a| *a == c).unwrap() as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// Checks request 0 is the JWT-bearer token exchange for the cloud-platform scope.
fn check_token_exchange(server: &MockServer, token_uri: &str) {
    let req = &server.requests()[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/token");
    assert_eq!(
        req.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let form = String::from_utf8(req.body.clone()).unwrap();
    let mut grant = None;
    let mut assertion = None;
    for pair in form.split('&') {
        let (k, v) = pair.split_once('=').unwrap();
        match k {
            "grant_type" => grant = Some(v.replace("%3A", ":")),
            "assertion" => assertion = Some(v.to_owned()),
            _ => {}
        }
    }
    assert_eq!(
        grant.as_deref(),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    let jwt = assertion.unwrap();
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3, "{jwt}");
    let header: Value = serde_json::from_slice(&base64url_decode(parts[0])).unwrap();
    assert_eq!(header["alg"], "RS256");
    let claims: Value = serde_json::from_slice(&base64url_decode(parts[1])).unwrap();
    assert_eq!(claims["iss"], CLIENT_EMAIL);
    assert_eq!(claims["aud"], token_uri);
    assert_eq!(
        claims["scope"],
        "https://www.googleapis.com/auth/cloud-platform"
    );
    assert!(!parts[2].is_empty());
}

fn text_of(items: &[Result<ApiStreamChunk, switchyard_api::ApiError>]) -> String {
    items
        .iter()
        .filter_map(|i| match i {
            Ok(ApiStreamChunk::Text { text, .. }) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn claude_on_vertex_exchanges_a_token_then_streams_raw_predict() {
    let server = MockServer::start(vec![
        token_reply(),
        Reply::new(HttpResponse::fixture("anthropic_text")),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let token_uri = format!("{}/token", server.url());
    let sa = service_account(&dir, &token_uri, Some("sa-project"));
    let h = handler(
        "claude-sonnet-4-5@20250929",
        &format!(
            "base_url = \"{}\"\nregion = \"us-east5\"\nproject = \"configured-project\"\ncredentials_file = \"{sa}\"",
            server.url()
        ),
        vec![],
    );
    let items: Vec<_> = h
        .create_message(
            "SYS",
            &[Message::user_text("hi")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(text_of(&items), fixture_text("anthropic_text"));
    assert!(
        items
            .iter()
            .any(|i| matches!(i, Ok(ApiStreamChunk::Usage(_))))
    );

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    check_token_exchange(&server, &token_uri);
    let req = &reqs[1];
    assert_eq!(
        req.path,
        "/v1/projects/configured-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    );
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {ACCESS_TOKEN}").as_str())
    );
    let body = req.json();
    assert!(body.get("model").is_none(), "{body}");
    assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 64000);
    assert_eq!(
        body["system"][0],
        json!({"type": "text", "text": "SYS", "cache_control": {"type": "ephemeral"}})
    );
    assert_eq!(body["messages"][0]["role"], "user");
}

#[tokio::test]
async fn gemini_on_vertex_uses_the_credentials_project_and_the_global_location() {
    let server = MockServer::start(vec![
        token_reply(),
        Reply::new(HttpResponse::fixture("gemini_stream")),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let token_uri = format!("{}/token", server.url());
    let sa = service_account(&dir, &token_uri, Some("sa-project"));
    // The credentials file named by GOOGLE_APPLICATION_CREDENTIALS; no project configured.
    let h = handler(
        "gemini-2.5-flash",
        &format!("base_url = \"{}\"", server.url()),
        vec![("GOOGLE_APPLICATION_CREDENTIALS", sa)],
    );
    for round in 0..2 {
        let items: Vec<_> = h
            .create_message(
                "SYS",
                &[Message::user_text("hi")],
                &[],
                RequestOptions::default(),
            )
            .collect()
            .await;
        assert!(items.iter().all(Result::is_ok), "{items:?}");
        assert_eq!(
            text_of(&items),
            fixture_text("gemini_stream"),
            "round {round}"
        );
    }
    // One token exchange; the token is reused for the second request.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    check_token_exchange(&server, &token_uri);
    for req in &reqs[1..] {
        assert_eq!(
            req.path,
            "/v1/projects/sa-project/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            req.header("authorization"),
            Some(format!("Bearer {ACCESS_TOKEN}").as_str())
        );
        assert_eq!(req.header("x-goog-api-key"), None);
        let body = req.json();
        assert_eq!(
            body["systemInstruction"],
            json!({"parts": [{"text": "SYS"}]})
        );
        assert_eq!(
            body["contents"],
            json!([{"role": "user", "parts": [{"text": "hi"}]}])
        );
        assert_eq!(
            body["generationConfig"]["thinkingConfig"]["includeThoughts"],
            true
        );
    }
}

#[tokio::test]
async fn a_refused_token_exchange_is_an_auth_error_and_nothing_is_streamed() {
    let refused = HttpResponse::json(
        400,
        r#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#,
    );
    let server = MockServer::start(vec![Reply::new(refused)]).await;
    let dir = tempfile::tempdir().unwrap();
    let sa = service_account(&dir, &format!("{}/token", server.url()), Some("p"));
    let h = handler(
        "gemini-2.5-pro",
        &format!(
            "base_url = \"{}\"\ncredentials_file = \"{sa}\"",
            server.url()
        ),
        vec![],
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
    assert_eq!(e.kind, ErrorKind::Auth);
    assert_eq!(e.provider_id.as_deref(), Some("vertex"));
    assert!(e.to_string().contains("access token"), "{e}");
    assert!(!e.to_string().contains("PRIVATE KEY"), "{e}");
    // Only token requests went out (gcp_auth retries the exchange); no stream request.
    assert!(server.requests().iter().all(|r| r.path == "/token"));
}

#[tokio::test]
async fn no_project_anywhere_is_a_clear_error() {
    let server = MockServer::start(vec![token_reply()]).await;
    let dir = tempfile::tempdir().unwrap();
    let sa = service_account(&dir, &format!("{}/token", server.url()), None);
    let h = handler(
        "gemini-2.5-pro",
        &format!(
            "base_url = \"{}\"\ncredentials_file = \"{sa}\"",
            server.url()
        ),
        vec![],
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
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(e.to_string().contains("GOOGLE_CLOUD_PROJECT"), "{e}");
    assert_eq!(server.request_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_is_retried_with_the_same_token() {
    let server = MockServer::start(vec![
        token_reply(),
        Reply::new(HttpResponse::fixture("gemini_429")),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let sa = service_account(&dir, &format!("{}/token", server.url()), Some("p"));
    let h = handler(
        "gemini-2.5-pro",
        &format!(
            "base_url = \"{}\"\ncredentials_file = \"{sa}\"",
            server.url()
        ),
        vec![],
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
    assert_eq!(e.kind, ErrorKind::RateLimited, "{e}");
    assert_eq!(e.provider_id.as_deref(), Some("vertex"));
    let reqs = server.requests();
    // One token exchange, then the provider-level attempts (SPEC R5.1), all with the token.
    assert_eq!(reqs.iter().filter(|r| r.path == "/token").count(), 1);
    let streams: Vec<_> = reqs.iter().filter(|r| r.path != "/token").collect();
    assert_eq!(
        streams.len(),
        switchyard_api::providers::preset("vertex")
            .unwrap()
            .retry
            .max_attempts as usize
    );
    for r in streams {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {ACCESS_TOKEN}").as_str())
        );
    }
}
