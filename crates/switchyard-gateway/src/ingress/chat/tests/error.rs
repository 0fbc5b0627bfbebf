//! Errors in OpenAI's shape and status.

use std::time::Duration;

use serde_json::json;
use switchyard_api::{ApiError, ErrorKind};

use super::super::super::request::IngressError;
use super::super::{error_response, invalid_request_response};

#[test]
fn every_kind_has_openais_status_type_and_code() {
    let cases = [
        (
            ErrorKind::Auth,
            401,
            "authentication_error",
            "invalid_api_key",
        ),
        (
            ErrorKind::Entitlement,
            403,
            "permission_error",
            "permission_denied",
        ),
        (
            ErrorKind::SpendLimit,
            402,
            "insufficient_quota",
            "budget_exceeded",
        ),
        (
            ErrorKind::SpendCap,
            402,
            "insufficient_quota",
            "budget_exceeded",
        ),
        (
            ErrorKind::QuotaExceeded,
            402,
            "insufficient_quota",
            "insufficient_quota",
        ),
        (
            ErrorKind::RateLimited,
            429,
            "rate_limit_error",
            "rate_limit_exceeded",
        ),
        (ErrorKind::Overloaded, 503, "server_error", "overloaded"),
        (
            ErrorKind::ContextWindowExceeded,
            400,
            "invalid_request_error",
            "context_length_exceeded",
        ),
        (
            ErrorKind::InvalidRequest,
            400,
            "invalid_request_error",
            "invalid_request",
        ),
        (
            ErrorKind::ContentBlocked,
            400,
            "invalid_request_error",
            "content_filter",
        ),
        (ErrorKind::Server, 502, "server_error", "upstream_error"),
        (ErrorKind::Network, 502, "server_error", "upstream_error"),
        (ErrorKind::Decode, 502, "server_error", "upstream_error"),
        (ErrorKind::Timeout, 504, "server_error", "timeout"),
        (ErrorKind::Cancelled, 499, "server_error", "cancelled"),
    ];
    for (kind, status, kind_name, code) in cases {
        let (got, body) = error_response(&ApiError::new(kind, "x"));
        assert_eq!(got, status, "{kind:?}");
        assert_eq!(body["error"]["type"], kind_name, "{kind:?}");
        assert_eq!(body["error"]["code"], code, "{kind:?}");
        assert!(body["error"]["param"].is_null());
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
        assert_eq!(body.as_object().unwrap().len(), 1, "only `error`");
    }
}

#[test]
fn the_gateways_own_not_found_and_too_large_keep_their_status() {
    let not_found = ApiError::new(
        ErrorKind::InvalidRequest,
        "no route `gpt-9`; routes: fast, smart",
    )
    .with_status(404);
    let (status, body) = error_response(&not_found);
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "model_not_found");
    assert_eq!(
        body["error"]["message"], "no route `gpt-9`; routes: fast, smart",
        "the gateway's own sentence, not \"the provider rejected\""
    );
    let mut upstream = ApiError::new(ErrorKind::InvalidRequest, "model not found").with_status(404);
    upstream.provider_id = Some("openai".into());
    let (status, body) = error_response(&upstream);
    assert_eq!(status, 404);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("openai rejected the request (HTTP 404)"),
        "{message}"
    );
    let (status, body) =
        error_response(&ApiError::new(ErrorKind::InvalidRequest, "too big").with_status(413));
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (413, json!("request_too_large"))
    );
    let (status, _) =
        error_response(&ApiError::new(ErrorKind::InvalidRequest, "bad").with_status(422));
    assert_eq!(status, 400);
}

#[test]
fn the_message_is_switchyards_sentence_and_never_a_key() {
    let key = "sk-proj-chat-test-4b1f9e0c7d2a";
    switchyard_api::secrets::register(key);
    let mut error = ApiError::new(
        ErrorKind::Auth,
        format!("Incorrect API key provided: {key}"),
    );
    error.status = Some(401);
    error.provider_id = Some("openai".into());
    error.retry_after = Some(Duration::from_secs(3));
    let (status, body) = error_response(&error);
    assert_eq!(status, 401);
    let text = body.to_string();
    assert!(!text.contains(key), "{text}");
    assert!(
        text.contains("openai rejected the credentials (HTTP 401)"),
        "{text}"
    );
}

#[test]
fn a_malformed_body_is_a_400_naming_the_field_as_param() {
    let (status, body) = invalid_request_response(&IngressError::new(
        "messages[0].role",
        "is required and missing.",
    ));
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"error": {
            "message": "`messages[0].role`: is required and missing.",
            "type": "invalid_request_error", "param": "messages[0].role", "code": "invalid_request"
        }})
    );
}

#[test]
fn the_streams_error_event_is_the_response_body() {
    use super::super::super::encode::StreamEncoder;
    let error = ApiError::new(ErrorKind::Overloaded, "busy");
    let mut out = Vec::new();
    super::super::Encoder::new("m", "r").error(&error, &mut out);
    let events = super::events(&out);
    assert_eq!(events, vec![error_response(&error).1]);
}
