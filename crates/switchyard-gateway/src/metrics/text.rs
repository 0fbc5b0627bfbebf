//! The text of `/metrics`: histograms, their `_bucket`, `_sum` and `_count` lines, a family's
//! `# HELP` and `# TYPE` lines, and escaped label values.
//! Spec: R14.9.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// A histogram under the metrics' mutex: a count per bucket, not cumulative, `+Inf` last.
#[derive(Debug)]
pub(super) struct Histogram {
    bounds: &'static [f64],
    pub(super) counts: Vec<u64>,
    sum: f64,
    pub(super) count: u64,
}

impl Histogram {
    pub(super) fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    pub(super) fn observe(&mut self, value: f64) {
        self.counts[bucket(self.bounds, value)] += 1;
        self.sum += value;
        self.count += 1;
    }

    pub(super) fn render(&self, out: &mut String, name: &str, labels: &str) {
        render_histogram(out, name, labels, self.bounds, &self.counts, self.sum);
    }
}

/// A lock-free histogram; its sum is kept in nanoseconds.
#[derive(Debug)]
pub(super) struct AtomicHistogram {
    bounds: &'static [f64],
    counts: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
}

impl AtomicHistogram {
    pub(super) fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
        }
    }

    pub(super) fn observe(&self, seconds: f64) {
        self.counts[bucket(self.bounds, seconds)].fetch_add(1, Ordering::Relaxed);
        self.sum_ns
            .fetch_add((seconds * 1e9) as u64, Ordering::Relaxed);
    }

    pub(super) fn render(&self, out: &mut String, name: &str, labels: &str) {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        render_histogram(out, name, labels, self.bounds, &counts, sum);
    }
}

/// The bucket `value` falls in: the first bound it is at most, as Prometheus' `le`, else `+Inf`.
pub(super) fn bucket(bounds: &[f64], value: f64) -> usize {
    bounds.partition_point(|&b| b < value)
}

/// A histogram's cumulative `_bucket` lines, `+Inf` last, then `_sum` and `_count`.
fn render_histogram(
    out: &mut String,
    name: &str,
    labels: &str,
    bounds: &[f64],
    counts: &[u64],
    sum: f64,
) {
    let sep = if labels.is_empty() { "" } else { "," };
    let mut total = 0;
    for (i, n) in counts.iter().enumerate() {
        total += n;
        match bounds.get(i) {
            Some(le) => {
                let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {total}");
            }
            None => {
                let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {total}");
            }
        }
    }
    let braces = if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    };
    let _ = writeln!(out, "{name}_sum{braces} {sum}");
    let _ = writeln!(out, "{name}_count{braces} {total}");
}

pub(super) fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A gauge of no labels: its family lines and its one sample.
pub(super) fn gauge(out: &mut String, name: &str, help: &str, value: impl std::fmt::Display) {
    family(out, name, "gauge", help);
    let _ = writeln!(out, "{name} {value}");
}

/// `value` escaped as a label value: backslash, double quote, newline.
pub(super) fn escape(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}
