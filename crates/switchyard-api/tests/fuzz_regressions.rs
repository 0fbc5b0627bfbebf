//! Inputs the fuzz target `config_toml` once broke (issue 27, SPEC R15.1), replayed with plain
//! `cargo test`: each `tests/fuzz/config_toml/NAME.toml` is a configuration file that must be
//! read (or refused with an error naming the file) and resolve both modes without a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use switchyard_api::{ApiConfiguration, Mode, resolve_mode};

#[test]
fn configurations_found_by_fuzzing_resolve_without_a_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz/config_toml");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let config = ApiConfiguration::from_toml(&text, "config.toml", |_| Some("k".into()))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for mode in [Mode::Plan, Mode::Act] {
            // A model id with `…` straddling the 11th byte from its end panicked here.
            let _ = resolve_mode(&config, mode);
        }
        checked += 1;
    }
    assert_eq!(checked, 1);
}
