//! The gateway's Gemini request parser (SPEC R14.12, R14.5) and the full path request →
//! internal request → provider body → parsed again (see `switchyard_fuzz::ingress`), and the
//! same body at a streaming URL. Input: the request body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_gateway::ingress::Dialect;

fuzz_target!(|data: &[u8]| switchyard_fuzz::ingress::check_request(Dialect::Gemini, data));
