//! Images sent inline as `data:` URLs, read the same way for Chat Completions and Responses.
//! Spec: R14.1.

use serde_json::{Map, Value};
use switchyard_api::message::ImageSource;

/// The lifetime a block's `cache_control` asks for, `Some(None)` for the default, `None` without
/// one; a tool result's mark may sit on a part of its content.
pub(crate) fn cache_ttl(block: &Map<String, Value>) -> Option<Option<String>> {
    if let Some(Value::Array(parts)) = block.get("content") {
        if let Some(ttl) = (parts.iter().filter_map(Value::as_object)).find_map(cache_ttl) {
            return Some(ttl);
        }
    }
    let mark = block.get("cache_control").filter(|m| !m.is_null())?;
    Some(mark.get("ttl").and_then(Value::as_str).map(str::to_owned))
}

/// What an image part's URL holds.
#[derive(Debug, PartialEq)]
pub(crate) enum Inline {
    Image(ImageSource),
    /// A base64 `data:` URL of a media type that is not an image, such as a PDF.
    NotImage(String),
    /// Any other URL.
    Other,
}

/// `url` read as an inline image: a base64 `data:` URL of an `image/` media type.
pub(crate) fn inline_image(url: &str) -> Inline {
    match data_url(url) {
        None => Inline::Other,
        Some(source) if source.media_type.starts_with("image/") => Inline::Image(source),
        Some(source) => Inline::NotImage(source.media_type),
    }
}

/// The error of an image part whose data URL is not an image: sent as one, a provider would
/// refuse it or read it wrongly, and dropped, the model would answer without the file.
pub(crate) fn not_an_image(path: &str, media_type: &str) -> super::request::IngressError {
    super::request::IngressError::new(
        path,
        format!(
            "is a data URL of `{media_type}`, which is not an image: send an image (image/png, image/jpeg, image/gif or image/webp), or the file's text as a text part."
        ),
    )
}

/// `data:MEDIA_TYPE[;PARAM…];base64,DATA` as a base64 source; `None` for anything else.
fn data_url(url: &str) -> Option<ImageSource> {
    let rest = url.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let header = header.strip_suffix(";base64")?;
    let media_type = header.split(';').next()?.trim();
    // Trimmed before the check: data of only spaces is no image, and re-encoded it would be an
    // empty data URL the next parse refuses.
    let data = data.trim();
    if media_type.is_empty() || data.is_empty() {
        return None;
    }
    Some(ImageSource {
        kind: "base64".to_owned(),
        media_type: media_type.to_ascii_lowercase(),
        data: data.to_owned(),
    })
}
