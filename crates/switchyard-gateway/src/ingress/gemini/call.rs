//! What a Gemini request's URL says: the model it names, and whether and how it streams.
//! Spec: R14.12.

use super::super::fields::percent_decoded;
use super::super::request::IngressError;

/// A Gemini request's URL, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Call {
    pub(super) model: String,
    /// `:streamGenerateContent`.
    pub(super) stream: bool,
    /// `alt=sse`: server-sent events rather than one JSON array.
    pub(super) sse: bool,
}

/// Reads `target`, a path and query such as
/// `/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse`. Nothing of the query but
/// `alt` is read, since `key` may hold a key.
pub(super) fn read(target: &str) -> Result<Call, IngressError> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let named = path.split_once("/models/").map_or("", |(_, rest)| rest);
    // A route name may hold a colon, as `ollama/qwen3:8b` does: the method follows the last.
    let (model, method) = named.rsplit_once(':').unwrap_or((named, ""));
    let model = percent_decoded(model);
    if model.is_empty() {
        return Err(IngressError::new(
            "model",
            "the path names no model: send `models/MODEL:generateContent`.",
        ));
    }
    Ok(Call {
        model,
        stream: method == "streamGenerateContent",
        sse: query.split('&').any(|pair| pair == "alt=sse"),
    })
}
