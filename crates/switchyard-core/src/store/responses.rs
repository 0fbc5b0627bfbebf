//! The gateway's stored Responses (SPEC R14.1, R14.4): one [`StoredResponse`] per Responses
//! answer `switchyard serve` gave unless the request said `store: false` — the conversation it
//! answered (system prompt and messages, any earlier chain already resolved) and the answer as
//! an assistant message — so a later request's `previous_response_id` is answered from it; and
//! [`ResponseStore`], the trait every store backend implements beside
//! [`crate::store::TaskStore`] on the same storage. Rows expire ([`StoredResponse::expires_ms`])
//! and are deleted lazily, when a later response is stored.

use switchyard_api::Message;

use super::error::StoreFuture;

/// How long a stored response can be continued: 30 days, as OpenAI keeps them.
pub const RESPONSE_TTL_MS: i64 = 30 * 24 * 60 * 60 * 1000;

/// One stored Responses answer (times in Unix milliseconds, as the gateway's clock read them).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    /// The response id the client saw (`resp_…`); unique on a store.
    pub id: String,
    /// When the answer ended.
    pub created_ms: i64,
    /// After this it is not found (and is deleted when a later response is stored).
    pub expires_ms: i64,
    /// The model name the client sent (a route, `PROVIDER/MODEL`, …).
    pub route: String,
    /// The system prompt the answer was given (instructions and system items, joined).
    pub system_prompt: String,
    /// The conversation it answered, oldest first (an earlier chain included).
    pub messages: Vec<Message>,
    /// The answer: one assistant message (text, thinking with its signatures or encrypted
    /// content, tool calls).
    pub answer: Message,
}

/// Where the gateway's stored responses are kept: implemented by every store backend on the
/// same storage as its tasks (a supertrait of [`crate::store::TaskStore`]).
pub trait ResponseStore: Send + Sync {
    /// Stores `response`, first deleting every row expired at its `created_ms`. An id already
    /// stored: [`StoreError::Conflict`](super::StoreError::Conflict), and it is not replaced.
    fn store_response<'a>(&'a self, response: &'a StoredResponse) -> StoreFuture<'a, ()>;

    /// The response stored under `id` that has not expired at `now_ms`; `None` otherwise.
    fn stored_response<'a>(
        &'a self,
        id: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<StoredResponse>>;
}
