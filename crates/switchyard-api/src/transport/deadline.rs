//! Deadlines and cancellation of one request, and the errors they become.
//! Spec: R6.4, R1.4.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::request::Origin;
use crate::error::{ApiError, ErrorKind};

/// `Some(now + d)`, or no deadline when the clock cannot hold it, as for [`Duration::MAX`].
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
