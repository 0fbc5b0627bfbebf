//! `GET /metrics`: the gateway's counters and histograms in Prometheus text format 0.0.4,
//! named as OpenTelemetry's GenAI semantic conventions v1.41.0 name them, dots as underscores.
//! Spec: R14.9, R14.6.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use switchyard_core::store::RequestOutcome;

use text::{AtomicHistogram, Histogram, escape, family, gauge};

mod otel;
mod text;

/// `gen_ai.client.token.usage`'s boundaries in tokens.
pub(crate) const TOKEN_BUCKETS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
/// `gen_ai.server.request.duration`'s boundaries in seconds; the overhead uses them too.
pub(crate) const DURATION_BUCKETS: &[f64] = &[
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// `gen_ai.server.time_to_first_token`'s boundaries in seconds.
pub(crate) const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// The overhead's boundaries in seconds, finer than a request's: the gateway's own cost is
/// sub-millisecond, and no convention exists for it.
pub(crate) const OVERHEAD_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// The most distinct label sets kept; a request of any other set is counted under `other`.
pub const LABEL_SETS_MAX: usize = 1000;
/// The longest label value kept, in bytes; a longer one is cut on a character boundary.
pub(crate) const LABEL_VALUE_MAX: usize = 128;
const OTHER: &str = "other";
/// The label value of a provider or model when no entry answered.
const NONE: &str = "none";

/// The gateway's metrics. What is fed outside a request's end is atomics; the labelled
/// series are under one short mutex, taken once per request, never per chunk.
#[derive(Debug)]
pub(crate) struct Metrics {
    in_flight: AtomicI64,
    connections: AtomicI64,
    websockets: AtomicI64,
    overhead: AtomicHistogram,
    series: Mutex<Series>,
    /// The same numbers through OpenTelemetry, when they are exported.
    /// A reload that changes the telemetry replaces both.
    mirror: RwLock<Option<Arc<otel::Mirror>>>,
    /// The spans the telemetry queue dropped, when spans are exported.
    dropped: RwLock<Option<Arc<AtomicU64>>>,
    /// The configurations reloads put in effect, then those they refused.
    reloads: [AtomicU64; 2],
}

impl Metrics {
    pub(crate) fn new(label_sets: usize) -> Self {
        Self {
            in_flight: AtomicI64::new(0),
            connections: AtomicI64::new(0),
            websockets: AtomicI64::new(0),
            overhead: AtomicHistogram::new(OVERHEAD_BUCKETS),
            series: Mutex::new(Series {
                max_sets: label_sets,
                ..Series::default()
            }),
            mirror: RwLock::new(None),
            dropped: RwLock::new(None),
            reloads: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }
}

/// One request's end as its record tells the metrics.
#[derive(Debug)]
pub(crate) struct Finished<'a> {
    /// The provider id that answered, or that the request failed on.
    pub(crate) provider: Option<&'a str>,
    pub(crate) route: &'a str,
    pub(crate) model: Option<&'a str>,
    /// Input tokens, cached ones included, and output tokens, when an upstream reported usage.
    pub(crate) tokens: Option<(u64, u64)>,
    /// Of the input tokens, those read from and written to the provider's prompt cache.
    pub(crate) cache_tokens: (u64, u64),
    pub(crate) duration: Duration,
    pub(crate) first_token: Option<Duration>,
    pub(crate) outcome: &'a RequestOutcome,
    pub(crate) cost_usd: Option<f64>,
    /// The client key's display prefix and its team, when keys are on; never the key.
    pub(crate) client: Option<(&'a str, Option<&'a str>)>,
}

/// Counts one model request as in flight until dropped.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<Metrics>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts one client connection as open until dropped.
#[derive(Debug)]
pub(crate) struct Open(Arc<Metrics>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts one Responses WebSocket as open until dropped.
#[derive(Debug)]
pub(crate) struct OpenSocket(Arc<Metrics>);

impl Drop for OpenSocket {
    fn drop(&mut self) {
        self.0.websockets.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Metrics {
    pub(crate) fn in_flight(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(Arc::clone(self))
    }

    pub(crate) fn connection(self: &Arc<Self>) -> Open {
        self.connections.fetch_add(1, Ordering::Relaxed);
        Open(Arc::clone(self))
    }

    pub(crate) fn websocket(self: &Arc<Self>) -> OpenSocket {
        self.websockets.fetch_add(1, Ordering::Relaxed);
        OpenSocket(Arc::clone(self))
    }

    /// The gateway's own time before a request's first upstream request.
    pub(crate) fn overhead(&self, spent: Duration) {
        self.overhead.observe(spent.as_secs_f64());
        if let Some(mirror) = self.mirrored() {
            mirror.overhead(spent);
        }
    }

    /// A reload of the configuration: put in effect, or refused.
    pub(crate) fn reload(&self, applied: bool) {
        self.reloads[usize::from(!applied)].fetch_add(1, Ordering::Relaxed);
    }

    /// A request the gateway answered itself, counted as an error of `error_type`.
    pub(crate) fn refused(&self, error_type: &'static str) {
        let mut series = self.lock();
        *series
            .outcomes
            .entry(("error", error_type.to_owned()))
            .or_default() += 1;
    }

    pub(crate) fn finished(&self, end: &Finished<'_>) {
        let (outcome, error_type) = match end.outcome {
            RequestOutcome::Ok => ("ok", String::new()),
            RequestOutcome::Cancelled => ("cancelled", String::new()),
            RequestOutcome::Lost => ("lost", String::new()),
            RequestOutcome::Error(kind) => ("error", clean(kind)),
        };
        let labels = Labels {
            provider: clean(end.provider.unwrap_or(NONE)),
            route: clean(end.route),
            model: clean(end.model.unwrap_or(NONE)),
            key: end.client.map(|(prefix, _)| clean(prefix)),
            team: end.client.and_then(|(_, team)| team).map(clean),
        };
        let mut series = self.lock();
        *series
            .outcomes
            .entry((outcome, error_type.clone()))
            .or_default() += 1;
        let (used, set) = series.set(labels);
        if let Some(mirror) = self.mirrored() {
            let times = (end.duration, end.first_token);
            mirror.finished(
                used.attributes(),
                end.tokens,
                end.cache_tokens,
                times,
                &error_type,
            );
        }
        if let Some((input, output)) = end.tokens {
            set.input.observe(input as f64);
            set.output.observe(output as f64);
            set.cache_read.observe(end.cache_tokens.0 as f64);
            set.cache_creation.observe(end.cache_tokens.1 as f64);
        }
        set.duration
            .entry(error_type)
            .or_insert_with(|| Histogram::new(DURATION_BUCKETS))
            .observe(end.duration.as_secs_f64());
        if let Some(first) = end.first_token {
            set.ttft.observe(first.as_secs_f64());
        }
        if let Some(usd) = end.cost_usd {
            set.cost_usd += usd;
        }
    }

    /// The scrape, each family with its `# HELP` and `# TYPE` lines. `cooldowns` is how many
    /// entries the store has cooling down; `None` leaves the gauge out.
    pub(crate) fn render(&self, cooldowns: Option<usize>) -> String {
        let mut out = String::with_capacity(16 * 1024);
        let series = self.lock();
        series.render_tokens(&mut out);
        series.render_durations(&mut out);
        series.render_ttft(&mut out);
        family(
            &mut out,
            "switchyard_gateway_overhead_seconds",
            "histogram",
            "The gateway's own time per request before its first upstream request: from the request's headers read (body read, parsed, routed, limits checked in the store) to the provider handler being asked to send it.",
        );
        self.overhead
            .render(&mut out, "switchyard_gateway_overhead_seconds", "");
        series.render_outcomes(&mut out);
        series.render_cost(&mut out);
        drop(series);
        self.render_gauges(&mut out, cooldowns);
        family(
            &mut out,
            "switchyard_config_reloads_total",
            "counter",
            "Reloads of the configuration file, on SIGHUP or a change: ok put in effect, rejected refused with the one in effect kept.",
        );
        for (result, n) in ["ok", "rejected"].iter().zip(&self.reloads) {
            let n = n.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "switchyard_config_reloads_total{{result=\"{result}\"}} {n}"
            );
        }
        let dropped = self
            .dropped
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(dropped) = dropped {
            family(
                &mut out,
                "switchyard_telemetry_dropped_total",
                "counter",
                "Spans dropped before export: the queue was full or the collector did not take them.",
            );
            let n = dropped.load(Ordering::Relaxed);
            let _ = writeln!(out, "switchyard_telemetry_dropped_total {n}");
        }
        out
    }

    /// The gauges: requests in flight, connections and sockets open, and the cooldowns when
    /// `cooldowns` is known.
    fn render_gauges(&self, out: &mut String, cooldowns: Option<usize>) {
        let now = |n: &AtomicI64| n.load(Ordering::Relaxed);
        gauge(
            out,
            "switchyard_gateway_requests_in_flight",
            "Model requests being answered (body read to the response's end).",
            now(&self.in_flight),
        );
        gauge(
            out,
            "switchyard_gateway_connections_open",
            "Client connections open.",
            now(&self.connections),
        );
        gauge(
            out,
            "switchyard_gateway_websockets_open",
            "Responses WebSockets open, from their 101 to their close.",
            now(&self.websockets),
        );
        if let Some(n) = cooldowns {
            gauge(
                out,
                "switchyard_gateway_cooldowns",
                "Failover entries cooling down in the store (SPEC R12.1), every process on it included.",
                n,
            );
        }
    }

    /// Exports these metrics through `meter` from now on, and the spans `dropped` as a counter.
    /// Spec: R14.13.
    pub(crate) fn mirror(
        self: &Arc<Self>,
        meter: &opentelemetry::metrics::Meter,
        dropped: Arc<AtomicU64>,
    ) {
        let bounds = otel::Bounds {
            tokens: TOKEN_BUCKETS,
            duration: DURATION_BUCKETS,
            ttft: TTFT_BUCKETS,
            overhead: OVERHEAD_BUCKETS,
        };
        let mirror = Arc::new(otel::Mirror::new(meter, &bounds));
        *self.mirror.write().unwrap_or_else(PoisonError::into_inner) = Some(mirror);
        // Weak: a meter provider outliving the gateway keeps nothing of it alive.
        let weak = Arc::downgrade(self);
        let reads = otel::Reads {
            requests: reader(&weak, |m| m.lock().outcome_points()),
            cost: reader(&weak, |m| m.lock().cost_points()),
            in_flight: reader(&weak, |m| {
                vec![(m.in_flight.load(Ordering::Relaxed), Vec::new())]
            }),
            connections: reader(&weak, |m| {
                vec![(m.connections.load(Ordering::Relaxed), Vec::new())]
            }),
            websockets: reader(&weak, |m| {
                vec![(m.websockets.load(Ordering::Relaxed), Vec::new())]
            }),
            dropped,
        };
        otel::observe(meter, reads);
    }

    /// Shows the spans `dropped` in `/metrics` from now on.
    pub(crate) fn count_dropped(&self, dropped: Arc<AtomicU64>) {
        *self.dropped.write().unwrap_or_else(PoisonError::into_inner) = Some(dropped);
    }

    /// Stops exporting through the telemetry watched so far, which a reload replaces.
    pub(crate) fn unwatch(&self) {
        *self.mirror.write().unwrap_or_else(PoisonError::into_inner) = None;
        *self.dropped.write().unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn mirrored(&self) -> Option<Arc<otel::Mirror>> {
        self.mirror
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Series> {
        self.series.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A read of the metrics behind `weak` by `f`, nothing once they are gone.
fn reader<T: 'static>(
    weak: &std::sync::Weak<Metrics>,
    f: fn(&Metrics) -> otel::Points<T>,
) -> otel::Read<T> {
    let weak = weak.clone();
    Box::new(move || weak.upgrade().map(|m| f(&m)).unwrap_or_default())
}

/// A route's label value: the client's model name when it is a route name or
/// `PROVIDER/MODEL`, else the glob it matched, never the client's name.
pub(crate) fn route_label(model: &str, glob: Option<&str>) -> String {
    clean(glob.unwrap_or(model))
}

/// `value` cut to [`LABEL_VALUE_MAX`] bytes, or `redacted` when it holds a registered key.
/// Spec: R10.5.
fn clean(value: &str) -> String {
    if matches!(
        switchyard_api::secrets::scrub(value),
        std::borrow::Cow::Owned(_)
    ) {
        return "redacted".to_owned();
    }
    let mut end = value.len().min(LABEL_VALUE_MAX);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    value[..end].to_owned()
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Labels {
    provider: String,
    route: String,
    model: String,
    key: Option<String>,
    team: Option<String>,
}

impl Labels {
    /// These labels as OpenTelemetry attributes, named as the conventions name them.
    fn attributes(&self) -> Vec<opentelemetry::KeyValue> {
        use opentelemetry::KeyValue;
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", self.provider.clone()),
            KeyValue::new("gen_ai.request.model", self.route.clone()),
            KeyValue::new("gen_ai.response.model", self.model.clone()),
        ];
        let client = [
            ("switchyard.key_prefix", &self.key),
            ("switchyard.team", &self.team),
        ];
        for (name, value) in client {
            if let Some(value) = value {
                attributes.push(KeyValue::new(name, value.clone()));
            }
        }
        attributes
    }

    /// The GenAI labels, then the client's. The operation is always `chat`.
    fn write(&self, out: &mut String) {
        out.push_str("gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"");
        escape(out, &self.provider);
        out.push_str("\",gen_ai_request_model=\"");
        escape(out, &self.route);
        out.push_str("\",gen_ai_response_model=\"");
        escape(out, &self.model);
        out.push('"');
        self.write_client(out);
    }

    fn write_client(&self, out: &mut String) {
        for (name, value) in [
            ("switchyard_key_prefix", &self.key),
            ("switchyard_team", &self.team),
        ] {
            if let Some(value) = value {
                let _ = write!(out, ",{name}=\"");
                escape(out, value);
                out.push('"');
            }
        }
    }
}

#[derive(Debug)]
struct Set {
    input: Histogram,
    output: Histogram,
    cache_read: Histogram,
    cache_creation: Histogram,
    /// By `error_type`, empty when the request succeeded or was cancelled.
    duration: BTreeMap<String, Histogram>,
    ttft: Histogram,
    cost_usd: f64,
}

impl Default for Set {
    fn default() -> Self {
        Self {
            input: Histogram::new(TOKEN_BUCKETS),
            output: Histogram::new(TOKEN_BUCKETS),
            cache_read: Histogram::new(TOKEN_BUCKETS),
            cache_creation: Histogram::new(TOKEN_BUCKETS),
            duration: BTreeMap::new(),
            ttft: Histogram::new(TTFT_BUCKETS),
            cost_usd: 0.0,
        }
    }
}

/// The labelled series, under the one mutex.
#[derive(Debug, Default)]
struct Series {
    index: HashMap<Labels, usize>,
    sets: Vec<(Labels, Set)>,
    outcomes: BTreeMap<(&'static str, String), u64>,
    max_sets: usize,
}

impl Series {
    /// Each outcome's count, for the OpenTelemetry counter.
    fn outcome_points(&self) -> otel::Points<u64> {
        use opentelemetry::KeyValue;
        let points = self.outcomes.iter().map(|((outcome, error_type), n)| {
            let mut attributes = vec![KeyValue::new("outcome", *outcome)];
            if !error_type.is_empty() {
                attributes.push(KeyValue::new("error.type", error_type.clone()));
            }
            (*n, attributes)
        });
        points.collect()
    }

    fn cost_points(&self) -> otel::Points<f64> {
        (self.sets.iter())
            .map(|(labels, set)| (set.cost_usd, labels.attributes()))
            .collect()
    }

    /// The set counting `labels`, or `other`'s when `max_sets` sets are kept already, and the
    /// labels it counts them under.
    fn set(&mut self, labels: Labels) -> (&Labels, &mut Set) {
        let labels = if self.index.contains_key(&labels) || self.index.len() < self.max_sets {
            labels
        } else {
            Labels {
                provider: OTHER.to_owned(),
                route: OTHER.to_owned(),
                model: OTHER.to_owned(),
                key: None,
                team: None,
            }
        };
        let at = match self.index.get(&labels) {
            Some(&at) => at,
            None => {
                self.sets.push((labels.clone(), Set::default()));
                self.index.insert(labels, self.sets.len() - 1);
                self.sets.len() - 1
            }
        };
        let (labels, set) = &mut self.sets[at];
        (labels, set)
    }

    fn render_tokens(&self, out: &mut String) {
        let name = "gen_ai_client_token_usage";
        family(
            out,
            name,
            "histogram",
            "Tokens per request that an upstream reported (input: uncached, cache reads and cache writes; output: output and reasoning; cache_read and cache_creation: the input read from and written to the prompt cache).",
        );
        for (labels, set) in &self.sets {
            let kinds = [
                ("input", &set.input),
                ("output", &set.output),
                ("cache_read", &set.cache_read),
                ("cache_creation", &set.cache_creation),
            ];
            for (kind, histogram) in kinds {
                if histogram.count > 0 {
                    let mut l = String::new();
                    labels.write(&mut l);
                    let _ = write!(l, ",gen_ai_token_type=\"{kind}\"");
                    histogram.render(out, name, &l);
                }
            }
        }
    }

    fn render_durations(&self, out: &mut String) {
        let name = "gen_ai_server_request_duration_seconds";
        family(
            out,
            name,
            "histogram",
            "Request duration, from its headers read to its answer's end (error_type on failures).",
        );
        for (labels, set) in &self.sets {
            for (error_type, histogram) in &set.duration {
                let mut l = String::new();
                labels.write(&mut l);
                if !error_type.is_empty() {
                    l.push_str(",error_type=\"");
                    escape(&mut l, error_type);
                    l.push('"');
                }
                histogram.render(out, name, &l);
            }
        }
    }

    fn render_ttft(&self, out: &mut String) {
        let name = "gen_ai_server_time_to_first_token_seconds";
        family(
            out,
            name,
            "histogram",
            "Time from a request's headers read to its answer's first content.",
        );
        for (labels, set) in self.sets.iter().filter(|(_, s)| s.ttft.count > 0) {
            let mut l = String::new();
            labels.write(&mut l);
            set.ttft.render(out, name, &l);
        }
    }

    fn render_outcomes(&self, out: &mut String) {
        let name = "switchyard_gateway_requests_total";
        family(
            out,
            name,
            "counter",
            "Model requests by how they ended: ok, error (with error_type, the error's kind) or cancelled (the client went away).",
        );
        for ((outcome, error_type), n) in &self.outcomes {
            let _ = write!(out, "{name}{{outcome=\"{outcome}\"");
            if !error_type.is_empty() {
                out.push_str(",error_type=\"");
                escape(out, error_type);
                out.push('"');
            }
            let _ = writeln!(out, "}} {n}");
        }
    }

    fn render_cost(&self, out: &mut String) {
        let name = "switchyard_gateway_cost_usd_total";
        family(
            out,
            name,
            "counter",
            "The exact cost of the answered requests at their models' prices (SPEC R9.2), in US dollars, by client key prefix and team when keys are on.",
        );
        let mut by: BTreeMap<Labels, f64> = BTreeMap::new();
        for (labels, set) in self.sets.iter().filter(|(_, s)| s.cost_usd > 0.0) {
            let key = Labels {
                route: String::new(),
                ..labels.clone()
            };
            *by.entry(key).or_default() += set.cost_usd;
        }
        for (labels, usd) in by {
            let _ = write!(out, "{name}{{gen_ai_provider_name=\"");
            escape(out, &labels.provider);
            out.push_str("\",gen_ai_response_model=\"");
            escape(out, &labels.model);
            out.push('"');
            labels.write_client(out);
            let _ = writeln!(out, "}} {usd}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::text::bucket;
    use super::*;

    #[test]
    fn a_value_on_a_bound_is_in_that_bucket() {
        assert_eq!(bucket(TOKEN_BUCKETS, 1.0), 0);
        assert_eq!(bucket(TOKEN_BUCKETS, 2.0), 1);
        assert_eq!(bucket(TOKEN_BUCKETS, 1e9), TOKEN_BUCKETS.len());
    }

    /// Recording a request's end is one short lock and a few additions (no work per chunk);
    /// the figure printed is this build's cost per request.
    #[test]
    fn every_finished_request_is_counted_once_in_its_set() {
        let metrics = Metrics::new(LABEL_SETS_MAX);
        let outcome = RequestOutcome::Ok;
        let end = Finished {
            provider: Some("anthropic"),
            route: "sonnet",
            model: Some("claude-sonnet-4-5"),
            tokens: Some((2317, 27)),
            cache_tokens: (2048, 200),
            duration: Duration::from_millis(1500),
            first_token: Some(Duration::from_millis(300)),
            outcome: &outcome,
            cost_usd: Some(0.002),
            client: None,
        };
        let n = 10_000;
        let started = std::time::Instant::now();
        for _ in 0..n {
            metrics.finished(&end);
        }
        let per = started.elapsed().as_nanos() / n;
        eprintln!("Metrics::finished: {per} ns per request");
        let series = metrics.lock();
        assert_eq!(series.sets.len(), 1);
        let set = &series.sets[0].1;
        assert_eq!(set.input.count, n as u64);
        assert_eq!(set.input.counts[bucket(TOKEN_BUCKETS, 2317.0)], n as u64);
        assert_eq!(
            set.cache_read.counts[bucket(TOKEN_BUCKETS, 2048.0)],
            n as u64
        );
        assert_eq!(
            set.cache_creation.counts[bucket(TOKEN_BUCKETS, 200.0)],
            n as u64
        );
        assert_eq!(
            set.duration[""].counts[bucket(DURATION_BUCKETS, 1.5)],
            n as u64
        );
        assert_eq!(series.outcomes[&("ok", String::new())], n as u64);
    }

    #[test]
    fn label_values_are_escaped_and_cut() {
        let mut out = String::new();
        escape(&mut out, "a\"b\\c\nd");
        assert_eq!(out, "a\\\"b\\\\c\\nd");
        assert_eq!(clean(&"é".repeat(100)).len(), LABEL_VALUE_MAX);
    }
}
