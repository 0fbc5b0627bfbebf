//! The configuration loader (SPEC R2, `config.toml`): any text is a configuration or a clear
//! error naming the file, and a configuration resolves both modes without a panic. Input: the
//! file's text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_api::{ApiConfiguration, Mode, resolve_mode};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match ApiConfiguration::from_toml(text, "config.toml", |_| Some("k".into())) {
        Ok(config) => {
            for mode in [Mode::Plan, Mode::Act] {
                let _ = resolve_mode(&config, mode).map(|m| format!("{m:?}"));
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
