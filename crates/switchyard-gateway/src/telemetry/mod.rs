//! OpenTelemetry: a span per request and per upstream attempt, the client's W3C trace context
//! continued and passed upstream, and the gateway's metrics, exported over OTLP in the
//! background so that no request ever waits for a collector.
//! Spec: R14.13.

mod content;
#[cfg(feature = "otlp")]
mod export;
// Without an exporter nothing starts the queue's export task.
#[cfg_attr(not(feature = "otlp"), allow(dead_code))]
mod queue;
mod span;
mod task;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use switchyard_api::config::TelemetryExport;
use tokio::time::Instant;

pub(crate) use span::{AttemptTrace, PendingTrace, RequestTrace, SpanParent, Why};
pub use task::TaskSpans;

use queue::{Exporting, Queue};
use span::Tracing;

/// The process's telemetry, built once at start; a gateway and a task each hold it whole.
pub struct Telemetry {
    tracing: Option<Tracing>,
    dropped: Arc<AtomicU64>,
    meter: Option<SdkMeterProvider>,
    parts: Mutex<Option<(SdkTracerProvider, Exporting)>>,
}

impl Telemetry {
    /// No export: spans are not made and nothing is sent.
    pub fn off() -> Self {
        Self {
            tracing: None,
            dropped: Arc::new(AtomicU64::new(0)),
            meter: None,
            parts: Mutex::new(None),
        }
    }

    /// Starts exporting as `export` says, on the current Tokio runtime. Nothing is sent yet:
    /// a collector that is down costs dropped spans, counted, never an error here.
    ///
    /// # Errors
    ///
    /// An exporter could not be built from the settings, or the binary was built without the
    /// `otlp` feature.
    pub fn start(export: &TelemetryExport) -> Result<Self, String> {
        for (_, value) in &export.headers {
            switchyard_api::secrets::register(value);
        }
        let resource = Resource::builder()
            .with_service_name(export.service_name.clone())
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        let dropped = Arc::new(AtomicU64::new(0));
        let (queue, exporting) = spans(export, &resource, Arc::clone(&dropped))?;
        let sampler =
            Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(export.sample_ratio)));
        let provider = SdkTracerProvider::builder()
            .with_sampler(sampler)
            .with_resource(resource.clone())
            .with_span_processor(queue)
            .build();
        let meter = match &export.metrics_endpoint {
            Some(url) => Some(meter(export, url, resource)?),
            None => None,
        };
        let tracing = Tracing {
            tracer: provider.tracer("switchyard"),
            content: export.capture_content.then_some(export.content_max_bytes),
        };
        Ok(Self {
            tracing: Some(tracing),
            dropped,
            meter,
            parts: Mutex::new(Some((provider, exporting))),
        })
    }

    /// The spans of one `switchyard task` run, fed from its events.
    pub fn task_spans(&self) -> TaskSpans {
        TaskSpans::new(self.tracing.clone())
    }

    pub fn is_on(&self) -> bool {
        self.tracing.is_some()
    }

    /// The spans dropped so far: the queue was full, or the collector did not take them.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Sends what is queued, waiting at most `wait`, and stops exporting.
    pub async fn shutdown(&self, wait: Duration) {
        let parts = self
            .parts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some((provider, exporting)) = parts else {
            return;
        };
        drop(provider);
        exporting.stop.cancel();
        if tokio::time::timeout(wait, exporting.task).await.is_err() {
            tracing::warn!(
                "the last spans were not exported within {} s",
                wait.as_secs()
            );
        }
        if let Some(meter) = self.meter.clone() {
            // The meter's shutdown blocks until its last export: off the runtime's workers.
            let stopped = tokio::task::spawn_blocking(move || meter.shutdown());
            let _ = tokio::time::timeout(wait, stopped).await;
        }
    }

    /// Exports `metrics` too, and shows the dropped spans in `/metrics`.
    pub(crate) fn watch(&self, metrics: &Arc<crate::metrics::Metrics>) {
        if !self.is_on() {
            return;
        }
        metrics.count_dropped(Arc::clone(&self.dropped));
        if let Some(meter) = &self.meter {
            let meter = opentelemetry::metrics::MeterProvider::meter(meter, "switchyard");
            metrics.mirror(&meter, Arc::clone(&self.dropped));
        }
    }

    /// A request's span to come, under the `traceparent` its client sent, if any.
    pub(crate) fn pending(&self, headers: &hyper::HeaderMap, received: Instant) -> PendingTrace {
        let Some(tracing) = &self.tracing else {
            return PendingTrace::off();
        };
        let parent = TraceContextPropagator::new().extract(&Headers(headers));
        PendingTrace {
            tracing: Some(tracing.clone()),
            parent,
            start: SystemTime::now() - received.elapsed(),
        }
    }
}

impl Default for Telemetry {
    fn default() -> Self {
        Self::off()
    }
}

#[cfg(feature = "otlp")]
fn spans(
    export: &TelemetryExport,
    resource: &Resource,
    dropped: Arc<AtomicU64>,
) -> Result<(Queue, Exporting), String> {
    use opentelemetry_sdk::trace::SpanExporter as _;
    let mut exporter = export::spans(export)?;
    exporter.set_resource(resource);
    let timeout = export.export_timeout;
    Ok(Queue::start(
        exporter,
        export.queue_size,
        (dropped, timeout),
    ))
}

#[cfg(feature = "otlp")]
fn meter(
    export: &TelemetryExport,
    url: &str,
    resource: Resource,
) -> Result<SdkMeterProvider, String> {
    use opentelemetry_sdk::metrics::periodic_reader_with_async_runtime::PeriodicReader;
    let exporter = export::metrics(export, url)?;
    let reader = PeriodicReader::builder(exporter, opentelemetry_sdk::runtime::Tokio)
        .with_interval(export.metrics_interval)
        .build();
    Ok(SdkMeterProvider::builder()
        .with_resource(resource)
        .with_reader(reader)
        .build())
}

#[cfg(not(feature = "otlp"))]
fn spans(
    _: &TelemetryExport,
    _: &Resource,
    _: Arc<AtomicU64>,
) -> Result<(Queue, Exporting), String> {
    Err("this switchyard was built without the `otlp` feature: [telemetry] cannot export".into())
}

#[cfg(not(feature = "otlp"))]
fn meter(_: &TelemetryExport, _: &str, _: Resource) -> Result<SdkMeterProvider, String> {
    Err("this switchyard was built without the `otlp` feature: [telemetry] cannot export".into())
}

/// A request's headers, read by the W3C trace-context propagator.
struct Headers<'a>(&'a hyper::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .keys()
            .map(hyper::header::HeaderName::as_str)
            .collect()
    }
}
