//! Errors in Anthropic's shape and status (SPEC R14.5).

use serde_json::json;
use switchyard_api::{ApiError, ErrorKind};

use super::super::error_response;

fn of(kind: ErrorKind) -> (u16, &'static str) {
    let (status, body) = error_response(&ApiError::new(kind, "m"));
    let kind_name = match body["error"]["type"].as_str().unwrap() {
        "invalid_request_error" => "invalid_request_error",
        "authentication_error" => "authentication_error",
        "permission_error" => "permission_error",
        "not_found_error" => "not_found_error",
        "request_too_large" => "request_too_large",
        "rate_limit_error" => "rate_limit_error",
        "billing_error" => "billing_error",
        "api_error" => "api_error",
        "overloaded_error" => "overloaded_error",
        other => panic!("not an Anthropic error type: {other}"),
    };
    (status, kind_name)
}

#[test]
fn statuses_and_types() {
    let table = [
        (ErrorKind::Overloaded, 529, "overloaded_error"),
        (ErrorKind::RateLimited, 429, "rate_limit_error"),
        (ErrorKind::Auth, 401, "authentication_error"),
        (ErrorKind::Entitlement, 403, "permission_error"),
        (ErrorKind::InvalidRequest, 400, "invalid_request_error"),
        (
            ErrorKind::ContextWindowExceeded,
            400,
            "invalid_request_error",
        ),
        (ErrorKind::ContentBlocked, 400, "invalid_request_error"),
        (ErrorKind::Server, 502, "api_error"),
        (ErrorKind::Network, 502, "api_error"),
        (ErrorKind::Timeout, 504, "api_error"),
        // A 402 is Anthropic's billing_error, never rate_limit_error (BerriAI/litellm#37754).
        (ErrorKind::SpendCap, 402, "billing_error"),
        (ErrorKind::SpendLimit, 402, "billing_error"),
        (ErrorKind::QuotaExceeded, 402, "billing_error"),
    ];
    for (kind, status, kind_name) in table {
        assert_eq!(of(kind), (status, kind_name), "{kind:?}");
    }
}

/// Anthropic's Python and Node SDKs retry 529 `overloaded_error`; a 503 would be an
/// `InternalServerError` to them instead of `OverloadedError`.
#[test]
fn overloaded_is_529_whatever_the_upstream_status() {
    let e = ApiError::new(ErrorKind::Overloaded, "busy").with_status(503);
    let (status, body) = error_response(&e);
    assert_eq!(status, 529);
    assert_eq!(body["error"]["type"], "overloaded_error");
}

/// The gateway's own 404 (unknown route) and 413 (body too large) keep their status and
/// get Anthropic's types for them.
#[test]
fn not_found_and_too_large() {
    let e = ApiError::new(
        ErrorKind::InvalidRequest,
        "no route `gpt-9`; routes: claude-*",
    )
    .with_status(404);
    let (status, body) = error_response(&e);
    assert_eq!(status, 404);
    assert_eq!(body["error"]["type"], "not_found_error");
    let (status, body) =
        error_response(&ApiError::new(ErrorKind::InvalidRequest, "too big").with_status(413));
    assert_eq!(
        (status, body["error"]["type"].as_str()),
        (413, Some("request_too_large"))
    );
}

#[test]
fn body_shape() {
    let mut e = ApiError::new(ErrorKind::RateLimited, "slow down").with_status(429);
    e.provider_id = Some("openai".into());
    let (status, body) = error_response(&e);
    assert_eq!(status, 429);
    assert_eq!(body["type"], "error");
    assert_eq!(body.as_object().unwrap().len(), 2);
    assert_eq!(body["error"].as_object().unwrap().len(), 2);
    let message = body["error"]["message"].as_str().unwrap();
    assert_eq!(message, e.to_string());
    assert!(
        message.starts_with("openai is rate limiting requests"),
        "{message}"
    );
    assert_eq!(
        json!(message).as_str().map(|m| m.contains('\n')),
        Some(false)
    );
}

/// A provider that echoes the key in its error body never gets it to the client, neither
/// in the HTTP error nor in the stream's `event: error` (SPEC R14.10).
#[test]
fn keys_never_reach_the_client() {
    use crate::ingress::StreamEncoder;
    let key = "sk-ant-api03-gateway-messages-test-key-0123456789";
    switchyard_api::secrets::register(key);
    let e = ApiError::new(ErrorKind::Auth, format!("invalid x-api-key {key}")).with_status(401);
    let (status, body) = error_response(&e);
    assert_eq!(status, 401);
    assert!(!body.to_string().contains(key), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("invalid x-api-key")
    );
    let mut enc = super::super::Encoder::new("m", "1");
    let mut out = Vec::new();
    enc.start(&mut out);
    enc.error(&e, &mut out);
    assert!(!String::from_utf8(out).unwrap().contains(key));
}
