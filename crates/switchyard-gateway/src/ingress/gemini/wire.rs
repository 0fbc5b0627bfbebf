//! What Gemini's stream and whole answer share: the response envelope, the finish reason,
//! `usageMetadata`, and Google's error body `{"error": {code, message, status}}`.
//! Spec: R14.12, R14.5.

use serde_json::{Value, json};
use switchyard_api::{ApiError, ErrorKind, Usage};

use super::super::encode::{StopReason, http_status};
use super::super::request::IngressError;

/// One `GenerateContentResponse` of `parts`, with the finish reason and usage of the last.
pub(super) fn response(
    parts: Vec<Value>,
    end: Option<(&str, &Usage)>,
    model: &str,
    id: &str,
) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    let mut out = json!({"candidates": [], "modelVersion": model, "responseId": id});
    if let Some((reason, usage)) = end {
        candidate["finishReason"] = json!(reason);
        out["usageMetadata"] = usage_metadata(usage);
    }
    out["candidates"] = json!([candidate]);
    out
}

/// The finish reason: a tool call's answer ends `STOP`, as Gemini's do; a call whose arguments
/// were no JSON object makes it `MALFORMED_FUNCTION_CALL`, on which Gemini CLI asks again.
pub(super) fn finish_reason(stop: StopReason, malformed: bool) -> &'static str {
    match (stop, malformed) {
        (_, true) => "MALFORMED_FUNCTION_CALL",
        (StopReason::MaxTokens, false) => "MAX_TOKENS",
        (StopReason::EndTurn | StopReason::ToolUse, false) => "STOP",
    }
}

/// Google's `usageMetadata`: the prompt counts cache reads and writes, the candidates leave
/// the thoughts out, and counts that are 0 are left out as Google leaves them.
pub(super) fn usage_metadata(u: &Usage) -> Value {
    let cached = u.cache_read_tokens.unwrap_or(0);
    let prompt = u.input_tokens + cached + u.cache_write_tokens.unwrap_or(0);
    let thoughts = u.thoughts_tokens.unwrap_or(0).min(u.output_tokens);
    let mut out = json!({
        "promptTokenCount": prompt,
        "candidatesTokenCount": u.output_tokens - thoughts,
        "totalTokenCount": prompt + u.output_tokens,
    });
    if cached > 0 {
        out["cachedContentTokenCount"] = json!(cached);
    }
    if thoughts > 0 {
        out["thoughtsTokenCount"] = json!(thoughts);
    }
    out
}

/// Google's status name of an HTTP status.
fn status_name(code: u16) -> &'static str {
    match code {
        401 => "UNAUTHENTICATED",
        402 | 429 => "RESOURCE_EXHAUSTED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        502 | 503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        500..=599 => "INTERNAL",
        _ => "INVALID_ARGUMENT",
    }
}

/// Google's status name of a failure of `kind` answered with `code`.
fn kind_status(kind: ErrorKind, code: u16) -> &'static str {
    match kind {
        ErrorKind::Server | ErrorKind::Decode => "INTERNAL",
        _ => status_name(code),
    }
}

/// The HTTP status and body of `error`; a 404 or 413 the gateway chose itself keeps its status.
/// A wait the provider asked for goes in `RetryInfo`, which Gemini CLI times its retry by.
pub(crate) fn error_response(error: &ApiError) -> (u16, Value) {
    let code = match (error.kind, error.status) {
        (ErrorKind::InvalidRequest, Some(s @ (404 | 413))) => s,
        (kind, _) => http_status(kind),
    };
    // `Display` would blame "the provider" for the gateway's own 404 and 413.
    let message = match (error.kind, error.status, &error.provider_id) {
        (ErrorKind::InvalidRequest, Some(404 | 413), None) => {
            switchyard_api::secrets::scrub(&error.message).into_owned()
        }
        _ => error.to_string(),
    };
    let mut body = json!({"error": {
        "code": code,
        "message": message,
        "status": kind_status(error.kind, code),
    }});
    if let Some(wait) = error.retry_after {
        let delay = format!("{}s", wait.as_secs().max(1));
        body["error"]["details"] = json!([{
            "@type": "type.googleapis.com/google.rpc.RetryInfo",
            "retryDelay": delay,
        }]);
    }
    (code, body)
}

/// The body of a refusal the gateway makes itself.
pub(super) fn refusal_body(status: u16, message: &str) -> Value {
    json!({"error": {"code": status, "message": message, "status": status_name(status)}})
}

/// The 400 of a body the gateway cannot read, the field named as Google names it, in a
/// `BadRequest`'s field violation.
pub(super) fn invalid_request(error: &IngressError) -> (u16, Value) {
    let body = json!({"error": {
        "code": 400,
        "message": error.to_string(),
        "status": "INVALID_ARGUMENT",
        "details": [{
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": error.field, "description": error.message}],
        }],
    }});
    (400, body)
}
