//! Bedrock's request side against the testkit server (SPEC R4.0, R4.8): the SigV4 signature
//! checked by an independent computation and against AWS's published test vector, the
//! Converse body field by field, cross-region model ids, Bedrock API keys, and HTTP errors
//! mapped to error kinds without ever showing a secret.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchyard_api::message::ImageSource;
use switchyard_api::{
    ApiConfiguration, ApiHandler, ApiStreamChunk, ContentBlock, ErrorKind, Message, Mode,
    RequestOptions, Role, ToolSpec, build_api_handler,
};
use switchyard_testkit::{HttpResponse, MockServer, Reply};

const AKID: &str = "AKIDSWITCHYARDTEST01";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYSWITCHYARD";
/// A frame that fails its CRC ends the stream with a `Decode` error, after every chunk of the
/// frames before it, including those that arrived in the same read: the transport hands each
/// decoded item to the mapping as it is completed (issue 17, `Framing::feed_each`).
#[tokio::test]
async fn chunks_before_a_damaged_frame_come_out_before_the_error() {
    let mut response = HttpResponse::fixture("bedrock_converse_stream");
    // The last byte of the body is the last frame's message CRC.
    *response.body.last_mut().unwrap() ^= 0xff;
    let server = MockServer::start(vec![Reply::new(response)]).await;
    const ENV: &[(&str, &str)] = &[
        ("AWS_BEARER_TOKEN_BEDROCK", BEARER),
        ("AWS_DEFAULT_REGION", "us-east-2"),
    ];
    let c = config("", "", &server.url(), ENV);
    let items: Vec<_> = handler(&c)
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    let (last, before) = items.split_last().unwrap();
    let err = last.as_ref().unwrap_err();
    assert_eq!(err.kind, ErrorKind::Decode, "{err}");
    assert!(before.iter().all(Result::is_ok), "{items:?}");
    let text: String = before
        .iter()
        .filter_map(|i| match i {
            Ok(ApiStreamChunk::Text { text, .. }) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Let me look up the weather in Seattle — one moment.");
}

const SESSION: &str = "IQoJb3JpZ2luX2VjEXAMPLEsessionTOKEN//////////wEaCXVzLWVhc3QtMSJHMEUCIQ";
const BEARER: &str = "ABSKQmVkcm9ja0FQSUtleS1zd2l0Y2h5YXJkLXRlc3Q=";

fn config(
    extra_provider: &str,
    act: &str,
    base_url: &str,
    env: &'static [(&'static str, &'static str)],
) -> ApiConfiguration {
    let text = format!(
        "[act]\nprovider = \"bedrock\"\n{act}\n[providers.bedrock]\nbase_url = \"{base_url}\"\n{extra_provider}\n"
    );
    ApiConfiguration::from_toml(&text, "test.toml", |k| {
        env.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| (*v).to_owned())
    })
    .unwrap()
}

fn handler(config: &ApiConfiguration) -> Box<dyn ApiHandler> {
    build_api_handler(config, Mode::Act).unwrap()
}

const STATIC_WITH_SESSION: &[(&str, &str)] = &[
    ("AWS_ACCESS_KEY_ID", AKID),
    ("AWS_SECRET_ACCESS_KEY", SECRET),
    ("AWS_SESSION_TOKEN", SESSION),
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = Hmac::<Sha256>::new_from_slice(key).unwrap();
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

/// RFC 3986 encoding as SigV4 defines it (`/` kept in paths).
fn uri_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// An independent SigV4 signature (AWS "Create a signed AWS API request"): canonical request
/// with the path encoded once more (every service but S3), the listed headers, the body hash;
/// string to sign; the derived key chain.
#[allow(clippy::too_many_arguments)]
fn sigv4(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    signed: &str,
    body: &[u8],
    amz_date: &str,
    region: &str,
    service: &str,
    secret: &str,
) -> String {
    let canonical_headers: String = signed
        .split(';')
        .map(|name| {
            let value = headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim())
                .unwrap_or_else(|| panic!("signed header {name} was not sent"));
            format!("{name}:{value}\n")
        })
        .collect();
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let creq = format!(
        "{method}\n{}\n{query}\n{canonical_headers}\n{signed}\n{}",
        uri_encode(path),
        hex(&Sha256::digest(body))
    );
    let date = &amz_date[..8];
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let sts = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(&Sha256::digest(creq.as_bytes()))
    );
    let k = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k = hmac(&k, region.as_bytes());
    let k = hmac(&k, service.as_bytes());
    let k = hmac(&k, b"aws4_request");
    hex(&hmac(&k, sts.as_bytes()))
}

