//! Captured content: the prompt and the answer as the GenAI conventions' message JSON, scrubbed
//! of every registered secret, then cut to a bound.
//! Spec: R14.13, R10.5.

use serde_json::{Value, json};
use switchyard_api::{ContentBlock, Message, Role};

/// The attributes of a request's prompt: its system instructions and its messages.
pub(super) fn input(system: &str, messages: &[Message], max: usize) -> Vec<(&'static str, String)> {
    let mut attributes = Vec::new();
    if !system.is_empty() {
        let parts = json!([{"type": "text", "content": system}]);
        attributes.push(("gen_ai.system_instructions", bounded(&parts, max)));
    }
    let messages: Vec<Value> = messages.iter().map(message).collect();
    attributes.push((
        "gen_ai.input.messages",
        bounded(&Value::Array(messages), max),
    ));
    attributes
}

/// The answer's text as one assistant message.
pub(super) fn output(text: &str, finish: &str, max: usize) -> String {
    let message = json!([{
        "role": "assistant",
        "parts": [{"type": "text", "content": text}],
        "finish_reason": finish,
    }]);
    bounded(&message, max)
}

fn message(m: &Message) -> Value {
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let parts: Vec<Value> = m.content.iter().map(part).collect();
    json!({"role": role, "parts": parts})
}

fn part(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text { text } => json!({"type": "text", "content": text}),
        ContentBlock::ToolUse {
            id, name, input, ..
        } => json!({"type": "tool_call", "id": id, "name": name, "arguments": input}),
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            ..
        } => json!({"type": "tool_call_response", "id": tool_use_id, "response": content}),
        ContentBlock::Thinking { thinking, .. } => {
            json!({"type": "reasoning", "content": thinking})
        }
        // An image's bytes are never captured: only that one was there.
        _ => json!({"type": "blob"}),
    }
}

/// `value` as JSON text without a secret, at most `max` bytes: a longer text is cut on a
/// character boundary and ends in `…`, so it no longer parses as JSON.
fn bounded(value: &Value, max: usize) -> String {
    let mut text = value.to_string();
    // Scrubbed before the cut, so a cut can never leave part of a secret unmatched.
    switchyard_api::secrets::scrub_in_place(&mut text);
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_secret_is_scrubbed_and_a_long_prompt_is_cut() {
        switchyard_api::secrets::register("sk-telemetry-planted-0001");
        let messages = [Message::user_text(
            "my key is sk-telemetry-planted-0001, ok?",
        )];
        let attributes = input("be brief", &messages, 4096);
        let joined: String = attributes.iter().map(|(_, v)| v.as_str()).collect();
        assert!(!joined.contains("sk-telemetry-planted-0001"), "{joined}");
        assert!(joined.contains("[redacted]"), "{joined}");
        let (key, messages_json) = &attributes[1];
        assert_eq!(*key, "gen_ai.input.messages");
        let parsed: Value = serde_json::from_str(messages_json).unwrap();
        assert_eq!(parsed[0]["role"], "user");
        let long = output(&"é".repeat(1000), "stop", 101);
        assert!(
            long.len() <= 101 + '…'.len_utf8() && long.ends_with('…'),
            "{long}"
        );
    }
}
