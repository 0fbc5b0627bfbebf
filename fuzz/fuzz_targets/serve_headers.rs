//! What `switchyard serve` reads from a client's request headers (SPEC R14.2, R14.6, R14.11):
//! the client key, the dashboard's session cookie, the forwarded `anthropic-beta`, a trusted
//! proxy's `X-Forwarded-For` / `X-Forwarded-Proto`; and the dashboard's urlencoded form bodies
//! (see `switchyard_fuzz::headers`). Input: header lines, a blank line, a form body.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| switchyard_fuzz::headers::check(data));
