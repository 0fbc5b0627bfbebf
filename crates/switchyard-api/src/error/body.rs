//! Error bodies: the provider's own error in a failed response, as a classified [`ApiError`].
//! Spec: R4.0, R7, R7.4.

use std::time::SystemTime;

use reqwest::header::HeaderMap;

use super::{ApiError, ErrorKind};

pub(crate) fn request_id(headers: &HeaderMap) -> Option<String> {
    [
        "request-id",
        "x-request-id",
        "x-amzn-requestid",
        "x-ds-trace-id",
    ]
    .iter()
    .find_map(|h| headers.get(*h)?.to_str().ok().map(str::to_owned))
}

/// Turns a non-stream response into an error: the provider's JSON error when there is one,
/// else a sentence naming the status and content type. An HTML page is never dumped.
pub(crate) fn error_from_body(
    status: u16,
    content_type: &str,
    body: &[u8],
    headers: &HeaderMap,
    expected: &str,
) -> ApiError {
    let now = SystemTime::now();
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    // AWS names the error type in the `x-amzn-ErrorType` header, the code when the body has none.
    let aws_type = headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(':').next().unwrap_or(v).trim().to_owned())
        .filter(|v| !v.is_empty());
    // Hints: headers, then Gemini's RetryInfo, then the message below.
    let retry_after = crate::retry_after::retry_after_from_headers(headers, now).or_else(|| {
        json.as_ref()
            .and_then(crate::retry_after::retry_delay_from_body)
    });
    if let Some((code, message)) = json.as_ref().and_then(provider_error_fields) {
        let http_status = (status != 200).then_some(status);
        // Reset times in the message count from the response's Date, like the headers'.
        let retry_after = retry_after.or_else(|| {
            crate::retry_after::retry_after_from_message(
                &message,
                crate::retry_after::response_clock(headers, now),
            )
        });
        let code = code.or_else(|| aws_type.clone());
        let mut err = ApiError::from_provider(http_status, code.as_deref(), &message, retry_after);
        err.status = Some(status);
        return err;
    }
    let ct = if content_type.is_empty() {
        "no content type"
    } else {
        content_type
    };
    if (200..300).contains(&status) {
        // A web page, a captive portal or a proxy's login page: waiting cannot fix it.
        return ApiError::decode(format!(
            "expected a {expected} stream but the server answered HTTP {status} with {ct}; check the base URL points at the provider's API"
        ))
        .with_status(status)
        .permanent();
    }
    let mut err = ApiError::from_provider(
        Some(status),
        aws_type.as_deref(),
        &format!("the response was {ct} (body not shown)"),
        retry_after,
    );
    if json.is_none() && !content_type.contains("json") && err.kind == ErrorKind::InvalidRequest {
        // A 4xx HTML page usually means a wrong base URL: a proxy or website answered.
        err.message = format!(
            "the response was {ct} (body not shown); check the base URL points at the provider's API"
        );
    }
    err
}

