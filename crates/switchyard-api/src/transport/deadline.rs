//! Deadlines and cancellation of one request (SPEC R6.4, R1.4): when a deadline falls, running
//! a future until it, and the errors a passed deadline or a cancellation becomes.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::request::Origin;
use crate::error::{ApiError, ErrorKind};

/// `Some(now + d)`, or `None` (no deadline) when that is past what the clock can hold
/// ([`Duration::MAX`] means "no deadline").
pub(crate) fn deadline_after(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// Runs `fut` until `deadline`: `None` when the deadline passed first.
pub(crate) async fn before<T>(
    deadline: Option<Instant>,
    fut: impl Future<Output = T>,
) -> Option<T> {
    match deadline {
        Some(at) => tokio::time::timeout_at(at, fut).await.ok(),
        None => Some(fut.await),
    }
}

pub(crate) fn first_content_timeout(limit: Duration, origin: &Origin) -> ApiError {
    ApiError::new(
        ErrorKind::Timeout,
        format!(
            "no content arrived within {} s of the request",
            limit.as_secs()
        ),
    )
    .with_origin(&origin.provider_id, &origin.model_id)
}

pub(crate) fn idle_timeout(limit: Duration, origin: &Origin) -> ApiError {
    ApiError::new(
        ErrorKind::Timeout,
        format!(
            "the stream stalled: nothing arrived for {} s",
            limit.as_secs()
        ),
    )
    .with_origin(&origin.provider_id, &origin.model_id)
}

pub(crate) fn cancelled(origin: &Origin) -> ApiError {
    ApiError::new(ErrorKind::Cancelled, "the request was cancelled")
        .with_origin(&origin.provider_id, &origin.model_id)
}
