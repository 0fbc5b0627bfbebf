//! The one rough count of a request's input tokens, used to decide before a call (truncation,
//! a context window, a reservation), never to bill: a token per four bytes of text, an image
//! at a flat [`IMAGE_TOKENS`].
//! Spec: R8.2.

use std::io;

use serde_json::Value;

use crate::message::{ContentBlock, Message, ToolSpec};

/// The flat estimate of one image, since counting its base64 bytes would be 100 times too much.
pub const IMAGE_TOKENS: u64 = 1_000;

/// A rough token count for `bytes` bytes of text: `ceil(bytes / 4)`.
pub fn estimate_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// A rough token count of a system prompt and messages.
pub fn estimate_message_tokens(system: &str, messages: &[Message]) -> u64 {
    estimate_input(system, messages, &[])
}

/// A rough token count of one upstream request's input, its tools' names, descriptions and
/// schemas included.
pub fn estimate_input(system: &str, messages: &[Message], tools: &[ToolSpec]) -> u64 {
    let mut bytes = system.len();
    let mut images: u64 = 0;
    for block in messages.iter().flat_map(|m| &m.content) {
        bytes += match block {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Image { .. } => {
                images += 1;
                0
            }
            ContentBlock::ToolUse { name, input, .. } => name.len() + json_len(input),
            ContentBlock::ToolResult { content, .. } => content.len(),
            ContentBlock::Thinking { thinking, .. } => thinking.len(),
            ContentBlock::RedactedThinking { data } => data.len(),
        };
    }
    for tool in tools {
        bytes += tool.name.len() + tool.description.len() + json_len(&tool.input_schema);
    }
    estimate_tokens(bytes).saturating_add(images.saturating_mul(IMAGE_TOKENS))
}

/// The length of `value` written as compact JSON, counted without building the text: a long
/// agent session holds hundreds of tool calls, and this runs before every request.
pub fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_json_length_is_the_compact_texts() {
        for value in [json!({"path": "a.rs", "n": [1, 2.5, null]}), json!("é\n\"")] {
            assert_eq!(json_len(&value), value.to_string().len());
        }
    }

    #[test]
    fn tools_count_beside_the_messages_and_an_image_counts_flat() {
        let messages = vec![Message::user_text("a".repeat(40))];
        let tool = ToolSpec {
            name: "read".to_owned(),
            description: "d".repeat(3),
            input_schema: json!({}),
        };
        assert_eq!(estimate_message_tokens("", &messages), 10);
        // 40 + 4 + 3 + 2 bytes: 49, rounded up.
        assert_eq!(estimate_input("", &messages, &[tool]), 13);
    }
}