/// `(credential, signed_headers, signature)` of an `AWS4-HMAC-SHA256` authorization header.
fn parse_authorization(value: &str) -> (String, String, String) {
    let rest = value
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .unwrap_or_else(|| panic!("not SigV4: {value}"));
    let parts: Vec<&str> = rest.split(", ").collect();
    assert_eq!(parts.len(), 3, "{value}");
    let field = |i: usize, name: &str| {
        parts[i]
            .strip_prefix(&format!("{name}="))
            .unwrap_or_else(|| panic!("{name} missing in {value}"))
            .to_owned()
    };
    (
        field(0, "Credential"),
        field(1, "SignedHeaders"),
        field(2, "Signature"),
    )
}

#[test]
fn the_independent_signer_matches_the_aws_sigv4_test_suite_get_vanilla() {
    // aws-sig-v4-test-suite `get-vanilla`: AKIDEXAMPLE, 2015-08-30T12:36:00Z, us-east-1,
    // service "service", `GET /` to example.amazonaws.com.
    // The same vector as the signer's unit test (auth/aws.rs): this independent
    // implementation, which checks the signatures below, agrees with it.
    assert_eq!(
        sigv4(
            "GET",
            "/",
            &[
                ("host", "example.amazonaws.com"),
                ("x-amz-date", "20150830T123600Z")
            ],
            "host;x-amz-date",
            b"",
            "20150830T123600Z",
            "us-east-1",
            "service",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        ),
        "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    );
}

#[tokio::test]
async fn converse_stream_request_is_signed_and_shaped() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "bedrock_converse_stream",
    ))])
    .await;
    let c = config(
        "region = \"eu-west-1\"\nuse_cross_region_inference = true",
        "model = \"anthropic.claude-sonnet-4-5-20250929-v1:0\"\nthinking_budget_tokens = 4096",
        &server.url(),
        STATIC_WITH_SESSION,
    );
    let h = handler(&c);
    let tools = [ToolSpec {
        name: "get_weather".into(),
        description: "Weather for a city".into(),
        input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }];
    let messages = [
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::Text {
                    text: "Weather in Seattle?".into(),
                },
                ContentBlock::Image {
                    source: ImageSource {
                        kind: "base64".into(),
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    },
                },
            ],
        },
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "Need the tool.".into(),
                    signature: "c2lnbmF0dXJl".into(),
                },
                ContentBlock::RedactedThinking {
                    data: "cmVkYWN0ZWQ=".into(),
                },
                ContentBlock::Text { text: "".into() },
                ContentBlock::ToolUse {
                    id: "tooluse_1".into(),
                    name: "get_weather".into(),
                    input: json!({"city": "Seattle"}),
                    signature: None,
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "tooluse_1".into(),
                content: "rain".into(),
                is_error: true,
            }],
        },
    ];
    let items: Vec<_> = h
        .create_message("SYS", &messages, &tools, RequestOptions::default())
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert!(
        items.iter().any(
            |i| matches!(i, Ok(ApiStreamChunk::ToolCalls { name, .. }) if name == "get_weather")
        )
    );

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let req = &reqs[0];
    assert_eq!(req.method, "POST");
    // Cross-region prefix by region (SPEC R4.8); the model id percent-encoded.
    assert_eq!(
        req.path,
        "/model/eu.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(
        req.header("accept"),
        Some("application/vnd.amazon.eventstream")
    );
    assert_eq!(req.header("x-amz-security-token"), Some(SESSION));
    let amz_date = req.header("x-amz-date").unwrap();
    assert_eq!(amz_date.len(), 16, "{amz_date}");
    assert!(amz_date.ends_with('Z') && amz_date.as_bytes()[8] == b'T');
    let (credential, signed, signature) = parse_authorization(req.header("authorization").unwrap());
    assert_eq!(
        credential,
        format!("{AKID}/{}/eu-west-1/bedrock/aws4_request", &amz_date[..8])
    );
    assert_eq!(
        signed,
        "accept;content-type;host;x-amz-date;x-amz-security-token"
    );
    assert_eq!(signature.len(), 64);
    let headers: Vec<(&str, &str)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        signature,
        sigv4(
            "POST",
            &req.path,
            &headers,
            &signed,
            &req.body,
            amz_date,
            "eu-west-1",
            "bedrock",
            SECRET
        ),
        "the signature on the wire must verify"
    );

    // The Converse body, field by field.
    let body = req.json();
    assert_eq!(
        body["system"],
        json!([{"text": "SYS"}, {"cachePoint": {"type": "default"}}])
    );
    // Thinking on: no temperature; the budget in additionalModelRequestFields.
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": 64000}));
    assert_eq!(
        body["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": 4096}})
    );
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(
        msgs[0],
        json!({"role": "user", "content": [
            {"text": "Weather in Seattle?"},
            {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}},
            {"cachePoint": {"type": "default"}},
        ]})
    );
    assert_eq!(
        msgs[1],
        json!({"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "Need the tool.", "signature": "c2lnbmF0dXJl"}}},
            {"reasoningContent": {"redactedContent": "cmVkYWN0ZWQ="}},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Seattle"}}},
        ]})
    );
    assert_eq!(
        msgs[2],
        json!({"role": "user", "content": [
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "rain"}], "status": "error"}},
            {"cachePoint": {"type": "default"}},
        ]})
    );
    assert_eq!(
        body["toolConfig"],
        json!({"tools": [{"toolSpec": {
            "name": "get_weather",
            "description": "Weather for a city",
            "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
        }}], "toolChoice": {"auto": {}}})
    );
}

