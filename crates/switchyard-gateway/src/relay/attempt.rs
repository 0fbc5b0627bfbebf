//! One upstream attempt at an answer, read until its first content.
//! Spec: R14.4, R12.1.

use futures_util::StreamExt;
use switchyard_api::{ApiError, ApiStream, ApiStreamChunk, CancellationToken};
use tokio::time::Instant;

use crate::telemetry::AttemptTrace;

/// What an attempt sends.
pub(super) enum Prompt<'a> {
    /// The client's request as it came.
    Client,
    /// The client's request, then this partial answer to continue.
    Continue(&'a str),
}

/// An entry that started answering.
pub(super) struct Attempt {
    /// Its index in the route's chain.
    pub(super) at: usize,
    pub(super) stream: ApiStream,
    /// The chunks read before the first content, and that content.
    pub(super) read: Vec<ApiStreamChunk>,
    pub(super) cancel: CancellationToken,
    /// Its request's estimated input in tokens.
    pub(super) input_tokens: u64,
    /// Whether it was sent the client's own body and streams the provider's own events.
    pub(super) forwarded: bool,
    pub(super) trace: AttemptTrace,
}

impl Attempt {
    /// Reads until the first content chunk, or the stream's end. A failure is the error;
    /// `until` passing is `Err(None)`.
    pub(super) async fn until_content(&mut self, until: Instant) -> Result<(), Option<ApiError>> {
        loop {
            let next = tokio::time::timeout_at(until, self.stream.next()).await;
            match next {
                Err(_) => return Err(None),
                Ok(None) => return Ok(()),
                Ok(Some(Err(error))) => return Err(Some(error)),
                Ok(Some(Ok(chunk))) => {
                    let content = chunk.is_content();
                    self.read.push(chunk);
                    if content {
                        return Ok(());
                    }
                }
            }
        }
    }
}
