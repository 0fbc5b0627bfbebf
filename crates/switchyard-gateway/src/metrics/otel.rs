//! The gateway's metrics through an OpenTelemetry meter, for OTLP: the observed instruments
//! read the very state `/metrics` renders; histograms, which OpenTelemetry cannot observe, are
//! fed by the same calls with the same label sets.
//! Spec: R14.13, R14.9.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};

/// An instrument's points, each a value and its attributes.
pub(super) type Points<T> = Vec<(T, Vec<KeyValue>)>;

/// What an observed instrument reads at each export.
pub(super) type Read<T> = Box<dyn Fn() -> Points<T> + Send + Sync>;

/// The boundaries of the histograms, as `/metrics` has them.
pub(super) struct Bounds {
    pub(super) tokens: &'static [f64],
    pub(super) duration: &'static [f64],
    pub(super) ttft: &'static [f64],
    pub(super) overhead: &'static [f64],
}

/// The counters and gauges, each a read of the metrics' state.
pub(super) struct Reads {
    pub(super) requests: Read<u64>,
    pub(super) cost: Read<f64>,
    pub(super) in_flight: Read<i64>,
    pub(super) connections: Read<i64>,
    pub(super) websockets: Read<i64>,
    pub(super) dropped: Arc<AtomicU64>,
}

/// The histograms fed when a request ends and at each overhead measured.
pub(super) struct Mirror {
    tokens: Histogram<u64>,
    duration: Histogram<f64>,
    ttft: Histogram<f64>,
    overhead: Histogram<f64>,
}

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mirror")
    }
}

impl Mirror {
    pub(super) fn new(meter: &Meter, bounds: &Bounds) -> Self {
        let histogram = |name: &'static str, bounds: &[f64]| {
            (meter.f64_histogram(name))
                .with_unit("s")
                .with_boundaries(bounds.to_vec())
                .build()
        };
        Self {
            tokens: (meter.u64_histogram("gen_ai.client.token.usage"))
                .with_unit("{token}")
                .with_boundaries(bounds.tokens.to_vec())
                .build(),
            duration: histogram("gen_ai.server.request.duration", bounds.duration),
            ttft: histogram("gen_ai.server.time_to_first_token", bounds.ttft),
            overhead: histogram("switchyard.gateway.overhead", bounds.overhead),
        }
    }

    pub(super) fn overhead(&self, spent: Duration) {
        self.overhead.record(spent.as_secs_f64(), &[]);
    }

    /// One request's end under `attributes`, its label set: its tokens when reported, its
    /// times, and `error_type` on its duration when it failed.
    pub(super) fn finished(
        &self,
        mut attributes: Vec<KeyValue>,
        tokens: Option<(u64, u64)>,
        (cache_read, cache_creation): (u64, u64),
        (duration, first_token): (Duration, Option<Duration>),
        error_type: &str,
    ) {
        if let Some((input, output)) = tokens {
            // The same four token types as the scrape's `gen_ai_client_token_usage`.
            let kinds = [
                ("input", input),
                ("output", output),
                ("cache_read", cache_read),
                ("cache_creation", cache_creation),
            ];
            for (kind, n) in kinds {
                attributes.push(KeyValue::new("gen_ai.token.type", kind));
                self.tokens.record(n, &attributes);
                attributes.pop();
            }
        }
        if let Some(first) = first_token {
            self.ttft.record(first.as_secs_f64(), &attributes);
        }
        if !error_type.is_empty() {
            attributes.push(KeyValue::new("error.type", error_type.to_owned()));
        }
        self.duration.record(duration.as_secs_f64(), &attributes);
    }
}

/// Registers the counters and gauges with `meter`; the meter provider keeps them.
pub(super) fn observe(meter: &Meter, reads: Reads) {
    let Reads {
        requests,
        cost,
        in_flight,
        connections,
        websockets,
        dropped,
    } = reads;
    (meter.u64_observable_counter("switchyard.gateway.requests"))
        .with_unit("{request}")
        .with_callback(move |o| requests().iter().for_each(|(n, a)| o.observe(*n, a)))
        .build();
    (meter.f64_observable_counter("switchyard.gateway.cost"))
        .with_unit("USD")
        .with_callback(move |o| cost().iter().for_each(|(n, a)| o.observe(*n, a)))
        .build();
    (meter.i64_observable_gauge("switchyard.gateway.requests_in_flight"))
        .with_unit("{request}")
        .with_callback(move |o| in_flight().iter().for_each(|(n, a)| o.observe(*n, a)))
        .build();
    (meter.i64_observable_gauge("switchyard.gateway.connections_open"))
        .with_unit("{connection}")
        .with_callback(move |o| connections().iter().for_each(|(n, a)| o.observe(*n, a)))
        .build();
    (meter.i64_observable_gauge("switchyard.gateway.websockets_open"))
        .with_unit("{connection}")
        .with_callback(move |o| websockets().iter().for_each(|(n, a)| o.observe(*n, a)))
        .build();
    (meter.u64_observable_counter("switchyard.telemetry.dropped"))
        .with_unit("{span}")
        .with_callback(move |o| o.observe(dropped.load(Ordering::Relaxed), &[]))
        .build();
}
