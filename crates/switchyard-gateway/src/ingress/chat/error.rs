//! A failure in OpenAI's shape, for Chat Completions and Responses clients. `type` and `code`
//! use OpenAI's own values where one exists, because clients act on them: Cline and aider
//! shrink the conversation on `context_length_exceeded`, the SDKs retry 429 and 5xx.
//! Spec: R14.5.

use serde_json::{Value, json};
use switchyard_api::{ApiError, ErrorKind};

use super::super::encode::http_status;
use super::super::request::IngressError;

/// The HTTP status and body of `error`; a 404 or 413 the gateway chose itself keeps its status.
pub(crate) fn error_response(error: &ApiError) -> (u16, Value) {
    let status = match (error.kind, error.status) {
        (ErrorKind::InvalidRequest, Some(s @ (404 | 413))) => s,
        (kind, _) => http_status(kind),
    };
    (status, error_body(error))
}

/// The 400 of a body the gateway cannot read, `param` naming the field as OpenAI does.
pub(crate) fn invalid_request_response(error: &IngressError) -> (u16, Value) {
    let body = json!({"error": {
        "message": error.to_string(),
        "type": "invalid_request_error",
        "param": error.field,
        "code": "invalid_request",
    }});
    (400, body)
}

/// The body of an error response, also the data of a stream's in-band error event.
pub(super) fn error_body(error: &ApiError) -> Value {
    let (kind, code) = type_and_code(error);
    json!({"error": {
        "message": message(error),
        "type": kind,
        "param": Value::Null,
        "code": code,
    }})
}

/// The sentence of `error`: its `Display`, except for the gateway's own 404 and 413, where
/// `Display` would blame "the provider".
fn message(error: &ApiError) -> String {
    match (error.kind, error.status, &error.provider_id) {
        (ErrorKind::InvalidRequest, Some(404 | 413), None) => {
            switchyard_api::secrets::scrub(&error.message).into_owned()
        }
        _ => error.to_string(),
    }
}

fn type_and_code(error: &ApiError) -> (&'static str, &'static str) {
    match error.kind {
        ErrorKind::Auth => ("authentication_error", "invalid_api_key"),
        ErrorKind::Entitlement => ("permission_error", "permission_denied"),
        ErrorKind::SpendLimit | ErrorKind::SpendCap => ("insufficient_quota", "budget_exceeded"),
        ErrorKind::QuotaExceeded => ("insufficient_quota", "insufficient_quota"),
        ErrorKind::RateLimited => ("rate_limit_error", "rate_limit_exceeded"),
        ErrorKind::Overloaded => ("server_error", "overloaded"),
        ErrorKind::ContextWindowExceeded => ("invalid_request_error", "context_length_exceeded"),
        ErrorKind::InvalidRequest => match error.status {
            Some(404) => ("invalid_request_error", "model_not_found"),
            Some(413) => ("invalid_request_error", "request_too_large"),
            _ => ("invalid_request_error", "invalid_request"),
        },
        ErrorKind::ContentBlocked => ("invalid_request_error", "content_filter"),
        ErrorKind::Timeout => ("server_error", "timeout"),
        ErrorKind::Cancelled => ("server_error", "cancelled"),
        ErrorKind::Server | ErrorKind::Network | ErrorKind::Decode => {
            ("server_error", "upstream_error")
        }
    }
}

/// The body of a refusal the gateway makes itself, typed and coded as OpenAI does.
pub(crate) fn refusal_body(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        401 => ("authentication_error", "invalid_api_key"),
        402 => ("insufficient_quota", "budget_exceeded"),
        403 => ("permission_error", "permission_denied"),
        404 => ("invalid_request_error", "model_not_found"),
        413 => ("invalid_request_error", "request_too_large"),
        429 => ("rate_limit_error", "rate_limit_exceeded"),
        503 => ("server_error", "unavailable"),
        _ => ("invalid_request_error", ""),
    };
    let code = Some(code)
        .filter(|c| !c.is_empty())
        .map_or(Value::Null, Value::from);
    json!({"error": {
        "message": message,
        "type": kind,
        "param": Value::Null,
        "code": code,
    }})
}

/// The body of a 404 for a path the gateway does not serve, as OpenAI words its own.
pub(crate) fn no_endpoint_body(message: &str) -> Value {
    json!({"error": {
        "message": message,
        "type": "invalid_request_error",
        "param": Value::Null,
        "code": "unknown_url",
    }})
}