#[tokio::test]
async fn without_session_token_and_with_a_profile_id() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "bedrock_converse_stream",
    ))])
    .await;
    const STATIC: &[(&str, &str)] = &[
        ("AWS_ACCESS_KEY_ID", AKID),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_REGION", "ap-northeast-1"),
    ];
    // An id that is already an inference profile is sent as given and keeps its model info.
    let c = config(
        "use_cross_region_inference = true",
        "model = \"apac.amazon.nova-pro-v1:0\"",
        &server.url(),
        STATIC,
    );
    let h = handler(&c);
    assert_eq!(h.get_model().info.context_window, 300_000);
    let _: Vec<_> = h
        .create_message(
            "SYS",
            &[Message::user_text("hi")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/model/apac.amazon.nova-pro-v1%3A0/converse-stream"
    );
    assert_eq!(req.header("x-amz-security-token"), None);
    let (credential, signed, _) = parse_authorization(req.header("authorization").unwrap());
    assert!(
        credential.ends_with("/ap-northeast-1/bedrock/aws4_request"),
        "{credential}"
    );
    assert_eq!(signed, "accept;content-type;host;x-amz-date");
    let body = req.json();
    // Nova Pro: its own max output; no thinking, so temperature 0.
    assert_eq!(
        body["inferenceConfig"],
        json!({"maxTokens": 5000, "temperature": 0.0})
    );
    assert!(body.get("additionalModelRequestFields").is_none());
    assert!(body.get("toolConfig").is_none());
}

#[tokio::test]
async fn a_bedrock_api_key_is_sent_as_a_bearer_token() {
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "bedrock_converse_stream",
    ))])
    .await;
    const ENV: &[(&str, &str)] = &[
        ("AWS_BEARER_TOKEN_BEDROCK", BEARER),
        ("AWS_DEFAULT_REGION", "us-east-2"),
    ];
    let c = config("", "", &server.url(), ENV);
    let h = handler(&c);
    let items: Vec<_> = h
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let req = &server.requests()[0];
    // The default model (the reference's), no cross-region prefix unless asked for.
    assert_eq!(req.path, "/model/anthropic.claude-sonnet-5/converse-stream");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {BEARER}").as_str())
    );
    assert_eq!(req.header("x-amz-date"), None);
}

