//! The gateway's stored Responses (SPEC R14.1; GATEWAY.md R14.1): a Responses answer is kept
//! in the store unless the request said `store: false` — its response id, the conversation it
//! answered (system prompt and messages, an earlier chain already resolved), the answer as one
//! assistant message assembled from the chunks the client was sent (text, thinking with its
//! signatures or encrypted content, tool calls), the route and the time — and a later request's
//! `previous_response_id` gets that conversation and answer before its own `input`.
//!
//! When it is written: in a task of its own once the answer ended, and the answer's terminal
//! event (`response.completed`, or the whole response) waits for that write up to
//! [`KEEP_WAIT`]. A client continues a response only after it saw it end, so a
//! `previous_response_id` sent right after finds it; a store slower than that delays nothing
//! further (the write goes on, and a continuation sent before it lands gets the 404).
//!
//! Bounds: a conversation and answer larger, as stored JSON, than the gateway's body cap is
//! not stored (a continuation of it could not have been sent whole either), and a stored
//! response expires after [`RESPONSE_TTL_MS`] (30 days, as OpenAI keeps them); expired rows are
//! deleted when a later response is stored.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::{ApiStreamChunk, Message};
use switchyard_core::store::{RESPONSE_TTL_MS, StoreError, StoredResponse, TaskStore};
use switchyard_core::task::MessageAssembler;
use tokio::task::JoinHandle;

use super::state::Layer;
use crate::ingress::{Dialect, GatewayRequest};

/// How long an answer's terminal event waits for its response to be stored.
pub(crate) const KEEP_WAIT: Duration = Duration::from_secs(2);

/// A request's `previous_response_id` that cannot be answered.
#[derive(Debug)]
pub(crate) enum Unanswerable {
    /// No response is stored under the id (never, `store: false`, too large, or expired).
    NotFound(String),
    /// The store failed.
    Store(StoreError),
}

/// One Responses answer on its way to the store: the conversation it answers and the answer
/// so far.
pub(crate) struct Keeper {
    store: Arc<dyn TaskStore>,
    clock: switchyard_core::limits::Clock,
    cap: usize,
    id: String,
    route: String,
    system_prompt: String,
    messages: Vec<Message>,
    answer: MessageAssembler,
}

impl Layer {
    /// The keeper of the answer to `request` (gateway request `id`): `None` unless it is a
    /// Responses request that did not say `store: false`.
    pub(crate) fn keeper(
        &self,
        id: &str,
        dialect: Dialect,
        request: &GatewayRequest,
    ) -> Option<Keeper> {
        (dialect == Dialect::Responses && request.store).then(|| Keeper {
            store: Arc::clone(&self.store),
            clock: self.clock,
            cap: self.response_cap,
            id: format!("resp_{id}"),
            route: request.model.clone(),
            system_prompt: request.system_prompt.clone(),
            messages: request.messages.clone(),
            answer: MessageAssembler::default(),
        })
    }

    /// Puts the stored conversation and answer `request.previous_response_id` names before
    /// its own messages. Its own system prompt is kept and the stored one is not carried
    /// over (OpenAI: "the instructions from a previous response will not be carried over").
    /// A response stored under another route is continued all the same.
    pub(crate) async fn resolve_previous(
        &self,
        request: &mut GatewayRequest,
    ) -> Result<(), Unanswerable> {
        let Some(previous) = request.previous_response_id.as_deref() else {
            return Ok(());
        };
        let stored = (self.store)
            .stored_response(previous, self.clock.now_ms())
            .await
            .map_err(Unanswerable::Store)?
            .ok_or_else(|| Unanswerable::NotFound(previous.to_owned()))?;
        let mut messages = stored.messages;
        if !stored.answer.content.is_empty() {
            messages.push(stored.answer);
        }
        messages.append(&mut request.messages);
        request.messages = messages;
        Ok(())
    }
}

impl Keeper {
    /// One chunk the client was sent.
    pub(crate) fn sent(&mut self, chunk: &ApiStreamChunk) {
        self.answer.push(chunk);
    }

    /// The answer ended complete: its response is written in a task of its own (a store
    /// error, or a body over the cap, is logged: the answer is not the store's to fail). The
    /// handle ends when the write did.
    pub(crate) fn keep(self) -> Option<JoinHandle<()>> {
        let now = self.clock.now_ms();
        let response = StoredResponse {
            id: self.id,
            created_ms: now,
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

/// Waits for `write` (a [`Keeper::keep`] handle) up to [`KEEP_WAIT`].
pub(crate) async fn settle(write: Option<JoinHandle<()>>) {
    if let Some(write) = write
        && tokio::time::timeout(KEEP_WAIT, write).await.is_err()
    {
        tracing::warn!("the response is still being stored; its end is sent without waiting");
    }
}
