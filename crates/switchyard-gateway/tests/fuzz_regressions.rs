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
    assert_eq!(replay("ingress_chat", Dialect::ChatCompletions), 4);
}

#[test]
fn anthropic_messages_inputs_found_by_fuzzing_are_refused_at_their_field() {
    assert_eq!(replay("ingress_messages", Dialect::AnthropicMessages), 1);
}

/// `ingress_chat` found (issue 27) two `tool` messages parsed as two user turns when the only
/// messages between them had nothing to send (here a `user` and an `assistant` message with
/// misspelt fields): re-encoded, the two results are adjacent `tool` messages, one turn. Now
/// the empty messages leave the tool turn open, so a body parses to what it is sent as.
#[test]
fn tool_results_around_messages_with_nothing_to_send_are_one_turn() {
    use switchyard_api::{ContentBlock, Role};
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fuzz/ingress_chat/tool_results_around_empty_messages.body");
    let request = parse_request(Dialect::ChatCompletions, &std::fs::read(path).unwrap()).unwrap();
    assert_eq!(request.messages.len(), 1, "{:?}", request.messages);
    let turn = &request.messages[0];
    assert_eq!(turn.role, Role::User);
    let results: Vec<&str> = (turn.content.iter())
        .map(|b| match b {
            ContentBlock::ToolResult { content, .. } => content.as_str(),
            other => panic!("not a tool result: {other:?}"),
        })
        .collect();
    assert_eq!(results, ["", "18C, sunny"]);
}

/// `ingress_chat` and `ingress_messages` found (issue 27) numbers in a tool's JSON schema that
/// came out of the gateway as a different number: serde_json's default float parsing may be
/// one unit in the last place off, so the schema re-encoded for the provider did not parse
/// back to itself. With `float_roundtrip` (workspace `Cargo.toml`) what a client sends is
/// what the provider gets.
#[test]
fn numbers_in_a_tool_schema_are_sent_as_the_client_wrote_them() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fuzz");
    for (dialect, name) in [
        (Dialect::ChatCompletions, "ingress_chat"),
        (Dialect::AnthropicMessages, "ingress_messages"),
    ] {
        let body = std::fs::read(dir.join(name).join("tool_schema_float.body")).unwrap();
        let request = parse_request(dialect, &body).unwrap();
        assert!(!request.tools.is_empty(), "{name}");
        for tool in &request.tools {
            let sent = serde_json::to_string(&tool.input_schema).unwrap();
            let again: serde_json::Value = serde_json::from_str(&sent).unwrap();
            assert_eq!(again, tool.input_schema, "{name}: {sent}");
        }
    }
    for text in [
        "1.03e82",
        "2.1111111111111093e53",
        "0.1",
        "5e-324",
        "1.7976931348623157e308",
    ] {
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let again: serde_json::Value = serde_json::from_str(&value.to_string()).unwrap();
        assert_eq!(again, value, "{text}");
    }
}

/// `ingress_responses` found (issue 27) an `input_image` whose base64 data was only spaces:
/// accepted, it became an empty data URL that the provider body's next parse refused. Now it
/// is refused at once, at its field.
#[test]
fn an_inline_image_of_only_spaces_is_refused_at_its_field() {
    let body = br#"{"model":"gpt-5","input":[{"role":"user","content":[
        {"type":"input_text","text":"What is this?"},
        {"type":"input_image","image_url":"data:image/png;base64,   "}]}]}"#;
    let err = parse_request(Dialect::Responses, body).unwrap_err();
    assert_eq!(
        err.field, "input[0].content[1].image_url",
        "{}",
        err.message
    );
}
