//! What an MCP tool call gives back to the model: the result's blocks as one text.
//! Spec: R10.5, R11.2.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// What a tool call gave back: its text for the model, and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpToolOutput {
    /// The result's text, as the model is sent it.
    pub content: String,
    /// The call failed: the server said so, timed out, or could not be reached.
    pub is_error: bool,
}

pub(super) fn tool_output(result: CallToolResult) -> McpToolOutput {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Image(i) => parts.push(format!(
                "[image: {}, {} bytes of base64]",
                i.mime_type,
                i.data.len()
            )),
            ContentBlock::Audio(a) => parts.push(format!(
                "[audio: {}, {} bytes of base64]",
                a.mime_type,
                a.data.len()
            )),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    parts.push(format!("[resource {uri}]\n{text}"));
                }
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    parts.push(format!(
                        "[resource {uri}: {} binary data]",
                        mime_type.as_deref().unwrap_or("binary")
                    ))
                }
                _ => parts.push("[a resource of a kind Switchyard does not show]".to_owned()),
            },
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[resource link {}]", link.uri));
            }
            _ => parts.push("[content of a kind Switchyard does not show]".to_owned()),
        }
    }
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    McpToolOutput {
        // Scrubbed joined, so a secret split across two blocks is hidden whole.
        content: switchyard_api::secrets::scrub_joined(&parts, "\n"),
        is_error: result.is_error.unwrap_or(false),
    }
}
