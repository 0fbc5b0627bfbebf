//! The sign-in files of other CLIs (SPEC R3.5, R3.6): any text read as the Codex CLI's
//! `auth.json` and the Qwen CLI's `oauth_creds.json` (what a request reads, and the file as a
//! refresh writes it back, with every field kept), as a JWT, as an RFC 3339 time and as an OAuth
//! token endpoint's refusal body. Input: the file's text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (refusal, at) = switchyard_api::providers::fuzzing::signin_file(text);
    // The sentence names the status, then at most the body's `error` fields.
    assert!(refusal.starts_with("HTTP 400"), "{refusal}");
    // A time is one of RFC 3339's: the date's digits at its start.
    if at.is_some() {
        let year = text.trim_start().as_bytes().get(..4);
        assert!(
            year.is_some_and(|y| y.iter().all(u8::is_ascii_digit)),
            "{text:?}"
        );
    }
});
