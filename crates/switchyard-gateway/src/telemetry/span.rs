//! A request's span and its upstream attempts' spans, named and attributed as the GenAI
//! semantic conventions say, with Switchyard's own attributes beside them.
//! Spec: R14.13.

use std::time::SystemTime;

use opentelemetry::trace::{
    Span as _, SpanContext, SpanKind, Status, TraceContextExt, Tracer as _,
};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{SdkTracer, Span};
use switchyard_api::{ApiError, ApiStreamChunk, ChainEntry, FinishReason, Usage};
use switchyard_core::cost::UsageTotals;
use switchyard_core::store::{RequestOutcome, RequestRecord};

use super::content;

const OPERATION: &str = "chat";

/// The tracer and the content bound, when export is on.
#[derive(Clone)]
pub(crate) struct Tracing {
    pub(super) tracer: SdkTracer,
    /// The most bytes of content per attribute, when content is captured.
    pub(super) content: Option<usize>,
}

/// A request's span before its model is known: the client's trace context and the start.
pub(crate) struct PendingTrace {
    pub(super) tracing: Option<Tracing>,
    pub(super) parent: Context,
    pub(super) start: SystemTime,
}

impl PendingTrace {
    pub(crate) fn off() -> Self {
        Self {
            tracing: None,
            parent: Context::new(),
            start: SystemTime::now(),
        }
    }

    /// The request's span, `{operation} {model}`, a child of the client's `traceparent`.
    pub(crate) fn start(self, model: &str, attributes: Vec<KeyValue>) -> RequestTrace {
        let Some(tracing) = self.tracing else {
            return RequestTrace::default();
        };
        let model = clean(model);
        let mut attributes = attributes;
        attributes.push(KeyValue::new("gen_ai.operation.name", OPERATION));
        let name = if model.is_empty() {
            OPERATION.to_owned()
        } else {
            format!("{OPERATION} {model}")
        };
        if !model.is_empty() {
            attributes.push(KeyValue::new("gen_ai.request.model", model));
        }
        let span = (tracing.tracer)
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_start_time(self.start)
            .with_attributes(attributes)
            .start_with_context(&tracing.tracer, &self.parent);
        RequestTrace {
            live: Some(Live {
                cx: self.parent.with_span(span),
                tracing,
                finish: None,
            }),
        }
    }

    /// A request the gateway refused before it was relayed: its span, ended at once.
    pub(crate) fn refused(self, error_type: &str) {
        let mut trace = self.start("", Vec::new());
        if let Some(live) = trace.live.take() {
            let span = live.cx.span();
            span.set_attribute(KeyValue::new("error.type", error_type.to_owned()));
            span.set_status(Status::error(error_type.to_owned()));
            span.end();
        }
    }
}

struct Live {
    tracing: Tracing,
    /// The client's context with the request's span in it.
    cx: Context,
    finish: Option<&'static str>,
}

/// A request's span from its admission to its record; dropped unended, it ends there.
#[derive(Default)]
pub(crate) struct RequestTrace {
    live: Option<Live>,
}

/// What an attempt's span is made under: cheap to clone, nothing when export is off.
#[derive(Clone, Default)]
pub(crate) struct SpanParent {
    live: Option<(Tracing, Context)>,
}

impl RequestTrace {
    pub(crate) fn parent(&self) -> SpanParent {
        SpanParent {
            live: (self.live.as_ref()).map(|l| (l.tracing.clone(), l.cx.clone())),
        }
    }

    /// Sets the request's prompt, when content is captured.
    pub(crate) fn input(&self, system: &str, messages: &[switchyard_api::Message]) {
        let Some((live, max)) = self.captured() else {
            return;
        };
        let span = live.cx.span();
        for (key, value) in content::input(system, messages, max) {
            span.set_attribute(KeyValue::new(key, value));
        }
    }

    /// Sets the answer the client got, when content is captured.
    pub(crate) fn output(&self, text: &str) {
        if let Some((live, max)) = self.captured() {
            let finish = live.finish.unwrap_or("stop");
            let value = content::output(text, finish, max);
            live.cx
                .span()
                .set_attribute(KeyValue::new("gen_ai.output.messages", value));
        }
    }

    fn captured(&self) -> Option<(&Live, usize)> {
        let live = self.live.as_ref()?;
        Some((live, live.tracing.content?))
    }

    /// The answer's finish reason, in the conventions' words.
    pub(crate) fn finished(&mut self, reason: &'static str) {
        if let Some(live) = self.live.as_mut() {
            live.finish = Some(reason);
        }
    }

