//! The openai_responses stream mapper (SPEC R1.1, R1.2) fed the events an SSE body decodes into: no panic,
//! the same chunks for the same events, and no empty stream taken for a success. Input: the
//! SSE body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_api::providers::fuzzing::SseFamily;

fuzz_target!(|data: &[u8]| switchyard_fuzz::sse_mapping(SseFamily::OpenAiResponses, data));
