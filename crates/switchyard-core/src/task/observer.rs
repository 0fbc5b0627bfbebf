//! `TurnObserver`: what the request step and the request loop report as they go.
//! Spec: R6.3, R10.2.

use std::future::Future;
use std::pin::Pin;

use switchyard_api::{ApiError, ErrorKind};

use super::conversation::Conversation;
use super::events::TaskEvent;
use crate::context::DeletedRange;
use crate::store::StoreError;

/// A boxed future for the small async traits of the task.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Receives a turn's events and changes in order, each awaited so it can be made durable first.
pub(crate) trait TurnObserver: Send {
    fn event(&mut self, event: TaskEvent) -> BoxFuture<'_, ()>;

    /// Truncation changed the deleted range; called before the request that uses it is sent.
    fn range_changed(&mut self, _range: Option<DeletedRange>) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    /// Messages were appended; an error ends the turn at once, the caller reporting it.
    fn history_changed<'a>(
        &'a mut self,
        _conversation: &'a Conversation,
    ) -> BoxFuture<'a, Result<(), ApiError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// The store failed on the request step's path; reported as the store's, not the provider's.
    fn store_failed(&mut self, e: StoreError) -> ApiError {
        ApiError::new(ErrorKind::Server, e.to_string())
    }

    fn failed(&self) -> bool {
        false
    }
}

impl<F: FnMut(TaskEvent) + Send> TurnObserver for F {
    fn event(&mut self, event: TaskEvent) -> BoxFuture<'_, ()> {
        self(event);
        Box::pin(std::future::ready(()))
    }
}
