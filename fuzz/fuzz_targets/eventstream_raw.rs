//! The AWS event-stream decoder (SPEC R4.0) on bytes as they come, CRCs left broken: a corrupt
//! frame is an error, never a panic, and any split gives the whole body's frames and error.
//! Input: eight bytes that choose the split, then the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_fuzz::{decode_eventstream, pieces, split_head};

fuzz_target!(|data: &[u8]| {
    let (seed, body) = split_head(data, 8);
    let whole = decode_eventstream(&[body], 1 << 20);
    assert_eq!(
        decode_eventstream(&pieces(body, seed), 1 << 20),
        whole,
        "split {seed:?}"
    );
});
