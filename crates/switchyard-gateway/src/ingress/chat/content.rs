//! One Chat Completions message's `content`: a string, or an array of text, image and refusal
//! parts. Parts that cannot be carried are dropped under their type name.
//! Spec: R14.1.

use serde_json::Value;
use switchyard_api::ContentBlock;

use super::super::content::{Inline, inline_image, not_an_image};
use super::super::fields::{
    as_object, element, member, note_dropped, opt_str, req_str, wrong_kind,
};
use super::super::request::IngressError;

/// Which parts a role's content may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Parts {
    /// `user`: text and images.
    User,
    /// `assistant`: text and refusals.
    Assistant,
    /// `system`, `developer`, `tool`: text only.
    Text,
}

/// The blocks of `content` at `path` for a message whose parts are `allowed`; absent or
/// `null` is none.
pub(super) fn blocks(
    content: Option<&Value>,
    path: &str,
    allowed: Parts,
    dropped: &mut Vec<String>,
) -> Result<Vec<ContentBlock>, IngressError> {
    let mut out = Vec::new();
    match content {
        None => {}
        Some(Value::String(text)) => push_text(&mut out, text),
        Some(Value::Array(parts)) => {
            for (i, part) in parts.iter().enumerate() {
                let block = one_part(part, &element(path, i), allowed, dropped)?;
                match block {
                    Some(ContentBlock::Text { text }) => push_text(&mut out, &text),
                    Some(block) => out.push(block),
                    None => {}
                }
            }
        }
        Some(other) => return Err(wrong_kind(path, "a string or an array of parts", other)),
    }
    Ok(out)
}

/// The text of `content`, its text parts joined by a newline, for roles that hold text only.
pub(super) fn text(
    content: Option<&Value>,
    path: &str,
    dropped: &mut Vec<String>,
) -> Result<String, IngressError> {
    let parts = blocks(content, path, Parts::Text, dropped)?;
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    Ok(texts.join("\n"))
}

/// Appends `text` as a text block unless it is empty: Anthropic rejects empty text blocks
/// (NousResearch/hermes-agent#11906).
fn push_text(out: &mut Vec<ContentBlock>, text: &str) {
    if !text.is_empty() {
        out.push(ContentBlock::Text {
            text: text.to_owned(),
        });
    }
}

/// One part, or `None` when it cannot be carried.
fn one_part(
    part: &Value,
    path: &str,
    allowed: Parts,
    dropped: &mut Vec<String>,
) -> Result<Option<ContentBlock>, IngressError> {
    let obj = as_object(part, path)?;
    let kind = req_str(obj, "type", path)?;
    match (kind, allowed) {
        ("text", _) => {
            let text = opt_str(obj, "text", path)?.ok_or_else(|| {
                IngressError::new(member(path, "text"), "is required in a text part.")
            })?;
            Ok(Some(ContentBlock::Text {
                text: text.to_owned(),
            }))
        }
        ("refusal", Parts::Assistant) => {
            Ok(
                opt_str(obj, "refusal", path)?.map(|text| ContentBlock::Text {
                    text: text.to_owned(),
                }),
            )
        }
        ("image_url", Parts::User) => {
            image(obj.get("image_url"), &member(path, "image_url"), dropped)
        }
        (other, _) => {
            note_dropped(dropped, other);
            Ok(None)
        }
    }
}

/// An `image_url` part's image, given as `{"url", "detail"}` or as the URL alone as some
/// clients send it. A base64 `data:` URL becomes an image block; any other URL is dropped.
fn image(
    value: Option<&Value>,
    path: &str,
    dropped: &mut Vec<String>,
) -> Result<Option<ContentBlock>, IngressError> {
    let url = match value {
        Some(Value::String(url)) => url.as_str(),
        Some(Value::Object(obj)) => req_str(obj, "url", path)?,
        Some(other) => return Err(wrong_kind(path, "an object with a `url`", other)),
        None => return Err(IngressError::new(path, "is required in an image_url part.")),
    };
    match inline_image(url) {
        Inline::Image(source) => Ok(Some(ContentBlock::Image { source })),
        Inline::NotImage(media_type) => Err(not_an_image(path, &media_type)),
        Inline::Other => {
            note_dropped(dropped, "image_url");
            Ok(None)
        }
    }
}
