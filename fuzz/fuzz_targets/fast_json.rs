//! The fast JSON scanner (`providers/fast_json.rs`): whatever it reads, `serde_json` reads the
//! same (it accepts exactly what serde accepts, or gives up); whatever serde rejects, it gives up
//! on. Input: the document.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let serde = serde_json::from_str::<Value>(src).ok();
    if let Some(scanned) = switchyard_api::providers::fuzzing::fast_json_scan(src) {
        assert_eq!(
            Some(scanned),
            serde,
            "the scanner read what serde reads otherwise"
        );
    }
});
