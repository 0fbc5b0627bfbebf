//! The Ollama stream mapper (SPEC R1.1, R1.2) fed the lines an NDJSON body decodes into: no
//! panic, the same chunks for the same lines, and no empty stream taken for a success. Input:
//! the NDJSON body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_api::providers::fuzzing::map_ollama;
use switchyard_fuzz::{check_mapping, decode_ndjson};

fuzz_target!(|data: &[u8]| {
    let (lines, _) = decode_ndjson(&[data], 1 << 20);
    check_mapping(lines.len(), || map_ollama(&lines));
});
