//! One request's record in the store (SPEC R14.4, R14.9, R9.2; issue 23 item 6): the provider
//! and model that answered, the tokens summed from its usage chunks and their exact cost at
//! that model's prices (the task layer's `UsageTotals`), the first-token time, the duration,
//! and how it ended — ok, an error's kind, or cancelled (the client went away) — under the
//! route and the request id. The relay shows it each chunk an upstream sends (a field update
//! per usage chunk, nothing per text chunk) and tells it where each attempt starts and where
//! the answer ends; the row goes to the request log's writer then (`writes.rs`, batched):
//! never between two chunks.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::{ApiError, ApiStreamChunk, ChainEntry, ErrorKind, ModelInfo};
use switchyard_core::cost::UsageTotals;
use switchyard_core::store::{RequestOutcome, RequestRecord};
use tokio::time::Instant;

use super::state::Layer;
use crate::ingress::{Dialect, GatewayRequest};
use crate::metrics::{Finished, Metrics};

/// One request's record until its answer ends. Dropped before (the client went away while
/// the request waited or before its first content), it is recorded as cancelled.
pub(crate) struct Trip {
    /// The request log's writer (a stopping gateway waits for what it holds).
    writes: super::writes::Writes,
    arrived: Instant,
    /// `None` once written.
    record: Option<RequestRecord>,
    /// The request's thinking budget, when the client set one (it prices thinking output).
    thinking_budget: Option<u64>,
    /// The attempts that answered, in order (more than one when a cut answer was continued).
    attempts: Vec<Attempt>,
    /// The gateway's metrics, fed when the record is written (SPEC R14.9).
    metrics: Arc<Metrics>,
    /// The route's metric label.
    label: String,
    /// When the request's headers were read (the metrics' durations start there).
    received: Instant,
    /// From `received` to the first content.
    first_token: Option<Duration>,
    /// Whether an upstream reported usage (the token histogram counts only those).
    reported: bool,
    /// The provider and model a request no entry answered failed on (the metrics' labels).
    tried: Option<(String, String)>,
    /// The client key's prefix and team, when keys are on (the metrics' labels).
    client: Option<(String, Option<String>)>,
}

impl Layer {
    /// The record of `request`, arrived now in `dialect` under the gateway's request `id`;
    /// its headers were read at `received`, and `label` is its route's metric label.
    pub(crate) fn trip(
        &self,
        id: &str,
        dialect: Dialect,
        request: &GatewayRequest,
        (label, received): (String, Instant),
    ) -> Trip {
        Trip {
            writes: self.writes.clone(),
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
                key_id: self.client.as_ref().map(|c| c.key.id.clone()),
                team: self.client.as_ref().and_then(|c| c.key.team.clone()),
            }),
            thinking_budget: request.overrides.thinking_budget_tokens,
            attempts: Vec::new(),
            metrics: Arc::clone(&self.metrics),
            label,
            received,
            first_token: None,
            reported: false,
            tried: None,
            client: (self.client.as_ref()).map(|c| (c.key.prefix.clone(), c.key.team.clone())),
        }
    }
}

impl Trip {
    /// No entry answered: the request ends with `error` (recorded as cancelled when it is a
    /// cancellation).
    pub(crate) fn failed(mut self, error: &ApiError) {
        if let (Some(provider), Some(model)) = (&error.provider_id, &error.model_id) {
            self.tried = Some((provider.clone(), model.clone()));
        }
        self.write(outcome_of(error));
    }

    /// `entry` started answering (the first attempt, or one that continues a cut answer): it
    /// is the one recorded as having answered, its usage is priced at its model's prices, and
    /// the first of these calls is the first-token time.
    pub(crate) fn answered(&mut self, entry: &ChainEntry) {
        let elapsed = self.elapsed_ms();
        self.first_token.get_or_insert(self.received.elapsed());
        if let Some(record) = self.record.as_mut() {
            record.provider = Some(entry.provider_id.clone());
            record.model = Some(entry.model_id.clone());
            record.first_token_ms.get_or_insert(elapsed);
        }
        let model = entry.handler.get_model();
        self.attempts.push(Attempt {
            usage: UsageTotals::default(),
            thinking_budget: self.thinking_budget.unwrap_or(model.thinking_budget_tokens),
            info: model.info,
        });
    }

    /// One chunk the upstream sent: its usage is counted to the attempt reading it.
    pub(crate) fn saw(&mut self, chunk: &ApiStreamChunk) {
        if let (ApiStreamChunk::Usage(usage), Some(attempt)) = (chunk, self.attempts.last_mut()) {
            attempt.usage.add(usage);
        }
    }

    /// The answer ended: complete (`None`) or with the failure nothing could mend. The tokens
    /// the upstreams reported and their exact cost (SPEC R9.2: each attempt at its model's
    /// prices; unknown when no attempt reported usage or one's prices are unknown) go into the
    /// record, which is written.
    pub(crate) fn ended(&mut self, error: Option<&ApiError>) {
        if let Some(record) = self.record.as_mut() {
            let mut cost = None;
            let mut priced = true;
            for a in self.attempts.iter().filter(|a| a.usage.reported) {
                let u = &a.usage;
                self.reported = true;
                record.input_tokens += u.input_tokens;
                record.output_tokens += u.output_tokens;
                record.cache_read_tokens += u.cache_read_tokens;
                record.cache_write_tokens += u.cache_write_tokens;
                match u.cost_usd(&a.info, a.thinking_budget) {
                    Some(usd) => cost = Some(cost.unwrap_or(0.0) + usd),
                    None => priced = false,
                }
            }
            record.cost_usd = cost.filter(|_| priced);
        }
        self.write(error.map_or(RequestOutcome::Ok, outcome_of));
    }

    fn elapsed_ms(&self) -> i64 {
        i64::try_from(self.arrived.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    /// Hands the record with `outcome`, once, to the layer's request-log writer (SPEC
    /// R14.8: written in a batch off the answer's path; a store error is logged there, the
    /// answer is not the record's to fail).
    fn write(&mut self, outcome: RequestOutcome) {
        let duration_ms = self.elapsed_ms();
        let Some(mut record) = self.record.take() else {
            return;
        };
        record.duration_ms = duration_ms;
        record.outcome = outcome;
        self.count(&record);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(id = %record.id, "the request was not recorded: no runtime");
            return;
        };
        self.writes.record(&runtime, record);
    }
}

impl Trip {
    /// Feeds the gateway's metrics with the request's end (SPEC R14.9): one short lock.
    fn count(&self, record: &RequestRecord) {
        let r = record;
        let input = r.input_tokens + r.cache_read_tokens + r.cache_write_tokens;
        let tried = self.tried.as_ref();
        self.metrics.finished(&Finished {
            provider: (r.provider.as_deref()).or(tried.map(|t| t.0.as_str())),
            route: &self.label,
            model: (r.model.as_deref()).or(tried.map(|t| t.1.as_str())),
            tokens: self.reported.then_some((input, r.output_tokens)),
            duration: self.received.elapsed(),
            first_token: self.first_token,
            outcome: &r.outcome,
            cost_usd: r.cost_usd,
            client: (self.client.as_ref()).map(|(prefix, team)| (prefix.as_str(), team.as_deref())),
        });
    }
}

impl Drop for Trip {
    /// Dropped before its answer ended: the client went away (or the gateway stopped).
    fn drop(&mut self) {
        self.write(RequestOutcome::Cancelled);
    }
}

/// One upstream attempt of an answer: its usage and the prices it is billed at.
struct Attempt {
    usage: UsageTotals,
    info: ModelInfo,
    thinking_budget: u64,
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
