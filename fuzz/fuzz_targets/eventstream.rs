//! The AWS event-stream decoder (SPEC R4.0) past its CRCs: the harness sets every frame's
//! prelude and message CRC right, so the lengths, headers and payloads are what is fuzzed. Any
//! split gives the frames and first error of the whole body. Input: one mode byte (bit 0: a
//! 256-byte frame cap), eight bytes that choose the split, then the frames.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_fuzz::{decode_eventstream, fix_crcs, pieces, split_head};

fuzz_target!(|data: &[u8]| {
    let (mode, rest) = split_head(data, 1);
    let (seed, body) = split_head(rest, 8);
    let limit = if mode.first().is_some_and(|m| m & 1 == 1) {
        256
    } else {
        1 << 20
    };
    let mut body = body.to_vec();
    fix_crcs(&mut body);
    let whole = decode_eventstream(&[&body], limit);
    assert_eq!(
        decode_eventstream(&pieces(&body, seed), limit),
        whole,
        "split {seed:?}"
    );
});