#[tokio::test(start_paused = true)]
async fn http_errors_map_to_kinds_and_never_show_secrets() {
    for (case, kind, requests) in [
        ("C15", ErrorKind::ContextWindowExceeded, 1),
        ("C17", ErrorKind::Auth, 1),
        ("C16", ErrorKind::RateLimited, 3),
    ] {
        let server = MockServer::start(vec![Reply::new(HttpResponse::case(case))]).await;
        let c = config(
            "region = \"us-east-1\"",
            "",
            &server.url(),
            STATIC_WITH_SESSION,
        );
        let items: Vec<_> = handler(&c)
            .create_message(
                "s",
                &[Message::user_text("x")],
                &[],
                RequestOptions::default(),
            )
            .collect()
            .await;
        let [Err(e)] = items.as_slice() else {
            panic!("{case}: {items:?}")
        };
        assert_eq!(e.kind, kind, "{case}: {e}");
        assert_eq!(server.request_count(), requests, "{case}");
        assert_eq!(e.provider_id.as_deref(), Some("bedrock"));
        let shown = format!("{e} {e:?} {}", serde_json::to_string(e).unwrap());
        for secret in [SECRET, SESSION] {
            assert!(!shown.contains(secret), "{case}: {shown}");
        }
    }
}

#[test]
fn secrets_never_show_in_the_resolved_configuration() {
    let c = config(
        "region = \"us-east-1\"",
        "",
        "http://127.0.0.1:1",
        STATIC_WITH_SESSION,
    );
    let r = switchyard_api::resolve_mode(&c, Mode::Act).unwrap();
    let shown = format!("{c:?} {r:?}");
    assert!(r.cloud.aws_access_key_id.is_some());
    for secret in [SECRET, SESSION, AKID] {
        assert!(!shown.contains(secret), "{shown}");
    }
    let _ = Value::Null;
}

#[tokio::test]
async fn the_aws_credential_chain_reads_the_profile_files() {
    // No keys in the environment: aws-config's default chain finds the profile `test` in the
    // files AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE name, with its region and keys.
    let dir = tempfile::tempdir().unwrap();
    let config_file = dir.path().join("config");
    let credentials_file = dir.path().join("credentials");
    std::fs::write(&config_file, "[profile test]\nregion = ca-central-1\n").unwrap();
    std::fs::write(
        &credentials_file,
        "[default]\naws_access_key_id = AKIDWRONGPROFILE0000\naws_secret_access_key = wrong\n\n[test]\naws_access_key_id = AKIDPROFILETEST00001\naws_secret_access_key = profileSecretKey/Switchyard+Test0000000\n",
    )
    .unwrap();
    let server = MockServer::start(vec![Reply::new(HttpResponse::fixture(
        "bedrock_converse_stream",
    ))])
    .await;
    let text = format!(
        "[act]\nprovider = \"bedrock\"\n[providers.bedrock]\nbase_url = \"{}\"\nprofile = \"test\"\n",
        server.url()
    );
    let (cf, cr) = (
        config_file.display().to_string(),
        credentials_file.display().to_string(),
    );
    let c = ApiConfiguration::from_toml(&text, "test.toml", |k| match k {
        "AWS_CONFIG_FILE" => Some(cf.clone()),
        "AWS_SHARED_CREDENTIALS_FILE" => Some(cr.clone()),
        _ => None,
    })
    .unwrap();
    let items: Vec<_> = handler(&c)
        .create_message(
            "s",
            &[Message::user_text("x")],
            &[],
            RequestOptions::default(),
        )
        .collect()
        .await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let req = &server.requests()[0];
    let amz_date = req.header("x-amz-date").unwrap();
    let (credential, signed, signature) = parse_authorization(req.header("authorization").unwrap());
    assert_eq!(
        credential,
        format!(
            "AKIDPROFILETEST00001/{}/ca-central-1/bedrock/aws4_request",
            &amz_date[..8]
        )
    );
    let headers: Vec<(&str, &str)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        signature,
        sigv4(
            "POST",
            &req.path,
            &headers,
            &signed,
            &req.body,
            amz_date,
            "ca-central-1",
            "bedrock",
            "profileSecretKey/Switchyard+Test0000000"
        )
    );
}
