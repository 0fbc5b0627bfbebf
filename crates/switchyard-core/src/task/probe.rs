//! Sending one request and probing its stream up to the first content chunk.
//! Spec: R5.3, R6.4, R9.4, R12.3.

use std::sync::Arc;

use futures_util::StreamExt;
use switchyard_api::handler::RetryStatus;
use switchyard_api::{
    ApiError, ApiStream, ApiStreamChunk, CancellationToken, Deadlines, ErrorKind, RateLimitHeaders,
    RequestOptions, ResponseObserver,
};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::events::TaskEvent;
use super::observer::TurnObserver;

pub(super) struct Reports {
    pub retries: UnboundedReceiver<RetryStatus>,
    pub heard: UnboundedReceiver<RateLimitHeaders>,
}

pub(super) fn request_options(
    cancel: &CancellationToken,
    deadlines: Deadlines,
    fail_fast: bool,
    hear_limits: bool,
    bounds: switchyard_api::StreamBounds,
) -> (RequestOptions, Reports) {
    let (retry_tx, retries) = unbounded_channel();
    let (heard_tx, heard) = unbounded_channel();
    let on_response: Option<ResponseObserver> = hear_limits.then(|| {
        Arc::new(move |_status: u16, headers: &reqwest::header::HeaderMap| {
            if let Some(found) =
                switchyard_api::rate_limit_headers(headers, std::time::SystemTime::now())
            {
                let _ = heard_tx.send(found);
            }
        }) as ResponseObserver
    });
    let options = RequestOptions {
        cancel: cancel.clone(),
        on_retry: Some(Arc::new(move |status: RetryStatus| {
            let _ = retry_tx.send(status);
        })),
        deadlines,
        fail_fast,
        on_response,
        bounds,
        ..RequestOptions::default()
    };
    (options, Reports { retries, heard })
}

/// Reads `stream` up to its first content chunk, holding the usage chunks before it.
pub(super) async fn probe(
    mut stream: ApiStream,
    retries: &mut UnboundedReceiver<RetryStatus>,
    observer: &mut dyn TurnObserver,
) -> Result<ApiStream, ApiError> {
    let mut held: Vec<ApiStreamChunk> = Vec::new();
    loop {
        let next = tokio::select! {
            biased;
            Some(status) = retries.recv() => {
                observer.event(TaskEvent::RetryStatus {
                    attempt: status.attempt,
                    max_attempts: status.max_attempts,
                    delay_seconds: status.delay.as_secs_f64(),
                    error_snippet: status.error.to_string().chars().take(200).collect(),
                }).await;
                continue;
            }
            next = stream.next() => next,
        };
        match next {
            None => {
                return Err(ApiError::new(
                    ErrorKind::Server,
                    "the provider returned an empty response",
                ));
            }
            Some(Err(e)) => return Err(e),
            Some(Ok(chunk)) => {
                let content = chunk.is_content();
                held.push(chunk);
                if content {
                    return Ok(with_held(held, stream));
                }
            }
        }
    }
}

fn with_held(held: Vec<ApiStreamChunk>, stream: ApiStream) -> ApiStream {
    Box::pin(futures_util::stream::iter(held.into_iter().map(Ok)).chain(stream))
}
