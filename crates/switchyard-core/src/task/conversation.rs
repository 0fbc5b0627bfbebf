//! [`Conversation`]: the history as the request step sees it, the stored messages (never cut)
//! and the range hidden from the model (SPEC R8.4).

use switchyard_api::Message;

use crate::context::{DeletedRange, messages_for_request};

/// The conversation as the request step sees it: the stored history (never cut) and the range
/// hidden from the model (SPEC R8.4).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Conversation {
    pub api_conversation_history: Vec<Message>,
    pub conversation_history_deleted_range: Option<DeletedRange>,
}

impl Conversation {
    /// The messages the model is sent: the deleted range hidden, tool calls paired, earlier
    /// copies of re-read files replaced (SPEC R8.4–R8.6).
    pub fn visible(&self) -> Vec<Message> {
        messages_for_request(
            &self.api_conversation_history,
            self.conversation_history_deleted_range,
        )
    }
}
