//! Anthropic `messages[]` and their content blocks read into Switchyard's [`Message`]s. A
//! `role: "system"` message, which Claude Code sends, goes to the system prompt; what cannot
//! be carried is named in `dropped`.
//! Spec: R14.1.

use serde_json::Value;
use switchyard_api::{CacheAt, CacheHints, ContentBlock, Message, Role, message::ImageSource};

use super::super::content::cache_ttl;
use super::super::fields::{Object, get, note_dropped, str_at};
use super::super::request::IngressError;

/// The conversation of a request: its messages, and the text of its `role: "system"`
/// messages, which go after the system prompt.
pub(super) struct ParsedMessages {
    /// The `user` and `assistant` messages, oldest first.
    pub(super) messages: Vec<Message>,
    /// Each `role: "system"` message's text, in order.
    pub(super) system: Vec<String>,
}

/// Reads the required `messages`, an array of `{role, content}`.
pub(super) fn parse_messages(
    messages: Option<&Value>,
    dropped: &mut Vec<String>,
    cache: &mut CacheHints,
) -> Result<ParsedMessages, IngressError> {
    let Some(Value::Array(items)) = messages else {
        let message = match messages {
            None => "is required: an array of messages.",
            Some(_) => "must be an array of messages.",
        };
        return Err(IngressError::new("messages", message));
    };
    let mut out = ParsedMessages {
        messages: Vec::with_capacity(items.len()),
        system: Vec::new(),
    };
    for (i, item) in items.iter().enumerate() {
        let path = format!("messages[{i}]");
        let Value::Object(m) = item else {
            return Err(IngressError::new(
                path,
                "must be an object with `role` and `content`.",
            ));
        };
        let role = match str_at(m, &path, "role")? {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "system" => {
                let content = m.get("content").unwrap_or(&Value::Null);
                mark_system(content, cache);
                out.system
                    .push(text_of(content, &format!("{path}.content"))?);
                continue;
            }
            other => {
                return Err(IngressError::new(
                    format!("{path}.role"),
                    format!("`{other}` is not one of user, assistant, system."),
                ));
            }
        };
        let mut marks = Vec::new();
        let at = format!("{path}.content");
        let content = parse_content(get(m, "content"), &at, dropped, &mut marks)?;
        // A message left with no block would be dropped on the way to the provider, changing the
        // conversation: a tool_use would be left without its result. Only a final assistant
        // message, a prefill, may be empty.
        if content.is_empty() && !(role == Role::Assistant && i + 1 == items.len()) {
            return Err(IngressError::new(
                format!("{path}.content"),
                "holds no block Switchyard can send: give a text, image, tool_use or tool_result block.",
            ));
        }
        for (block, ttl) in marks {
            let message = out.messages.len();
            cache.mark(CacheAt::Block { message, block }, ttl);
        }
        out.messages.push(Message { role, content });
    }
    Ok(out)
}

/// The text of a `system` value or of a `role: "system"` message's content: a string, or
/// text blocks joined by blank lines.
pub(super) fn text_of(value: &Value, path: &str) -> Result<String, IngressError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Array(blocks) => {
            let mut parts = Vec::with_capacity(blocks.len());
            for (i, block) in blocks.iter().enumerate() {
                let at = format!("{path}[{i}]");
                let b = block_object(block, &at)?;
                if str_at(b, &at, "type")? != "text" {
                    return Err(IngressError::new(
                        format!("{at}.type"),
                        "must be `text`: only text blocks can be system instructions.",
                    ));
                }
                parts.push(str_at(b, &at, "text")?);
            }
            Ok(parts.join("\n\n"))
        }
        _ => Err(IngressError::new(
            path,
            "must be a string or an array of text blocks.",
        )),
    }
}

fn block_object<'a>(block: &'a Value, path: &str) -> Result<&'a Object, IngressError> {
    match block {
        Value::Object(b) => Ok(b),
        _ => Err(IngressError::new(
            path,
            "must be a content block object with a `type`.",
        )),
    }
}

/// Marks the end of the system prompt when a block of `value` carries `cache_control`. The
/// system prompt is one string, so marks on several of its blocks become one at its end.
pub(super) fn mark_system(value: &Value, cache: &mut CacheHints) {
    if let Value::Array(blocks) = value {
        // The last mark's lifetime is the one that ends at the prompt's end.
        let last = (blocks.iter().rev().filter_map(Value::as_object)).find_map(cache_ttl);
        if let Some(ttl) = last {
            cache.mark(CacheAt::System, ttl);
        }
    }
}

