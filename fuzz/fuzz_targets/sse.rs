//! The SSE decoder (SPEC R4.0): any split of the same bytes, owned or borrowed, gives the same
//! events, the same first error and the same end-of-body verdict as the whole body in one piece.
//! Input: one mode byte (bit 0: a 64-byte line cap, to reach the cap's error), eight bytes that
//! choose the split, then the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_fuzz::{decode_sse, pieces, split_head};

fuzz_target!(|data: &[u8]| {
    let (mode, rest) = split_head(data, 1);
    let (seed, body) = split_head(rest, 8);
    let limit = if mode.first().is_some_and(|m| m & 1 == 1) {
        64
    } else {
        1 << 20
    };
    let whole = decode_sse(&[body], limit, false);
    let split = pieces(body, seed);
    assert_eq!(decode_sse(&split, limit, false), whole, "split {seed:?}");
    assert_eq!(
        decode_sse(&split, limit, true),
        whole,
        "split {seed:?}, borrowed"
    );
    assert_eq!(
        decode_sse(&pieces(body, &[]), limit, true),
        whole,
        "byte by byte"
    );
});
