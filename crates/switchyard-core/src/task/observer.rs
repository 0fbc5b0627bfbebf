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

/// Receives a turn's events and changes in order, each awaited before the turn goes on.
///
/// An implementation can so make each change durable first: the deleted range before the
/// request that uses it, each message before the next request, each event before it is shown.
pub(crate) trait TurnObserver: Send {
    /// One event, in the order it happened.
    fn event(&mut self, event: TaskEvent) -> BoxFuture<'_, ()>;

    /// Truncation changed the deleted range; called before the request that uses it is sent.
    fn range_changed(&mut self, _range: Option<DeletedRange>) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    /// Messages were appended to the history; called before the next request is sent.
    ///
    /// An error ends the turn at once, without a retry or an event: the caller reports it.
    fn history_changed<'a>(
        &'a mut self,
        _conversation: &'a Conversation,
    ) -> BoxFuture<'a, Result<(), ApiError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// The store failed on the request step's own path, such as a cooldown or spend.
    ///
    /// Returns the error that ends the step; an observer that saves the turn keeps `e` so the
    /// failure is reported as the store's, never as the provider's.
    fn store_failed(&mut self, e: StoreError) -> ApiError {
        ApiError::new(ErrorKind::Server, e.to_string())
    }

    /// A change of the turn could not be saved; no `error` event is added for the step's error.
    fn failed(&self) -> bool {
        false
    }
}

/// A closure receives the events; the history and the range stay in memory.
impl<F: FnMut(TaskEvent) + Send> TurnObserver for F {
    fn event(&mut self, event: TaskEvent) -> BoxFuture<'_, ()> {
        self(event);
        Box::pin(std::future::ready(()))
    }
}
