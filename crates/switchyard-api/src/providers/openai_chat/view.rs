//! The parts of one Chat Completions chunk the mapping reads, borrowed from where they were
//! parsed (SPEC R4.4, R4.5): the fast reading (`wire.rs`) and the general `serde_json::Value`
//! path fill in the same view.

use serde_json::Value;

/// `delta.content`: a string, an array of typed parts, or nothing.
#[derive(Clone, Copy)]
pub(super) enum Content<'a> {
    None,
    Text(&'a str),
    Parts(&'a [Value]),
}

/// The parts of one stream chunk the mapping reads, borrowed from where they were parsed:
/// the typed fast path (`wire::Chunk`) or a `serde_json::Value`.
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
