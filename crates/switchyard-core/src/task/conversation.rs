//! `Conversation`: the history as the request step sees it.
//! Spec: R8.4, R8.5, R8.6.

use switchyard_api::Message;

use crate::context::{DeletedRange, messages_for_request};

/// The stored history, never cut, and the range hidden from the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Conversation {
    pub api_conversation_history: Vec<Message>,
    pub conversation_history_deleted_range: Option<DeletedRange>,
}

impl Conversation {
    /// The messages the model is sent, with the deleted range and re-read files left out.
    pub fn visible(&self) -> Vec<Message> {
        messages_for_request(
            &self.api_conversation_history,
            self.conversation_history_deleted_range,
        )
    }
}
