//! The sign-in files of other CLIs (SPEC R4.2, R10.5): any text read as the Codex CLI's
//! `auth.json` and the Qwen CLI's `oauth_creds.json` (what a request reads, and the file as a
//! refresh writes it back, every non-null field kept), as a JWT, as an RFC 3339 time (written
//! back and read again alike) and as an OAuth token endpoint's refusal body. Input: the file's
//! text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The strings of a refusal body a sentence may name: `error` (or its `code` and `message`)
/// and `error_description`.
fn error_strings(body: &Value) -> Vec<&str> {
    let error = body.get("error");
    [
        error,
        error.and_then(|e| e.get("code")),
        error.and_then(|e| e.get("message")),
        body.get("error_description"),
    ]
    .into_iter()
    .filter_map(|v| v?.as_str())
    .collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let refusal = switchyard_api::providers::fuzzing::signin_file(text);
    // The sentence names the status and at most the body's error strings, never the rest of
    // the body (a server may echo what it was sent).
    let body: Value = serde_json::from_str(text).unwrap_or_default();
    let named = error_strings(&body);
    let room: usize = named.iter().map(|s| s.len() + 2).sum();
    assert!(refusal.starts_with("HTTP 400"), "{refusal}");
    assert!(
        refusal.len() <= "HTTP 400".len() + room,
        "{refusal:?} from {text:?}"
    );
    if named.is_empty() {
        assert_eq!(refusal, "HTTP 400");
    }
});