/// A message's `content`: a string, which is one text block, or an array of blocks.
/// `marks` gets the index and lifetime of each block the client marked for caching; a mark on a
/// block that cannot be carried moves to the block before it.
fn parse_content(
    content: Option<&Value>,
    path: &str,
    dropped: &mut Vec<String>,
    marks: &mut Vec<(usize, Option<String>)>,
) -> Result<Vec<ContentBlock>, IngressError> {
    match content {
        Some(Value::String(s)) => Ok(vec![ContentBlock::Text { text: s.clone() }]),
        Some(Value::Array(blocks)) => {
            let mut out = Vec::with_capacity(blocks.len());
            // Tool results' images wait for the message's last tool result: Anthropic wants
            // every result before any other block.
            let mut images = Vec::new();
            for (i, block) in blocks.iter().enumerate() {
                let at = format!("{path}[{i}]");
                let b = block_object(block, &at)?;
                if get(b, "type").and_then(Value::as_str) != Some("tool_result") {
                    out.append(&mut images);
                }
                parse_block(b, &at, dropped, (&mut out, &mut images))?;
                if let (Some(ttl), Some(last)) = (cache_ttl(b), out.len().checked_sub(1)) {
                    marks.retain(|(i, _)| *i != last);
                    marks.push((last, ttl));
                }
            }
            out.append(&mut images);
            Ok(out)
        }
        None => Err(IngressError::new(
            path,
            "is required: a string or an array of content blocks.",
        )),
        Some(_) => Err(IngressError::new(
            path,
            "must be a string or an array of content blocks.",
        )),
    }
}

/// Adds one content block to `out`, a tool result's images to `images`; a block that cannot
/// be carried is named in `dropped`.
fn parse_block(
    b: &Object,
    at: &str,
    dropped: &mut Vec<String>,
    (out, images): (&mut Vec<ContentBlock>, &mut Vec<ContentBlock>),
) -> Result<(), IngressError> {
    let block = match str_at(b, at, "type")? {
        "text" => ContentBlock::Text {
            text: str_at(b, at, "text")?.to_owned(),
        },
        "image" => {
            out.extend(parse_image(b, at, dropped)?);
            return Ok(());
        }
        "tool_use" => ContentBlock::ToolUse {
            id: str_at(b, at, "id")?.to_owned(),
            name: str_at(b, at, "name")?.to_owned(),
            input: match get(b, "input") {
                None => Value::Object(Object::new()),
                Some(input @ Value::Object(_)) => input.clone(),
                Some(_) => {
                    return Err(IngressError::new(
                        format!("{at}.input"),
                        "must be an object.",
                    ));
                }
            },
            signature: None,
        },
        "tool_result" => return parse_tool_result(b, at, dropped, (out, images)),
        "thinking" => ContentBlock::Thinking {
            thinking: str_at(b, at, "thinking")?.to_owned(),
            signature: get(b, "signature")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        },
        "redacted_thinking" => ContentBlock::RedactedThinking {
            data: str_at(b, at, "data")?.to_owned(),
        },
        // Documents, search results, server tools and the like: kinds Switchyard's messages do
        // not hold.
        other => {
            note_dropped(dropped, other);
            return Ok(());
        }
    };
    out.push(block);
    Ok(())
}

/// An `image` block. Switchyard's images are inline data, so a `url` or `file` source is
/// named in `dropped`.
fn parse_image(
    b: &Object,
    at: &str,
    dropped: &mut Vec<String>,
) -> Result<Option<ContentBlock>, IngressError> {
    let source_path = format!("{at}.source");
    let Some(Value::Object(source)) = b.get("source") else {
        return Err(IngressError::new(
            source_path,
            "is required: an object with `type`.",
        ));
    };
    match str_at(source, &source_path, "type")? {
        "base64" => Ok(Some(ContentBlock::Image {
            source: ImageSource {
                kind: "base64".to_owned(),
                media_type: str_at(source, &source_path, "media_type")?.to_owned(),
                data: str_at(source, &source_path, "data")?.to_owned(),
            },
        })),
        other => {
            note_dropped(dropped, &format!("image.source.{other}"));
            Ok(None)
        }
    }
}

/// A `tool_result` block: `content` is a string or blocks whose text is joined by newlines.
/// Switchyard's results are text, so the images inside one go to `images`, image blocks of
/// the same message, which every provider can send beside its result.
fn parse_tool_result(
    b: &Object,
    at: &str,
    dropped: &mut Vec<String>,
    (out, images): (&mut Vec<ContentBlock>, &mut Vec<ContentBlock>),
) -> Result<(), IngressError> {
    let content = match get(b, "content") {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for (i, part) in parts.iter().enumerate() {
                let p_at = format!("{at}.content[{i}]");
                let p = block_object(part, &p_at)?;
                match str_at(p, &p_at, "type")? {
                    "text" => texts.push(str_at(p, &p_at, "text")?),
                    "image" => images.extend(parse_image(p, &p_at, dropped)?),
                    other => note_dropped(dropped, &format!("tool_result.{other}")),
                }
            }
            texts.join("\n")
        }
        Some(_) => {
            return Err(IngressError::new(
                format!("{at}.content"),
                "must be a string or an array of text blocks.",
            ));
        }
    };
    out.push(ContentBlock::ToolResult {
        tool_use_id: str_at(b, at, "tool_use_id")?.to_owned(),
        content,
        is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
    });
    Ok(())
}
