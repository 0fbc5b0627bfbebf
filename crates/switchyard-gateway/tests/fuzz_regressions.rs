//! Inputs the fuzz targets `ingress_*` once broke (issue 27, SPEC R15.1), replayed with plain
//! `cargo test`: each `tests/fuzz/ingress_DIALECT/NAME.json` is a client's request body that
//! must be refused with a 400 naming the field in `NAME.expected` (one line), with a sentence
//! saying what to send.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use switchyard_gateway::ingress::{Dialect, parse_request};

/// Every input of `dir` parsed in `dialect` is refused at its expected field; the count of
/// inputs checked.
fn replay(dir: &str, dialect: Dialect) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fuzz")
        .join(dir);
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let body = std::fs::read(&path).unwrap();
        let expected = std::fs::read_to_string(path.with_extension("expected")).unwrap();
        let err = parse_request(dialect, &body)
            .expect_err(&format!("{} must be refused", path.display()));
        assert_eq!(err.field, expected.trim(), "{}", path.display());
        assert!(err.message.ends_with('.'), "one sentence: {}", err.message);
        checked += 1;
    }
    checked
}

#[test]
fn chat_completions_inputs_found_by_fuzzing_are_refused_at_their_field() {
    assert_eq!(replay("ingress_chat", Dialect::ChatCompletions), 2);
}

#[test]
fn anthropic_messages_inputs_found_by_fuzzing_are_refused_at_their_field() {
    assert_eq!(replay("ingress_messages", Dialect::AnthropicMessages), 1);
}