/// Extracts `(code, message)` from the error shapes providers use.
pub(crate) fn provider_error_fields(v: &serde_json::Value) -> Option<(Option<String>, String)> {
    let as_code = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    // Gemini's streamGenerateContent without `alt=sse` wraps the error in a one-element array.
    if let Some(first) = v.as_array().and_then(|items| items.first()) {
        return provider_error_fields(first);
    }
    match v.get("error") {
        Some(serde_json::Value::String(s)) => Some((None, s.clone())),
        Some(e @ serde_json::Value::Object(_)) => {
            let mut message = e
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or("")
                .to_owned();
            // OpenRouter passes the upstream's own error in `metadata.raw`: keep its start, so
            // that "prompt is too long" behind "Provider returned error" is still classified.
            if let Some(raw) = e.pointer("/metadata/raw").and_then(|r| r.as_str()) {
                let inner = serde_json::from_str::<serde_json::Value>(raw.trim())
                    .ok()
                    .as_ref()
                    .and_then(provider_error_fields)
                    .map(|(_, m)| m);
                let raw = inner.as_deref().unwrap_or(raw).trim();
                if !raw.is_empty() && !raw.starts_with('<') && !message.contains(raw) {
                    let raw: String = raw.chars().take(300).collect();
                    message = format!("{message} (upstream: {raw})");
                }
            }
            // Prefer the specific code, such as `insufficient_quota`, to the generic type.
            let code = e
                .get("code")
                .and_then(|c| as_code(c).filter(|c| c.parse::<u16>().is_err()))
                .or_else(|| e.get("status").and_then(as_code))
                .or_else(|| e.get("type").and_then(as_code))
                .or_else(|| e.get("code").and_then(as_code));
            Some((code, message))
        }
        _ => {
            // AWS errors: `message` or `Message`, the type in `__type`; FastAPI's `{"detail":"…"}`.
            let message = ["message", "Message", "detail"]
                .iter()
                .find_map(|k| v.get(*k)?.as_str())?;
            Some((v.get("__type").and_then(as_code), message.to_owned()))
        }
    }
}

/// The error of an error event inside a 200 stream, from its error object `e`. One that nothing
/// places is a server error, since the request was accepted.
pub(crate) fn error_from_event(e: &serde_json::Value) -> ApiError {
    use serde_json::Value;
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the provider reported an error mid-stream");
    let code = ["code", "type"]
        .iter()
        .filter_map(|k| e.get(*k)?.as_str())
        .find(|c| c.parse::<u16>().is_err());
    let status = ["code", "status", "statusCode", "status_code"]
        .iter()
        .find_map(|k| match e.get(*k)? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        })
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| (400..600).contains(n));
    let mut err = ApiError::from_provider(status, code, message, None);
    if err.kind == ErrorKind::InvalidRequest && status.is_none() && code.is_none() {
        err.kind = ErrorKind::Server;
    }
    err
}

/// The innermost cause of `e`, or `e` itself: the useful part of a chained error.
pub(crate) fn innermost(e: &dyn std::error::Error) -> String {
    let mut last = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_bodies_are_never_dumped() {
        let body = b"<html><body><h1>502 Bad Gateway</h1>secret page</body></html>";
        let e = error_from_body(
            502,
            "text/html",
            body,
            &HeaderMap::new(),
            "text/event-stream",
        );
        assert_eq!(e.kind, ErrorKind::Server);
        assert!(
            e.to_string()
                .contains("(HTTP 502): the response was text/html"),
            "{e}"
        );
        assert!(!e.message.contains("secret page"));
        let e = error_from_body(
            200,
            "text/html; charset=utf-8",
            body,
            &HeaderMap::new(),
            "text/event-stream",
        );
        assert_eq!(e.kind, ErrorKind::Decode);
        assert!(
            e.message.contains("HTTP 200 with text/html"),
            "{}",
            e.message
        );
    }

    #[test]
    fn provider_error_shapes() {
        let v: serde_json::Value = serde_json::json!({"error":{"message":"m","type":"insufficient_quota","code":"insufficient_quota"}});
        assert_eq!(
            provider_error_fields(&v),
            Some((Some("insufficient_quota".into()), "m".into()))
        );
        let v =
            serde_json::json!({"error":{"code":429,"message":"q","status":"RESOURCE_EXHAUSTED"}});
        assert_eq!(
            provider_error_fields(&v),
            Some((Some("RESOURCE_EXHAUSTED".into()), "q".into()))
        );
        let v = serde_json::json!({"error":"model not found"});
        assert_eq!(
            provider_error_fields(&v),
            Some((None, "model not found".into()))
        );
        let v =
            serde_json::json!({"type":"error","error":{"type":"rate_limit_error","message":"r"}});
        assert_eq!(
            provider_error_fields(&v),
            Some((Some("rate_limit_error".into()), "r".into()))
        );
    }
}
