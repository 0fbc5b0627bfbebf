//! One request's record in the store (SPEC R14.4, R14.9, R9.2; issue 23 item 6): the provider
//! and model that answered, the tokens summed from its usage chunks and their exact cost at
//! that model's prices (the task layer's `UsageTotals`), the first-token time, the duration,
//! and how it ended — ok, an error's kind, or cancelled (the client went away) — under the
//! route and the request id. The answer's stream is watched as it passes (a field update per
//! usage chunk, nothing per text chunk), and the row is written in a task of its own once the
//! answer ended: never between two chunks.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use switchyard_api::{ApiError, ApiStream, ApiStreamChunk, ChainEntry, ErrorKind, ModelInfo};
use switchyard_core::cost::UsageTotals;
use switchyard_core::store::{RequestOutcome, RequestRecord, TaskStore};
use tokio::time::Instant;

use super::state::Layer;
use crate::ingress::{Dialect, GatewayRequest};

/// One request's record until its answer ends. Dropped before (the client went away while
/// the request waited or before its first content), it is recorded as cancelled.
pub(crate) struct Trip {
    store: Arc<dyn TaskStore>,
    arrived: Instant,
    /// `None` once written.
    record: Option<RequestRecord>,
    /// The request's thinking budget, when the client set one (it prices thinking output).
    thinking_budget: Option<u64>,
}

impl Layer {
    /// The record of `request`, arrived now in `dialect` under the gateway's request `id`.
    pub(crate) fn trip(&self, id: &str, dialect: Dialect, request: &GatewayRequest) -> Trip {
        Trip {
            store: Arc::clone(&self.store),
            arrived: Instant::now(),
            record: Some(RequestRecord {
                id: id.to_owned(),
                started_ms: self.clock.now_ms(),
                route: request.model.clone(),
                dialect: dialect_name(dialect).to_owned(),
                stream: request.stream,
                provider: None,
                model: None,
                input_tokens: 0,
                output_tokens: 0,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                cost_usd: None,
                first_token_ms: None,
                duration_ms: 0,
                outcome: RequestOutcome::Ok,
            }),
            thinking_budget: request.overrides.thinking_budget_tokens,
        }
    }
}

impl Trip {
    /// No entry answered: the request ends with `error` (recorded as cancelled when it is a
    /// cancellation).
    pub(crate) fn failed(mut self, error: &ApiError) {
        self.write(outcome_of(error));
    }

    /// `entry` answered: `read` are the chunks read up to its first content, `stream` the
    /// rest. Gives the stream to relay, which records the request when it ends (its end, its
    /// error, or being dropped before either: cancelled).
    pub(crate) fn answered(
        mut self,
        entry: &ChainEntry,
        read: &[ApiStreamChunk],
        stream: ApiStream,
    ) -> ApiStream {
        let first_token_ms = Some(self.elapsed_ms());
        if let Some(record) = self.record.as_mut() {
            record.provider = Some(entry.provider_id.clone());
            record.model = Some(entry.model_id.clone());
            record.first_token_ms = first_token_ms;
        }
        let model = entry.handler.get_model();
        let mut watched = Watched {
            stream,
            usage: UsageTotals::default(),
            thinking_budget: self.thinking_budget.unwrap_or(model.thinking_budget_tokens),
            info: model.info,
            trip: Some(self),
        };
        for chunk in read {
            watched.saw(chunk);
        }
        Box::pin(watched)
    }

    fn elapsed_ms(&self) -> i64 {
        i64::try_from(self.arrived.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    /// Writes the record with `outcome`, once, in a task of its own (a store error is
    /// logged: the answer is not the record's to fail).
    fn write(&mut self, outcome: RequestOutcome) {
        let duration_ms = self.elapsed_ms();
        let Some(mut record) = self.record.take() else {
            return;
        };
        record.duration_ms = duration_ms;
        record.outcome = outcome;
        let store = Arc::clone(&self.store);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(id = %record.id, "the request was not recorded: no runtime");
            return;
        };
        runtime.spawn(async move {
            if let Err(e) = store.record_request(&record).await {
                tracing::warn!(id = %record.id, "the request could not be recorded: {e}");
            }
        });
    }
}

impl Drop for Trip {
    fn drop(&mut self) {
        self.write(RequestOutcome::Cancelled);
    }
}

/// An answer's stream, watched for its usage and its end.
struct Watched {
    stream: ApiStream,
    usage: UsageTotals,
    info: ModelInfo,
    thinking_budget: u64,
    /// The record, until the answer ended.
    trip: Option<Trip>,
}

impl Watched {
    fn saw(&mut self, chunk: &ApiStreamChunk) {
        if let ApiStreamChunk::Usage(usage) = chunk {
            self.usage.add(usage);
        }
    }

    /// The answer ended with `outcome`: the tokens and their cost (SPEC R9.2; unknown without
    /// usage or prices) go into the record, which is written.
    fn end(&mut self, outcome: RequestOutcome) {
        let Some(mut trip) = self.trip.take() else {
            return;
        };
        let u = &self.usage;
        if let Some(record) = trip.record.as_mut() {
            record.input_tokens = u.input_tokens;
            record.output_tokens = u.output_tokens;
            record.cache_read_tokens = u.cache_read_tokens;
            record.cache_write_tokens = u.cache_write_tokens;
            record.cost_usd = u
                .reported
                .then(|| u.cost_usd(&self.info, self.thinking_budget))
                .flatten();
        }
        trip.write(outcome);
    }
}

impl Stream for Watched {
    type Item = Result<ApiStreamChunk, ApiError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.stream.as_mut().poll_next(cx);
        match &next {
            Poll::Ready(Some(Ok(chunk))) => self.saw(chunk),
            Poll::Ready(Some(Err(error))) => {
                let outcome = outcome_of(error);
                self.end(outcome);
            }
            Poll::Ready(None) => self.end(RequestOutcome::Ok),
            Poll::Pending => {}
        }
        next
    }
}

impl Drop for Watched {
    /// Dropped before its end: the client went away (or the gateway stopped).
    fn drop(&mut self) {
        self.end(RequestOutcome::Cancelled);
    }
}

/// How a request that ended with `error` is recorded.
fn outcome_of(error: &ApiError) -> RequestOutcome {
    match error.kind {
        ErrorKind::Cancelled => RequestOutcome::Cancelled,
        kind => RequestOutcome::Error(kind.as_str().to_owned()),
    }
}

/// The dialect as the record names it.
fn dialect_name(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::ChatCompletions => "chat_completions",
        Dialect::Responses => "responses",
        Dialect::AnthropicMessages => "messages",
    }
}
