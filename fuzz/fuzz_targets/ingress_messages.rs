//! The gateway's AnthropicMessages request parser (SPEC R14.1, R14.5) and the full path request →
//! internal request → provider body → parsed again (see `switchyard_fuzz::ingress`). Input:
//! the request body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_gateway::ingress::Dialect;

fuzz_target!(|data: &[u8]| switchyard_fuzz::ingress::check_request(
    Dialect::AnthropicMessages,
    data
));
