//! The Bedrock ConverseStream mapper (SPEC R1.1, R1.2) fed the frames an event-stream body
//! decodes into (CRCs set right by the harness): no panic, the same chunks for the same frames,
//! and no empty stream taken for a success. Input: the event-stream body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_api::providers::fuzzing::map_bedrock;
use switchyard_fuzz::{check_mapping, decode_eventstream, fix_crcs};

fuzz_target!(|data: &[u8]| {
    let mut body = data.to_vec();
    fix_crcs(&mut body);
    let (frames, _) = decode_eventstream(&[&body], 1 << 20);
    check_mapping(frames.len(), || map_bedrock(&frames));
});