    /// Ends the span with the request's record: who answered, tokens, cost and outcome.
    pub(crate) fn ended(&mut self, record: &RequestRecord, tried: Option<(&str, &str)>) {
        let Some(live) = self.live.take() else {
            return;
        };
        let span = live.cx.span();
        let provider = (record.provider.as_deref()).or(tried.map(|t| t.0));
        let model = (record.model.as_deref()).or(tried.map(|t| t.1));
        let mut attributes = Vec::new();
        if let Some(provider) = provider {
            attributes.push(KeyValue::new("gen_ai.provider.name", clean(provider)));
        }
        if let Some(model) = model {
            attributes.push(KeyValue::new("gen_ai.response.model", clean(model)));
        }
        let totals = UsageTotals {
            input_tokens: record.input_tokens,
            output_tokens: record.output_tokens,
            cache_read_tokens: record.cache_read_tokens,
            cache_write_tokens: record.cache_write_tokens,
            provider_cost_usd: None,
            reported: true,
        };
        attributes.extend(usage_attributes(&totals));
        if let Some(usd) = record.cost_usd {
            attributes.push(KeyValue::new("switchyard.cost_usd", usd));
        }
        if let Some(ms) = record.first_token_ms {
            attributes.push(KeyValue::new("switchyard.first_token_ms", ms));
        }
        if let Some(reason) = live.finish.filter(|_| record.outcome == RequestOutcome::Ok) {
            attributes.push(finish_reasons(reason));
        }
        span.set_attributes(attributes);
        match &record.outcome {
            RequestOutcome::Ok => {}
            RequestOutcome::Cancelled => fail(&span, "cancelled"),
            RequestOutcome::Lost => fail(&span, "lost"),
            RequestOutcome::Error(kind) => fail(&span, kind),
        }
        span.end();
    }
}

impl Drop for RequestTrace {
    fn drop(&mut self) {
        if let Some(live) = self.live.take() {
            let span = live.cx.span();
            fail(&span, "cancelled");
            span.end();
        }
    }
}

/// Why an attempt was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    First,
    /// The entry before it failed before content.
    Failover,
    /// It continues an answer cut after content started.
    Continuation,
}

impl SpanParent {
    /// The span of one upstream request to `entry`, a child of the request's.
    pub(crate) fn attempt(
        &self,
        entry: &ChainEntry,
        why: Why,
        thinking_budget: Option<u64>,
    ) -> AttemptTrace {
        let Some((tracing, cx)) = &self.live else {
            return AttemptTrace::default();
        };
        let model = clean(&entry.model_id);
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", OPERATION),
            KeyValue::new("gen_ai.provider.name", clean(&entry.provider_id)),
            KeyValue::new("gen_ai.request.model", model.clone()),
            KeyValue::new("switchyard.attempt", why.name()),
        ];
        if let Some((host, port)) = server(&entry.base_url) {
            attributes.push(KeyValue::new("server.address", host));
            attributes.push(KeyValue::new("server.port", i64::from(port)));
        }
        let span = (tracing.tracer)
            .span_builder(format!("{OPERATION} {model}"))
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(&tracing.tracer, cx);
        let info = entry.handler.get_model();
        AttemptTrace {
            headers: traceparent(span.span_context()),
            span: Some(span),
            content: tracing.content.is_some(),
            model,
            usage: UsageTotals::default(),
            max_tokens: false,
            priced: Some((
                thinking_budget.unwrap_or(info.thinking_budget_tokens),
                info.info,
            )),
        }
    }
}

impl Why {
    fn name(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::Failover => "failover",
            Self::Continuation => "continuation",
        }
    }
}

/// One upstream attempt's span; dropped unended, it ends as cancelled.
#[derive(Default)]
pub(crate) struct AttemptTrace {
    span: Option<Span>,
    /// Whether content is captured: only then may the upstream's error message go in.
    content: bool,
    /// `traceparent` and `tracestate` naming this span, for the upstream request.
    headers: Vec<(String, String)>,
    model: String,
    usage: UsageTotals,
    max_tokens: bool,
    /// The thinking budget and prices its usage is priced at.
    priced: Option<(u64, switchyard_api::ModelInfo)>,
}

impl AttemptTrace {
    pub(crate) fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// Whether the upstream was sent the client's own body, or a translation of it.
    pub(crate) fn forwarded(&mut self, forwarded: bool) {
        if let Some(span) = self.span.as_mut() {
            span.set_attribute(KeyValue::new("switchyard.forwarded", forwarded));
        }
    }

