//! Images sent inline as `data:` URLs, read the same way for Chat Completions and Responses.
//! Spec: R14.1.

use switchyard_api::message::ImageSource;

/// `data:MEDIA_TYPE[;PARAM…];base64,DATA` as a base64 image source; `None` for anything else.
pub(crate) fn data_url(url: &str) -> Option<ImageSource> {
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
