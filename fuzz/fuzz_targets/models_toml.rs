//! The user model catalogue loader (`models.toml`, SPEC R2.3): any text is a catalogue or a
//! clear error naming the file. Input: the file's text.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use switchyard_api::model::Catalogue;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Catalogue::with_user_text(text, Path::new("models.toml")) {
        Ok(c) => {
            for p in c.providers() {
                let _ = c.table(p, None).map(|t| format!("{t:?}"));
            }
        }
        Err(e) => assert!(e.to_string().contains("models.toml"), "{e}"),
    }
});