    /// One chunk the upstream sent: usage and the finish are kept for the span's end.
    pub(crate) fn saw(&mut self, chunk: &ApiStreamChunk) {
        if self.span.is_none() {
            return;
        }
        match chunk {
            ApiStreamChunk::Usage(usage) => self.usage.add(usage),
            ApiStreamChunk::Finish {
                reason: FinishReason::MaxTokens,
            } => self.max_tokens = true,
            _ => {}
        }
    }

    /// The attempt failed, before content or after: its error and what it used.
    pub(crate) fn failed(mut self, error: &ApiError, used: Option<&Usage>) {
        if let Some(mut span) = self.span.take() {
            span.set_attributes(self.end_attributes(used, None));
            let kind = error.kind.as_str();
            span.set_attribute(KeyValue::new("error.type", kind));
            // A provider's error message may quote the prompt back, so it is content.
            let message = if self.content {
                switchyard_api::secrets::scrub(&error.message).into_owned()
            } else {
                kind.to_owned()
            };
            span.set_status(Status::error(message));
            span.end();
        }
    }

    /// The attempt's answer ended whole with `reason`, having used `used`.
    pub(crate) fn ended(mut self, used: &Usage, reason: &'static str) {
        if let Some(mut span) = self.span.take() {
            let reason = if self.max_tokens { "length" } else { reason };
            span.set_attributes(self.end_attributes(Some(used), Some(reason)));
            span.end();
        }
    }

    fn end_attributes(&self, used: Option<&Usage>, reason: Option<&str>) -> Vec<KeyValue> {
        let mut attributes = vec![KeyValue::new("gen_ai.response.model", self.model.clone())];
        // What the upstream reported, else the answer's estimate of this attempt.
        let mut totals = self.usage.clone();
        if !totals.reported
            && let Some(used) = used
        {
            totals.add(used);
            attributes.push(KeyValue::new("switchyard.usage_estimated", true));
        }
        if totals.reported {
            attributes.extend(usage_attributes(&totals));
            let cost = (self.priced.as_ref()).and_then(|(b, info)| totals.cost_usd(info, *b));
            if let Some(usd) = cost {
                attributes.push(KeyValue::new("switchyard.cost_usd", usd));
            }
        }
        if let Some(reason) = reason {
            attributes.push(finish_reasons(reason));
        }
        attributes
    }
}

impl Drop for AttemptTrace {
    fn drop(&mut self) {
        if let Some(mut span) = self.span.take() {
            span.set_attribute(KeyValue::new("error.type", "cancelled"));
            span.set_status(Status::error("cancelled"));
            span.end();
        }
    }
}

fn usage_attributes(u: &UsageTotals) -> [KeyValue; 4] {
    let input = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
    [
        KeyValue::new("gen_ai.usage.input_tokens", count(input)),
        KeyValue::new("gen_ai.usage.output_tokens", count(u.output_tokens)),
        KeyValue::new(
            "gen_ai.usage.cache_read.input_tokens",
            count(u.cache_read_tokens),
        ),
        KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            count(u.cache_write_tokens),
        ),
    ]
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn finish_reasons(reason: &str) -> KeyValue {
    let reasons = Array::String(vec![StringValue::from(reason.to_owned())]);
    KeyValue::new("gen_ai.response.finish_reasons", Value::Array(reasons))
}

fn fail(span: &opentelemetry::trace::SpanRef<'_>, error_type: &str) {
    span.set_attribute(KeyValue::new("error.type", error_type.to_owned()));
    span.set_status(Status::error(error_type.to_owned()));
}

/// A name a client or a file wrote, without a registered secret in it.
fn clean(value: &str) -> String {
    switchyard_api::secrets::scrub(value).into_owned()
}

/// The W3C trace context naming `span`, for the upstream request.
fn traceparent(span: &SpanContext) -> Vec<(String, String)> {
    if !span.is_valid() {
        return Vec::new();
    }
    let flags = span.trace_flags().to_u8();
    let parent = format!("00-{}-{}-{flags:02x}", span.trace_id(), span.span_id());
    let mut headers = vec![("traceparent".to_owned(), parent)];
    let state = span.trace_state().header();
    if !state.is_empty() {
        headers.push(("tracestate".to_owned(), state));
    }
    headers
}

/// The host and port of an upstream's base URL.
fn server(base_url: &str) -> Option<(String, u16)> {
    let uri: hyper::Uri = base_url.parse().ok()?;
    let host = uri.host()?.trim_matches(['[', ']']).to_owned();
    let port = match (uri.port_u16(), uri.scheme_str()) {
        (Some(port), _) => port,
        (None, Some("http")) => 80,
        _ => 443,
    };
    Some((host, port))
}
