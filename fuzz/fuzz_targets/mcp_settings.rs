//! The `mcpServers` settings reader (SPEC R9): any text is settings or a clear error naming the
//! file. Input: the file's text.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use switchyard_core::mcp::McpSettings;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match McpSettings::parse(text, Path::new("mcp_settings.json")) {
        Ok(s) => {
            let _ = format!("{s:?}");
        }
        Err(e) => assert!(e.to_string().contains("mcp_settings.json"), "{e}"),
    }
});
