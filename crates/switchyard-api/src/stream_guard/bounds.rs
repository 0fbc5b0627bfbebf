//! The size bounds of one streamed answer, and the error of passing one.
//! Spec: R4.0b.

use crate::error::{ApiError, ErrorKind};

/// The default bound on one tool call's arguments, in bytes.
pub const DEFAULT_MAX_TOOL_ARGUMENTS_BYTES: usize = 4 << 20;
/// The default bound on one answer's text, reasoning and tool-call arguments together.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 64 << 20;

/// The error code of an answer or line past its bound, never retried.
pub const TOO_LARGE: &str = "too_large";

/// Size bounds of one streamed answer in bytes, set from `[limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamBounds {
    pub max_tool_arguments_bytes: usize,
    pub max_answer_bytes: usize,
    /// One line, event, frame or document of the streamed body; the wire decoders enforce it.
    pub max_line_bytes: usize,
}

impl Default for StreamBounds {
    fn default() -> Self {
        Self {
            max_tool_arguments_bytes: DEFAULT_MAX_TOOL_ARGUMENTS_BYTES,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            max_line_bytes: crate::wire::DEFAULT_MAX_LINE_BYTES,
        }
    }
}

pub fn size_in_words(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The error of a stream past one of its bounds: `what` passed `limit` bytes, raised by the
/// `[limits]` setting `setting`.
pub fn too_large(what: &str, limit: usize, setting: &str) -> ApiError {
    ApiError::new(
        ErrorKind::Decode,
        format!(
            "{what} passed the {} limit; if the answer really is this long, raise `{setting}` \
             under [limits] in the configuration (or -c limits.{setting}=BYTES)",
            size_in_words(limit)
        ),
    )
    .with_code(TOO_LARGE)
    .permanent()
}

/// The error of one tool call's arguments past `limit` bytes; `name` once it has arrived.
pub(crate) fn arguments_too_large(name: Option<&str>, limit: usize) -> ApiError {
    let what = match name {
        Some(name) => format!("the arguments of the tool call `{name}`"),
        None => "the arguments of a tool call whose name has not arrived".to_owned(),
    };
    too_large(&what, limit, "max_tool_arguments_bytes")
}

pub(crate) fn answer_too_large(limit: usize) -> ApiError {
    too_large(
        "the answer (its text, reasoning and tool-call arguments)",
        limit,
        "max_answer_bytes",
    )
}

impl From<crate::wire::WireError> for ApiError {
    /// A line past its cap is `too_large`, never retried; a corrupt frame is a decode error.
    fn from(e: crate::wire::WireError) -> Self {
        match e {
            crate::wire::WireError::LineTooLong { limit } => {
                too_large("one line of the response", limit, "max_line_bytes")
            }
            other => ApiError::decode(other.to_string()),
        }
    }
}
