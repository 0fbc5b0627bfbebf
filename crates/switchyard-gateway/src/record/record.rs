//! One request's record: who answered, the tokens and their exact cost, the first-token
//! time, how it ended. Written after the answer ended, never between two chunks.
//! Spec: R14.4, R14.8, R14.9, R9.2.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::{ApiError, ApiStreamChunk, ChainEntry, ErrorKind, ModelInfo};
use switchyard_core::cost::UsageTotals;
use switchyard_core::limits::Clock;
use switchyard_core::store::{RequestOutcome, RequestRecord};
use tokio::time::Instant;

use super::writes::Writes;
use crate::ingress::GatewayRequest;
use crate::metrics::{Finished, Metrics};
use crate::request::{Hold, RequestContext};
use crate::telemetry::RequestTrace;

/// One request's record until its answer ends; dropped before, it is recorded as cancelled.
pub(crate) struct Record {
    writes: Writes,
    arrived: Instant,
    /// `None` once written.
    record: Option<RequestRecord>,
    /// The client's thinking budget, which prices thinking output.
    thinking_budget: Option<u64>,
    /// The attempts that answered: more than one when a cut answer was continued.
    attempts: Vec<Attempt>,
    metrics: Arc<Metrics>,
    label: String,
    received: Instant,
    first_token: Option<Duration>,
    /// Whether an upstream reported usage: the token histogram counts only those.
    reported: bool,
    /// The provider and model a request no entry answered failed on.
    tried: Option<(String, String)>,
    client: Option<(String, Option<String>)>,
    /// The request's span, ended with the record.
    trace: RequestTrace,
    /// A leased admission's reservation: the record goes to the store through it.
    hold: Option<Hold>,
}

impl Record {
    pub(crate) fn new(
        (writes, metrics): (&Writes, &Arc<Metrics>),
        context: &RequestContext,
        request: &GatewayRequest,
    ) -> Self {
        let key = context.client.as_ref().map(|c| &c.key);
        Self {
            writes: writes.clone(),
            arrived: Instant::now(),
            record: Some(RequestRecord {
                id: context.id.clone(),
                started_ms: Clock::system().now_ms(),
                route: request.model.clone(),
                dialect: context.dialect.rules().record_name().to_owned(),
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
                key_id: key.map(|k| k.id.clone()),
                team: key.and_then(|k| k.team.clone()),
            }),
            thinking_budget: request.overrides.thinking_budget_tokens,
            attempts: Vec::new(),
            metrics: Arc::clone(metrics),
            label: context.label.clone(),
            received: context.received,
            first_token: None,
            reported: false,
            tried: None,
            client: key.map(|k| (k.prefix.clone(), k.team.clone())),
            trace: RequestTrace::default(),
            hold: None,
        }
    }

    /// This record settling `hold` when it is written.
    pub(crate) fn settling(mut self, hold: Option<Hold>) -> Self {
        self.hold = hold;
        self
    }

    /// This record ending `trace` when it is written.
    pub(crate) fn traced(mut self, trace: RequestTrace) -> Self {
        self.trace = trace;
        self
    }

    pub(crate) fn trace(&mut self) -> &mut RequestTrace {
        &mut self.trace
    }

    /// No entry answered: the request ends with `error`.
    pub(crate) fn failed(mut self, error: &ApiError) {
        if let (Some(provider), Some(model)) = (&error.provider_id, &error.model_id) {
            self.tried = Some((provider.clone(), model.clone()));
        }
        self.write(outcome_of(error));
    }

    /// `entry` started answering: it is recorded as the one that answered, and the first call is
    /// the first-token time.
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

    /// One chunk the upstream sent: its usage counts to the attempt reading it.
    pub(crate) fn saw(&mut self, chunk: &ApiStreamChunk) {
        if let (ApiStreamChunk::Usage(usage), Some(attempt)) = (chunk, self.attempts.last_mut()) {
            attempt.usage.add(usage);
        }
    }

    /// The answer ended and the record is written, each attempt's tokens priced at its own
    /// model's prices; the cost is unknown when none reported usage or one's prices are unknown.
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

    /// Hands the record to the request log's writer, once. A store error is logged there: the
    /// answer is not the record's to fail.
    fn write(&mut self, outcome: RequestOutcome) {
        let duration_ms = self.elapsed_ms();
        let Some(mut record) = self.record.take() else {
            return;
        };
        record.duration_ms = duration_ms;
        record.outcome = outcome;
        self.count(&record);
        let tried = self.tried.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
        self.trace.ended(&record, tried);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(id = %record.id, "the request was not recorded: no runtime");
            return;
        };
        match self.hold.take() {
            Some(hold) => hold.settle(record),
            None => self.writes.record(&runtime, record),
        }
    }

    /// Feeds the gateway's metrics with the request's end: one short lock.
    fn count(&self, record: &RequestRecord) {
        let r = record;
        let input = r.input_tokens + r.cache_read_tokens + r.cache_write_tokens;
        let tried = self.tried.as_ref();
        self.metrics.finished(&Finished {
            provider: (r.provider.as_deref()).or(tried.map(|t| t.0.as_str())),
            route: &self.label,
            model: (r.model.as_deref()).or(tried.map(|t| t.1.as_str())),
            tokens: self.reported.then_some((input, r.output_tokens)),
            cache_tokens: (r.cache_read_tokens, r.cache_write_tokens),
            duration: self.received.elapsed(),
            first_token: self.first_token,
            outcome: &r.outcome,
            cost_usd: r.cost_usd,
            client: (self.client.as_ref()).map(|(prefix, team)| (prefix.as_str(), team.as_deref())),
        });
    }
}

impl Drop for Record {
    // The client went away, or the gateway stopped, before the answer ended.
    fn drop(&mut self) {
        self.write(RequestOutcome::Cancelled);
    }
}

struct Attempt {
    usage: UsageTotals,
    info: ModelInfo,
    thinking_budget: u64,
}

fn outcome_of(error: &ApiError) -> RequestOutcome {
    match error.kind {
        ErrorKind::Cancelled => RequestOutcome::Cancelled,
        kind => RequestOutcome::Error(kind.as_str().to_owned()),
    }
}
