//! What Anthropic's stream and whole answer share: the message id, the stop reason, the
//! usage object, and the error and refusal bodies.
//! Spec: R14.1, R14.5, R14.10.

use serde_json::{Value, json};
use switchyard_api::{ApiError, ErrorKind, Usage};

use super::super::encode::{StopReason, http_status};

/// The message id Anthropic clients see: `msg_` and the gateway's request id.
pub(super) fn message_id(id: &str) -> String {
    if id.starts_with("msg_") {
        id.to_owned()
    } else {
        format!("msg_{id}")
    }
}

pub(super) fn stop_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => "end_turn",
        StopReason::ToolUse => "tool_use",
        StopReason::MaxTokens => "max_tokens",
    }
}

/// The stop reason an answer reports: `tool_use` exactly when it holds a tool call, unless
/// the output limit cut it, since agents on the SDKs loop on `stop_reason == "tool_use"`.
pub(super) fn effective_stop(stop: StopReason, has_tool_use: bool) -> StopReason {
    match (stop, has_tool_use) {
        (StopReason::MaxTokens, _) => StopReason::MaxTokens,
        (_, true) => StopReason::ToolUse,
        (_, false) => StopReason::EndTurn,
    }
}

/// The arguments are one whole JSON value.
pub(super) fn is_whole_json(args: &str) -> bool {
    !args.trim().is_empty() && serde_json::from_str::<serde::de::IgnoredAny>(args).is_ok()
}

/// `delta` repeats a call's whole arguments: maximhq/bifrost#5128 sent finished calls again.
pub(super) fn is_repeat(args: &str, delta: &str) -> bool {
    delta.len() == args.len() && delta == args && is_whole_json(args)
}

/// Anthropic's `usage` object. Cache counts a provider did not report are 0, as Anthropic
/// sends them, since the SDKs and Claude Code add the three inputs.
pub(super) fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens.unwrap_or(0),
        "cache_creation_input_tokens": usage.cache_write_tokens.unwrap_or(0),
    })
}

fn error_type(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Auth => "authentication_error",
        ErrorKind::Entitlement => "permission_error",
        ErrorKind::RateLimited => "rate_limit_error",
        // Sent with a 402, whose type Anthropic names `billing_error`; a 402 typed
        // `rate_limit_error` is a pair Anthropic never sends.
        ErrorKind::SpendLimit | ErrorKind::SpendCap | ErrorKind::QuotaExceeded => "billing_error",
        ErrorKind::Overloaded => "overloaded_error",
        ErrorKind::ContextWindowExceeded
        | ErrorKind::InvalidRequest
        | ErrorKind::ContentBlocked => "invalid_request_error",
        ErrorKind::Server
        | ErrorKind::Network
        | ErrorKind::Timeout
        | ErrorKind::Cancelled
        | ErrorKind::Decode => "api_error",
    }
}

/// Anthropic's error `type` for a 404 or 413 the gateway chose itself.
fn error_type_of_status(status: u16, kind: ErrorKind) -> &'static str {
    match status {
        404 => "not_found_error",
        413 => "request_too_large",
        _ => error_type(kind),
    }
}

/// The error body, as both the HTTP response and the stream's `event: error` carry it.
pub(super) fn error_body(error: &ApiError) -> Value {
    let status = error.status.unwrap_or_else(|| http_status(error.kind));
    json!({
        "type": "error",
        "error": {
            "type": error_type_of_status(status, error.kind),
            "message": error.to_string(),
        },
    })
}

/// The HTTP status and body of `error` for an Anthropic client: 529 for an overload, as
/// Anthropic sends it and the SDKs retry it.
/// Spec: R14.5.
pub(crate) fn error_response(error: &ApiError) -> (u16, Value) {
    let status = match (error.kind, error.status) {
        (ErrorKind::Overloaded, _) => 529,
        (_, Some(s @ (404 | 413))) => s,
        (kind, _) => http_status(kind),
    };
    (status, error_body(error))
}

/// The body of a refusal the gateway makes itself, typed as Anthropic types it.
pub(super) fn refusal_body(status: u16, message: &str) -> Value {
    let kind = match status {
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 => "api_error",
        _ => "invalid_request_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

pub(super) fn invalid_request(error: &super::super::request::IngressError) -> (u16, Value) {
    let body = json!({
        "type": "error",
        "error": {"type": "invalid_request_error", "message": error.to_string()},
    });
    (400, body)
}
