//! The parts of one Chat Completions chunk the mapping reads, filled by either reading.
//! Spec: R4.4, R4.5.

use serde_json::Value;

/// `delta.content`: a string, an array of typed parts, or nothing.
#[derive(Clone, Copy)]
pub(super) enum Content<'a> {
    None,
    Text(&'a str),
    Parts(&'a [Value]),
}

/// The parts of one stream chunk the mapping reads, borrowed from where they were parsed.
pub(super) struct ChunkView<'a> {
    /// `choices[0]` exists; the delta fields and `finish_reason` are read from it.
    pub(super) has_choice: bool,
    pub(super) reasoning_content: Option<&'a str>,
    pub(super) reasoning: Option<&'a str>,
    pub(super) reasoning_details: Option<&'a Value>,
    pub(super) content: Content<'a>,
    pub(super) tool_calls: &'a [Value],
    pub(super) finish_reason: Option<&'a str>,
    pub(super) usage: Option<&'a Value>,
}

/// A chunk's usage object, wherever the server put it: `usage`, else Groq's `x_groq.usage`, else
/// Moonshot Kimi's `choices[0].usage`; the first that is an object.
pub(super) fn usage_of<'a>(
    usage: Option<&'a Value>,
    x_groq: Option<&'a Value>,
    choice_usage: Option<&'a Value>,
) -> Option<&'a Value> {
    [usage, x_groq.and_then(|x| x.get("usage")), choice_usage]
        .into_iter()
        .flatten()
        .find(|u| u.is_object())
}
