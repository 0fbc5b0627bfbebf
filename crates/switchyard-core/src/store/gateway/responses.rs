//! The gateway's stored Responses, which a later `previous_response_id` continues.
//! Spec: R14.1, R14.4.

use switchyard_api::Message;

use crate::store::StoreFuture;

/// How long a stored response can be continued: 30 days, as OpenAI keeps them.
pub const RESPONSE_TTL_MS: i64 = 30 * 24 * 60 * 60 * 1000;

/// One stored Responses answer, at Unix ms times of the gateway's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    /// The response id the client saw, `resp_…`; unique on a store.
    pub id: String,
    /// When the answer ended.
    pub created_ms: i64,
    /// After this it is not found, and it is deleted when a later response is stored.
    pub expires_ms: i64,
    /// The model name the client sent.
    pub route: String,
    /// The system prompt the answer was given: instructions and system items, joined.
    pub system_prompt: String,
    /// The conversation it answered, oldest first, an earlier chain included.
    pub messages: Vec<Message>,
    /// The answer: one assistant message.
    pub answer: Message,
}

/// Where the gateway's stored responses are kept, on the same storage as the tasks.
pub trait ResponseStore: Send + Sync {
    /// Stores `response` after deleting expired rows; a taken id is a conflict.
    fn store_response<'a>(&'a self, response: &'a StoredResponse) -> StoreFuture<'a, ()>;

    /// The response stored under `id` that has not expired at `now_ms`.
    fn stored_response<'a>(
        &'a self,
        id: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<StoredResponse>>;
}
