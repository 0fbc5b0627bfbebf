//! The spans of a `switchyard task` run, made from its events: a span per task request and a
//! child span per upstream attempt, retries and failovers each their own.
//! Spec: R14.13.

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::Span;
use switchyard_core::task::TaskEvent;

use super::span::Tracing;

/// Feeds a task's events to its spans; a run ended or dropped ends every span it opened.
pub struct TaskSpans {
    tracing: Option<Tracing>,
    task_id: String,
    provider: String,
    model: String,
    request: Option<Context>,
    attempt: Option<Span>,
    /// Whether the next attempt of the current request is a retry or a failover.
    next: &'static str,
}

impl TaskSpans {
    pub(super) fn new(tracing: Option<Tracing>) -> Self {
        Self {
            tracing,
            task_id: String::new(),
            provider: String::new(),
            model: String::new(),
            request: None,
            attempt: None,
            next: "first",
        }
    }

    /// One event of the task, in the order it came.
    pub fn event(&mut self, event: &TaskEvent) {
        if self.tracing.is_none() {
            return;
        }
        match event {
            TaskEvent::TaskStarted {
                task_id,
                provider,
                model,
                ..
            } => {
                self.task_id.clone_from(task_id);
                self.provider.clone_from(provider);
                self.model.clone_from(model);
            }
            TaskEvent::ApiReqStarted { request_index } => {
                self.end_request(None);
                self.start_request(*request_index);
            }
            TaskEvent::RetryStatus { .. } => self.retry("retry", "retried", true),
            // The step runs again after its wait: `ApiReqRetried` starts the next attempt.
            TaskEvent::ErrorRetry { failed: false, .. } => self.retry("retry", "retried", false),
            TaskEvent::ApiReqRetried if self.attempt.is_none() => self.start_attempt(),
            TaskEvent::Fallback { to, reason, .. } => {
                if let Some((provider, model)) = to.split_once(':') {
                    self.provider = provider.to_owned();
                    self.model = model.to_owned();
                }
                self.retry("failover", reason, true);
            }
            TaskEvent::Usage { .. } => self.usage(event),
            TaskEvent::Error { kind, .. } | TaskEvent::ApiReqFailed { kind, .. } => {
                self.end_request(Some(kind));
            }
            TaskEvent::ApiReqFinished {
                cancel_reason: Some(reason),
                ..
            } => {
                let kind = serde_json::to_value(reason).ok();
                let kind = kind.as_ref().and_then(|v| v.as_str()).unwrap_or("error");
                self.end_request(Some(kind));
            }
            TaskEvent::TaskFinished { .. } => self.end_request(None),
            _ => {}
        }
    }

    fn start_request(&mut self, index: u32) {
        let Some(tracing) = &self.tracing else { return };
        let span = (tracing.tracer)
            .span_builder(format!("chat {}", self.model))
            .with_kind(SpanKind::Internal)
            .with_attributes([
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.request.model", self.model.clone()),
                KeyValue::new("switchyard.task_id", self.task_id.clone()),
                KeyValue::new("switchyard.request_index", i64::from(index)),
            ])
            .start(&tracing.tracer);
        self.request = Some(Context::new().with_span(span));
        self.next = "first";
        self.start_attempt();
    }

    fn start_attempt(&mut self) {
        let (Some(tracing), Some(cx)) = (&self.tracing, &self.request) else {
            return;
        };
        let span = (tracing.tracer)
            .span_builder(format!("chat {}", self.model))
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.provider.name", self.provider.clone()),
                KeyValue::new("gen_ai.request.model", self.model.clone()),
                KeyValue::new("switchyard.attempt", self.next),
            ])
            .start_with_context(&tracing.tracer, cx);
        self.attempt = Some(span);
    }

    /// The current attempt failed with `error_type`; the next, made for `why`, starts `now`
    /// or at the step's rerun.
    fn retry(&mut self, why: &'static str, error_type: &str, now: bool) {
        self.end_attempt(Some(error_type));
        self.next = why;
        if now {
            self.start_attempt();
        }
    }

    fn usage(&mut self, event: &TaskEvent) {
        let TaskEvent::Usage {
            input_tokens,
            output_tokens,
            cache_read_tokens: read,
            cache_write_tokens: write,
            cost_usd,
            estimated,
        } = event
        else {
            return;
        };
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let mut attributes = vec![
            KeyValue::new(
                "gen_ai.usage.input_tokens",
                count(input_tokens + read + write),
            ),
            KeyValue::new("gen_ai.usage.output_tokens", count(*output_tokens)),
            KeyValue::new("gen_ai.usage.cache_read.input_tokens", count(*read)),
            KeyValue::new("gen_ai.usage.cache_creation.input_tokens", count(*write)),
            KeyValue::new("gen_ai.response.model", self.model.clone()),
            KeyValue::new("switchyard.usage_estimated", *estimated),
        ];
        if let Some(usd) = cost_usd {
            attributes.push(KeyValue::new("switchyard.cost_usd", *usd));
        }
        if let Some(span) = self.attempt.as_mut() {
            span.set_attributes(attributes.clone());
        }
        if let Some(cx) = &self.request {
            cx.span().set_attributes(attributes);
        }
    }

    fn end_attempt(&mut self, error_type: Option<&str>) {
        if let Some(mut span) = self.attempt.take() {
            if let Some(kind) = error_type {
                span.set_attribute(KeyValue::new("error.type", kind.to_owned()));
                span.set_status(Status::error(kind.to_owned()));
            }
            span.end();
        }
    }

    fn end_request(&mut self, error_type: Option<&str>) {
        self.end_attempt(error_type);
        if let Some(cx) = self.request.take() {
            let span = cx.span();
            if let Some(kind) = error_type {
                span.set_attribute(KeyValue::new("error.type", kind.to_owned()));
                span.set_status(Status::error(kind.to_owned()));
            }
            span.end();
        }
    }
}

impl Drop for TaskSpans {
    fn drop(&mut self) {
        self.end_request(None);
    }
}
