//! A Responses WebSocket's messages, one a line, read as `switchyard serve` reads them (SPEC
//! R14.1b): continued conversations, warm-ups and refusals checked against the rule (see
//! `switchyard_fuzz::websocket`). Input: JSON messages separated by newlines.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| switchyard_fuzz::websocket::check(data));
