//! The observer of one request's life: it hands each chunk and each turn of the answer, once,
//! to the request's record, its live-page entry and the Responses answer being kept.
//! Spec: R14.4, R14.1, R14.11.

use switchyard_api::{ApiError, ApiStreamChunk, ChainEntry, Usage};
use tokio::task::JoinHandle;

use super::answer::Answer;
use crate::ingress::{GatewayRequest, StopReason};
use crate::record::{Keeper, Record, settle};
use crate::request::RequestContext;
use crate::shared::Shared;
use crate::telemetry::{AttemptTrace, SpanParent};

/// What one request's answer is told to, and what the answer has been so far.
pub(super) struct Observer {
    context: RequestContext,
    record: Record,
    answer: Answer,
    /// The Responses answer to store, when the dialect and the request keep it.
    keeper: Option<Keeper>,
    /// That answer's write: the answer's terminal event waits for it.
    kept: Option<JoinHandle<()>>,
    /// The span of the attempt answering now.
    attempt: Option<AttemptTrace>,
}

impl Observer {
    pub(super) fn new(
        shared: &Shared,
        mut context: RequestContext,
        request: &GatewayRequest,
    ) -> Self {
        let trace = std::mem::take(&mut context.trace);
        trace.input(&request.system_prompt, &request.messages);
        let record = Record::new((&shared.writes, &shared.metrics), &context, request);
        let record = record.traced(trace).settling(context.hold.take());
        let stores = context.dialect.rules().stores_answer(request);
        let store = (&shared.responses, shared.body_limit);
        let keeper = stores.then(|| Keeper::new(store, &context.id, request));
        Self {
            context,
            record,
            answer: Answer::default(),
            keeper,
            kept: None,
            attempt: None,
        }
    }

    /// What the request's attempts' spans are made under.
    pub(super) fn span_parent(&mut self) -> SpanParent {
        self.record.trace().parent()
    }

    pub(super) fn context(&self) -> &RequestContext {
        &self.context
    }

    pub(super) fn answer(&self) -> &Answer {
        &self.answer
    }

    pub(super) fn started(&mut self, entry: &ChainEntry, input_tokens: u64, span: AttemptTrace) {
        self.attempt = Some(span);
        self.record.answered(entry);
        (self.context.live).answered(&entry.provider_id, &entry.model_id);
        self.answer.begin_attempt(input_tokens);
    }

    pub(super) fn generated(&mut self, chunk: &ApiStreamChunk) {
        if let Some(span) = self.attempt.as_mut() {
            span.saw(chunk);
        }
        self.record.saw(chunk);
        self.context.live.saw(chunk);
        self.answer.generated(chunk);
    }

    pub(super) fn sent(&mut self, chunk: &ApiStreamChunk) {
        self.answer.sent(chunk);
        if let Some(keeper) = self.keeper.as_mut() {
            keeper.sent(chunk);
        }
    }

    pub(super) fn cut(&mut self, error: &ApiError) {
        let used = self.answer.end_attempt();
        if let Some(span) = self.attempt.take() {
            span.failed(error, Some(&used));
        }
    }

    /// The answer ended complete: the record is written and the Responses answer stored.
    pub(super) fn completed(&mut self) -> (StopReason, Usage) {
        let used = self.answer.end_attempt();
        let end = self.answer.end();
        let reason = finish_reason(end.0);
        if let Some(span) = self.attempt.take() {
            span.ended(&used, reason);
        }
        let trace = self.record.trace();
        trace.finished(reason);
        trace.output(&self.answer.text);
        self.record.ended(None);
        self.kept = self.keeper.take().and_then(Keeper::keep);
        end
    }

    /// The answer cannot be completed: what its attempts used, for an error that carries usage.
    pub(super) fn failed(&mut self, error: &ApiError) -> Usage {
        let usage = self.answer.end().1;
        self.record.ended(Some(error));
        self.context.live.failed(error);
        usage
    }

    pub(super) fn never_answered(self, error: &ApiError) {
        self.context.live.failed(error);
        self.record.failed(error);
    }

    /// Waits, a short while at most, for the Responses answer to be stored.
    pub(super) async fn settle(&mut self) {
        settle(self.kept.take()).await;
    }
}

/// An answer's stop reason as the GenAI conventions name it.
fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_call",
        StopReason::MaxTokens => "length",
    }
}
