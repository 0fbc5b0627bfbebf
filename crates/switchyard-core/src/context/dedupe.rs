//! Repeated reads of the same file: the model is sent only the latest copy.
//! Spec: R8.6.

use std::collections::HashMap;

use switchyard_api::{ContentBlock, Message};

use super::apply::apply_deleted_range;
use super::truncation::DeletedRange;

/// Replaces an earlier copy of a file that the conversation read again later.
pub const FILE_READ_NOTICE: &str = "[[NOTE] This file read has been removed to save space in \
the context window. Refer to a more recent file read to view the most up to date version of \
this file.]";

/// The share of the request's bytes the dedupe must save for truncation to be skipped.
pub const DEDUPE_SKIPS_TRUNCATION_AT: f64 = 0.30;

/// One earlier file read to replace with [`FILE_READ_NOTICE`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileReadEdit {
    /// Index of the message in the stored history.
    pub message_index: usize,
    /// Index of the block in that message.
    pub block_index: usize,
    /// The file, as the read named it.
    pub path: String,
    /// Bytes of file content the notice replaces.
    pub saved_bytes: usize,
}

struct Read {
    message_index: usize,
    block_index: usize,
    path: String,
    bytes: usize,
}

/// A read tool, also under an MCP server's `server__` prefix.
fn is_read_tool(name: &str) -> bool {
    let base = name.rsplit("__").next().unwrap_or(name);
    matches!(base, "read_file" | "read_text_file")
}

fn file_content_sections(text: &str) -> Vec<(String, usize, usize)> {
    const OPEN: &str = "<file_content path=\"";
    const CLOSE: &str = "</file_content>";
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = text[at..].find(OPEN) {
        let path_start = at + found + OPEN.len();
        let Some(path_len) = text[path_start..].find("\">") else {
            break;
        };
        let path = text[path_start..path_start + path_len].to_owned();
        let body_start = path_start + path_len + 2;
        let Some(body_len) = text[body_start..].find(CLOSE) else {
            break;
        };
        out.push((path, body_start, body_start + body_len));
        at = body_start + body_len + CLOSE.len();
    }
    out
}

fn reference_read_header(text: &str) -> Option<(String, usize)> {
    let rest = text.strip_prefix("[read_file for '")?;
    let (path, after) = rest.split_once("'] Result:")?;
    let header_end = text.len() - after.len();
    Some((path.to_owned(), header_end))
}

