//! The NDJSON decoder (SPEC R4.0): any split of the same bytes gives the same lines and the same
//! first error as the whole body. Input: one mode byte (bit 0: a 64-byte line cap), eight bytes
//! that choose the split, then the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_fuzz::{decode_ndjson, pieces, split_head};

fuzz_target!(|data: &[u8]| {
    let (mode, rest) = split_head(data, 1);
    let (seed, body) = split_head(rest, 8);
    let limit = if mode.first().is_some_and(|m| m & 1 == 1) {
        64
    } else {
        1 << 20
    };
    let whole = decode_ndjson(&[body], limit);
    assert_eq!(
        decode_ndjson(&pieces(body, seed), limit),
        whole,
        "split {seed:?}"
    );
    assert_eq!(
        decode_ndjson(&pieces(body, &[]), limit),
        whole,
        "byte by byte"
    );
});
