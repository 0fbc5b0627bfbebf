//! A Responses answer kept in the store for a later `previous_response_id`: the conversation
//! it answered and the answer assembled from the chunks the client was sent.
//! Spec: R14.1.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::{ApiStreamChunk, Message};
use switchyard_core::limits::Clock;
use switchyard_core::store::{RESPONSE_TTL_MS, ResponseStore, StoredResponse};
use switchyard_core::task::MessageAssembler;
use tokio::task::JoinHandle;

use crate::ingress::GatewayRequest;

/// How long an answer's terminal event waits for its response to be stored: a client
/// continues a response only after it saw it end, so a continuation sent right after finds it.
const KEEP_WAIT: Duration = Duration::from_secs(2);

pub(crate) struct Keeper {
    store: Arc<dyn ResponseStore>,
    clock: Clock,
    /// The largest conversation stored, as JSON: one larger could not have been sent whole.
    cap: usize,
    id: String,
    route: String,
    system_prompt: String,
    messages: Vec<Message>,
    answer: MessageAssembler,
}

impl Keeper {
    /// The keeper in `store` of the answer to `request`, for a conversation of at most `cap` bytes.
    pub(crate) fn new(
        (store, cap): (&Arc<dyn ResponseStore>, usize),
        id: &str,
        request: &GatewayRequest,
    ) -> Self {
        Self {
            store: Arc::clone(store),
            clock: Clock::system(),
            cap,
            id: format!("resp_{id}"),
            route: request.model.clone(),
            system_prompt: request.system_prompt.clone(),
            messages: request.messages.clone(),
            answer: MessageAssembler::default(),
        }
    }

    pub(crate) fn sent(&mut self, chunk: &ApiStreamChunk) {
        self.answer.push(chunk);
    }

    /// The answer ended complete: its response is written in a task of its own. A store error,
    /// or a conversation over the cap, is logged: the answer is not the store's to fail.
    pub(crate) fn keep(self) -> Option<JoinHandle<()>> {
        let now = self.clock.now_ms();
        let response = StoredResponse {
            id: self.id,
            created_ms: now,
            // Expired rows are deleted when a later response is stored.
            expires_ms: now.saturating_add(RESPONSE_TTL_MS),
            route: self.route,
            system_prompt: self.system_prompt,
            messages: self.messages,
            answer: self.answer.finish().0,
        };
        let size = serde_json::to_vec(&response.messages).map_or(usize::MAX, |v| v.len())
            + serde_json::to_vec(&response.answer).map_or(usize::MAX, |v| v.len())
            + response.system_prompt.len();
        if size > self.cap {
            tracing::warn!(id = %response.id, bytes = size,
                "the response is not stored: its conversation is larger than the body cap");
            return None;
        }
        let store = self.store;
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(runtime.spawn(async move {
            if let Err(e) = store.store_response(&response).await {
                tracing::warn!(id = %response.id, "the response could not be stored: {e}");
            }
        }))
    }
}

/// Waits for `write`, a [`Keeper::keep`] handle, up to [`KEEP_WAIT`].
pub(crate) async fn settle(write: Option<JoinHandle<()>>) {
    if let Some(write) = write
        && tokio::time::timeout(KEEP_WAIT, write).await.is_err()
    {
        tracing::warn!("the response is still being stored; its end is sent without waiting");
    }
}