/// The earlier copies of files read more than once among the visible messages.
pub fn find_duplicate_file_reads(
    messages: &[Message],
    range: Option<DeletedRange>,
) -> Vec<FileReadEdit> {
    let hidden = |i: usize| matches!(range, Some((s, e)) if i >= s.max(2) && i <= e);
    let mut tool_paths: HashMap<&str, String> = HashMap::new();
    let mut reads: Vec<Read> = Vec::new();
    for (mi, message) in messages.iter().enumerate() {
        for (bi, block) in message.content.iter().enumerate() {
            match block {
                ContentBlock::ToolUse {
                    id, name, input, ..
                } if is_read_tool(name) => {
                    let path = input
                        .get("path")
                        .or_else(|| input.get("file_path"))
                        .and_then(|p| p.as_str());
                    if let Some(path) = path {
                        tool_paths.insert(id.as_str(), path.to_owned());
                    }
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error: false,
                } if !hidden(mi) => {
                    if let Some(path) = tool_paths.get(tool_use_id.as_str()) {
                        reads.push(Read {
                            message_index: mi,
                            block_index: bi,
                            path: path.clone(),
                            bytes: content.len(),
                        });
                    }
                }
                ContentBlock::Text { text } if !hidden(mi) => {
                    if let Some((path, header_end)) = reference_read_header(text) {
                        reads.push(Read {
                            message_index: mi,
                            block_index: bi,
                            path,
                            bytes: text.len() - header_end,
                        });
                    } else {
                        for (path, start, end) in file_content_sections(text) {
                            reads.push(Read {
                                message_index: mi,
                                block_index: bi,
                                path,
                                bytes: end - start,
                            });
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut latest: HashMap<&str, usize> = HashMap::new();
    for (i, r) in reads.iter().enumerate() {
        latest.insert(r.path.as_str(), i);
    }
    reads
        .iter()
        .enumerate()
        .filter(|(i, r)| latest.get(r.path.as_str()) != Some(i))
        .map(|(_, r)| FileReadEdit {
            message_index: r.message_index,
            block_index: r.block_index,
            path: r.path.clone(),
            saved_bytes: r.bytes.saturating_sub(FILE_READ_NOTICE.len()),
        })
        .collect()
}

/// A copy of `messages` with each edit's file content replaced by `FILE_READ_NOTICE`.
pub fn apply_file_read_edits(messages: &[Message], edits: &[FileReadEdit]) -> Vec<Message> {
    let mut out = messages.to_vec();
    for edit in edits {
        let Some(block) = out
            .get_mut(edit.message_index)
            .and_then(|m| m.content.get_mut(edit.block_index))
        else {
            continue;
        };
        match block {
            ContentBlock::ToolResult { content, .. } => *content = FILE_READ_NOTICE.to_owned(),
            ContentBlock::Text { text } => {
                if let Some((_, header_end)) = reference_read_header(text) {
                    text.truncate(header_end);
                    text.push('\n');
                    text.push_str(FILE_READ_NOTICE);
                } else if let Some((_, start, end)) = file_content_sections(text)
                    .into_iter()
                    .find(|(p, _, _)| *p == edit.path)
                {
                    text.replace_range(start..end, FILE_READ_NOTICE);
                }
            }
            _ => {}
        }
    }
    out
}

/// The messages a request sends: re-read files replaced, then the deleted range applied.
pub fn messages_for_request(messages: &[Message], range: Option<DeletedRange>) -> Vec<Message> {
    let edits = find_duplicate_file_reads(messages, range);
    if edits.is_empty() {
        apply_deleted_range(messages, range)
    } else {
        apply_deleted_range(&apply_file_read_edits(messages, &edits), range)
    }
}

/// Whether replacing earlier file reads saves enough of the visible bytes to skip truncation.
pub fn dedupe_saves_enough(messages: &[Message], range: Option<DeletedRange>) -> bool {
    let saved: usize = find_duplicate_file_reads(messages, range)
        .iter()
        .map(|e| e.saved_bytes)
        .sum();
    if saved == 0 {
        return false;
    }
    let total: usize = apply_deleted_range(messages, range)
        .iter()
        .flat_map(|m| &m.content)
        .map(|b| match b {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::ToolResult { content, .. } => content.len(),
            ContentBlock::ToolUse { input, .. } => input.to_string().len(),
            ContentBlock::Thinking { thinking, .. } => thinking.len(),
            ContentBlock::RedactedThinking { data } => data.len(),
            ContentBlock::Image { .. } => 0,
        })
        .sum();
    total > 0 && saved as f64 >= DEDUPE_SKIPS_TRUNCATION_AT * total as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::test_support::{assistant, user};
    use serde_json::json;
    fn read_call(id: &str, path: &str) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: "read_file".into(),
            input: json!({ "path": path }),
            signature: None,
        }
    }
    fn result(id: &str, content: &str) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: content.into(),
            is_error: false,
        }
    }

    fn history(big: &str) -> Vec<Message> {
        vec![
            Message::user_text("task"),
            assistant(vec![read_call("a", "src/main.rs")]),
            user(vec![result("a", big)]),
            assistant(vec![read_call("b", "src/lib.rs")]),
            user(vec![result("b", "lib")]),
            assistant(vec![read_call("c", "src/main.rs")]),
            user(vec![result("c", big)]),
        ]
    }

    #[test]
    fn earlier_tool_reads_of_the_same_file_are_replaced() {
        let big = "x".repeat(1000);
        let h = history(&big);
        let edits = find_duplicate_file_reads(&h, None);
        assert_eq!(
            edits,
            vec![FileReadEdit {
                message_index: 2,
                block_index: 0,
                path: "src/main.rs".into(),
                saved_bytes: 1000 - FILE_READ_NOTICE.len(),
            }]
        );
        let sent = messages_for_request(&h, None);
        assert_eq!(sent[2].content, vec![result("a", FILE_READ_NOTICE)]);
        assert_eq!(sent[6].content, vec![result("c", &big)]);
        assert_eq!(sent[4].content, vec![result("b", "lib")]);
        // The stored history is untouched.
        assert_eq!(h[2].content, vec![result("a", &big)]);
        assert!(dedupe_saves_enough(&h, None));
    }

    #[test]
    fn small_savings_do_not_skip_truncation() {
        let h = history("short file");
        assert!(!dedupe_saves_enough(&h, None));
        assert!(!dedupe_saves_enough(&[Message::user_text("x")], None));
    }

    #[test]
    fn hidden_reads_are_ignored() {
        let big = "x".repeat(1000);
        let h = history(&big);
        // Messages 2..=5 hidden: only the read in message 6 is visible, nothing to replace.
        assert!(find_duplicate_file_reads(&h, Some((2, 5))).is_empty());
    }

    #[test]
    fn reference_text_forms_are_deduplicated() {
        let h = vec![
            Message::user_text(
                "look at <file_content path=\"a.txt\">AAAA</file_content> and <file_content path=\"b.txt\">BB</file_content>",
            ),
            Message::assistant_text("ok"),
            Message::user_text("[read_file for 'a.txt'] Result:\nAAAA2"),
            Message::assistant_text("ok"),
        ];
        let edits = find_duplicate_file_reads(&h, None);
        assert_eq!(edits.len(), 1);
        assert_eq!(edits[0].message_index, 0);
        assert_eq!(edits[0].path, "a.txt");
        let sent = apply_file_read_edits(&h, &edits);
        assert_eq!(
            sent[0].content,
            vec![ContentBlock::Text {
                text: format!(
                    "look at <file_content path=\"a.txt\">{FILE_READ_NOTICE}</file_content> and <file_content path=\"b.txt\">BB</file_content>"
                )
            }]
        );
        // The later read of a.txt is the latest: kept. Now read it a third time.
        let mut h2 = h.clone();
        h2.push(Message::user_text(
            "<file_content path=\"a.txt\">AAAA3</file_content>",
        ));
        let edits = find_duplicate_file_reads(&h2, None);
        assert_eq!(edits.len(), 2);
        let sent = apply_file_read_edits(&h2, &edits);
        assert_eq!(
            sent[2].content,
            vec![ContentBlock::Text {
                text: format!("[read_file for 'a.txt'] Result:\n{FILE_READ_NOTICE}")
            }]
        );
    }

    #[test]
    fn mcp_prefixed_read_tools_count() {
        assert!(is_read_tool("filesystem__read_text_file"));
        assert!(is_read_tool("read_file"));
        assert!(!is_read_tool("write_file"));
    }
}
