//! What the user should change after a failure, chosen when the error is shown so that it can
//! name the provider and model.
//! Spec: R7.4.

use std::time::Duration;

use super::api_error::ApiError;
use super::classify::normalize_code;
use super::kind::ErrorKind;
use crate::retry_after::DEFAULT_RETRY_AFTER_CAP;

/// What the user should change, added after the message by `Display`.
pub(super) fn hint(e: &ApiError) -> Option<String> {
    let msg = e.message.to_ascii_lowercase();
    match e.kind {
        // Unless the provider's message already says when.
        ErrorKind::QuotaExceeded if !msg.contains("reset") => e
            .retry_after
            .map(|d| format!("it resets in about {}", human_duration(d))),
        ErrorKind::Auth if is_expired_credentials(e.code.as_deref(), &e.message) => {
            Some("refresh the credentials and try again".to_owned())
        }
        ErrorKind::RateLimited if e.permanent => Some(
            "the request alone is larger than this limit, so waiting cannot help: shorten the \
             conversation or the prompt, lower max_tokens, or raise the account's rate-limit tier"
                .to_owned(),
        ),
        ErrorKind::RateLimited => e
            .retry_after
            .filter(|d| *d > DEFAULT_RETRY_AFTER_CAP)
            .map(|d| {
                format!(
                    "the limit resets in about {}, longer than Switchyard waits on its own; \
                     try again then, or use another provider",
                    human_duration(d)
                )
            }),
        ErrorKind::Server if e.permanent => Some(
            "the model does not fit in the server's memory, so waiting cannot help: pick a \
             smaller model (or quantization), or free memory, then try again"
                .to_owned(),
        ),
        ErrorKind::InvalidRequest => invalid_request_hint(e, &msg),
        _ => None,
    }
}

/// Advice for the invalid requests whose fix is known.
fn invalid_request_hint(e: &ApiError, msg: &str) -> Option<String> {
    if msg.contains("on-demand throughput") || msg.contains("inference profile") {
        // Bedrock: newer models only run through a cross-region inference profile.
        return Some(
            "use an inference profile: give the model id with its region prefix (us.…, eu.…, \
             apac.…), or set use_cross_region_inference = true under [providers.bedrock]"
                .to_owned(),
        );
    }
    if msg.contains("not found") && msg.contains("pull") {
        // Ollama: `model "llama3" not found, try pulling it first`.
        let model = quoted(&e.message).or(e.model_id.as_deref())?;
        return Some(format!(
            "download it with `ollama pull {model}`, or pick a model `ollama list` shows"
        ));
    }
    if msg.contains("support tool use") {
        // OpenRouter: no endpoint of this model accepts tools.
        return Some("pick a model whose providers support tool use".to_owned());
    }
    if e.status == Some(404) {
        // No such path or model at this endpoint: a bare "Not Found" says nothing of which.
        return Some(
            "check the base URL (the path the API is served under, e.g. …/v1) and that the \
             model id exists there"
                .to_owned(),
        );
    }
    None
}

fn quoted(message: &str) -> Option<&str> {
    ['"', '`', '\''].iter().find_map(|q| {
        let start = message.find(*q)? + 1;
        let len = message[start..].find(*q)?;
        Some(&message[start..start + len]).filter(|s| !s.is_empty() && !s.contains(' '))
    })
}

/// Expired credentials: AWS `ExpiredTokenException`, "token is expired", "API key expired".
pub(super) fn is_expired_credentials(code: Option<&str>, message: &str) -> bool {
    let code = normalize_code(code.unwrap_or(""));
    let msg = message.to_ascii_lowercase();
    code == "expiredtokenexception"
        || code == "expiredtoken"
        || msg.contains("token is expired")
        || msg.contains("token has expired")
        || msg.contains("is expired")
        || msg.contains("api key expired")
}

/// A rough human reading of a wait: "45 s", "12 min", "5 h".
pub(super) fn human_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 90.0 {
        format!("{} s", secs.ceil())
    } else if secs < 90.0 * 60.0 {
        format!("{} min", (secs / 60.0).round())
    } else {
        format!("{} h", (secs / 3600.0).round())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_not_found_says_what_to_check() {
        let mut e = ApiError::from_provider(Some(404), None, "Not Found", None);
        e.provider_id = Some("anthropic".into());
        assert_eq!(
            e.to_string(),
            "anthropic rejected the request (HTTP 404): Not Found; check the base URL (the path \
             the API is served under, e.g. …/v1) and that the model id exists there"
        );
    }

    #[test]
    fn human_durations() {
        assert_eq!(human_duration(Duration::from_millis(7200)), "8 s");
        assert_eq!(human_duration(Duration::from_secs(432)), "7 min");
        assert_eq!(human_duration(Duration::from_secs(600)), "10 min");
        assert_eq!(human_duration(Duration::from_secs(86_400)), "24 h");
    }
}
