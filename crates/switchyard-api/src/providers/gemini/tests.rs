//! Gemini request contents built from the Anthropic-shaped conversation.

use serde_json::json;

use super::*;
use crate::message::ImageSource;

/// An image a tool returned goes to Gemini as an `inlineData` part beside the tool's
/// `functionResponse`, in the same user content: Gemini reads media there on every model,
/// where `functionResponse.parts` is Gemini 3's alone (BerriAI/litellm#23712, in
/// tests/cases/CASES.md).
#[test]
fn an_image_from_a_tool_goes_beside_its_function_response() {
    let png = ImageSource {
        kind: "base64".into(),
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    let messages = [
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "call_1".into(),
                name: "read_file".into(),
                input: json!({"path": "screenshot.png"}),
                signature: None,
            }],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "Read screenshot.png (1 KB)".into(),
                    is_error: false,
                },
                ContentBlock::Image { source: png },
            ],
        },
    ];
    let contents = convert_messages(&messages);
    assert_eq!(
        contents[1],
        json!({"role": "user", "parts": [
            {"functionResponse": {"id": "call_1", "name": "read_file",
                "response": {"content": "Read screenshot.png (1 KB)"}}},
            {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
        ]})
    );
}
