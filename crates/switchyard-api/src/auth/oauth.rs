//! The token refresh the Qwen and Codex sign-ins share: one POST to the provider's OAuth token
//! endpoint, its refusals as clear errors.

use std::sync::Arc;

use serde_json::Value;

use crate::auth::signin_file::{auth_error, refusal};
use crate::error::body::innermost;
use crate::error::{ApiError, ErrorKind};
use crate::transport::HttpClient;

pub(crate) enum RefreshBody<'a> {
    /// Form fields, as the Qwen CLI sends them.
    Form(&'a [(&'a str, &'a str)]),
    /// A JSON object, as the Codex CLI sends it.
    Json(Value),
}

/// The non-empty text field `key` of a token endpoint's JSON answer.
pub(crate) fn text_field(answer: &Value, key: &str) -> Option<String> {
    answer
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Posts a refresh to `url` and returns the JSON answer. A 400, 401 or 403 means the sign-in is
/// gone, an auth error saying `signed_out`; other failures are network or server errors.
pub(crate) async fn refresh(
    client: &Arc<HttpClient>,
    url: &str,
    body: RefreshBody<'_>,
    signed_out: &str,
) -> Result<Value, ApiError> {
    let client = client
        .get()
        .map_err(|m| ApiError::new(ErrorKind::InvalidRequest, m))?;
    let request = client.post(url).header("accept", "application/json");
    let request = match body {
        RefreshBody::Form(fields) => request
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_encode(fields)),
        RefreshBody::Json(v) => request
            .header("content-type", "application/json")
            .body(v.to_string()),
    };
    let response = request.send().await.map_err(|e| {
        ApiError::new(
            ErrorKind::Network,
            format!(
                "could not reach the sign-in's token endpoint {url} ({}) to refresh it",
                innermost(&e)
            ),
        )
    })?;
    let status = response.status().as_u16();
    let bytes = response.bytes().await.map_err(|e| {
        ApiError::new(
            ErrorKind::Network,
            format!(
                "the token endpoint {url} broke off its answer ({})",
                innermost(&e)
            ),
        )
    })?;
    if matches!(status, 400 | 401 | 403) {
        return Err(auth_error(format!(
            "the sign-in could not be refreshed ({}): {signed_out}",
            refusal(status, &bytes)
        )));
    }
    if !(200..300).contains(&status) {
        let kind = if status == 429 {
            ErrorKind::RateLimited
        } else {
            ErrorKind::Server
        };
        let mut e = ApiError::new(
            kind,
            format!(
                "the token endpoint {url} failed to refresh the sign-in ({})",
                refusal(status, &bytes)
            ),
        );
        e.status = Some(status);
        return Err(e);
    }
    let answer: Value = serde_json::from_slice(&bytes).map_err(|_| {
        ApiError::new(
            ErrorKind::Server,
            format!("the token endpoint {url} answered something that is not JSON"),
        )
    })?;
    if answer.get("error").is_some_and(|e| !e.is_null()) {
        return Err(auth_error(format!(
            "the sign-in could not be refreshed ({}): {signed_out}",
            refusal(status, &bytes)
        )));
    }
    Ok(answer)
}

/// Form-encodes `fields`, keeping RFC 3986 unreserved characters.
fn form_encode(fields: &[(&str, &str)]) -> String {
    let encode = |s: &str| {
        let mut out = String::with_capacity(s.len());
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(b));
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    };
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_percent_encoded() {
        assert_eq!(
            form_encode(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", "a+b/c= d")
            ]),
            "grant_type=refresh_token&refresh_token=a%2Bb%2Fc%3D%20d"
        );
    }
}
