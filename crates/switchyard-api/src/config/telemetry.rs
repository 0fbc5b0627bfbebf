//! The `[telemetry]` section: where `switchyard serve` and `switchyard task` send their spans and
//! metrics over OTLP, with the standard `OTEL_*` variables filling what the file leaves out.
//! Spec: R14.13.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// How long an export may take before its batch is dropped.
pub const DEFAULT_EXPORT_TIMEOUT_SECONDS: u64 = 10;
pub const DEFAULT_METRICS_INTERVAL_SECONDS: u64 = 60;
/// How many ended spans may wait for export; one more is dropped and counted.
pub const DEFAULT_QUEUE_SIZE: usize = 2048;
/// The most bytes of captured content kept per attribute.
pub const DEFAULT_CONTENT_MAX_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OtlpProtocol {
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    #[serde(rename = "grpc")]
    Grpc,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// `false` turns export off even when the variables name a collector.
    pub enabled: Option<bool>,
    /// The collector's base URL; over HTTP `/v1/traces` and `/v1/metrics` are appended.
    pub endpoint: Option<String>,
    pub protocol: Option<OtlpProtocol>,
    /// Sent with every export, as HTTP headers or gRPC metadata; the values are secrets.
    pub headers: BTreeMap<String, String>,
    /// The share of new traces kept, 0 to 1; a client's sampled flag is followed.
    pub sample_ratio: Option<f64>,
    pub service_name: Option<String>,
    /// Whether prompts and answers go into spans, scrubbed of every secret.
    pub capture_content: bool,
    pub content_max_bytes: Option<usize>,
    /// Whether metrics are exported beside the spans; default true.
    pub metrics: Option<bool>,
    pub metrics_interval: Option<u64>,
    pub queue_size: Option<usize>,
    pub export_timeout: Option<u64>,
}

/// Where and how to export, the file and the environment resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryExport {
    pub protocol: OtlpProtocol,
    /// The full URL of traces' export: over HTTP it ends in `/v1/traces`.
    pub traces_endpoint: String,
    /// The full URL of metrics' export, or `None` when metrics are not exported.
    pub metrics_endpoint: Option<String>,
    pub headers: Vec<(String, String)>,
    pub sample_ratio: f64,
    pub service_name: String,
    pub capture_content: bool,
    pub content_max_bytes: usize,
    pub metrics_interval: Duration,
    pub queue_size: usize,
    pub export_timeout: Duration,
}

impl TelemetrySettings {
    /// [`ConfigError::Limit`] for a ratio outside 0 to 1, or a size or interval of 0.
    pub(super) fn check(&self, file: &str) -> Result<(), ConfigError> {
        let limit = |setting: &str, value: String, what: &str| ConfigError::Limit {
            file: file.to_owned(),
            setting: format!("[telemetry] {setting}"),
            value,
            what: what.to_owned(),
        };
        if let Some(r) = self.sample_ratio.filter(|r| !(0.0..=1.0).contains(r)) {
            return Err(limit(
                "sample_ratio",
                r.to_string(),
                "write a share from 0 to 1",
            ));
        }
        for (name, value) in [
            (
                "content_max_bytes",
                self.content_max_bytes.map(|n| n as u64),
            ),
            ("metrics_interval", self.metrics_interval),
            ("queue_size", self.queue_size.map(|n| n as u64)),
            ("export_timeout", self.export_timeout),
        ] {
            if value == Some(0) {
                let what = "write at least 1, or leave it out for the default";
                return Err(limit(name, "0".to_owned(), what));
            }
        }
        Ok(())
    }

    /// The export these settings and `env` ask for, or `None` when telemetry is off. A setting
    /// in the file wins over its variable, as OpenTelemetry's SDKs rank code over environment.
    pub fn resolve(&self, env: impl Fn(&str) -> Option<String>) -> Option<TelemetryExport> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim() == "true");
        if self.enabled == Some(false) || (disabled && self.enabled.is_none()) {
            return None;
        }
        let protocol = self.protocol.unwrap_or_else(|| {
            let named = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
            match named.as_deref().map(str::trim) {
                Some("grpc") => OtlpProtocol::Grpc,
                _ => OtlpProtocol::HttpProtobuf,
            }
        });
        let endpoint = |signal: &str, path: &str| -> Option<String> {
            if let Some(base) = &self.endpoint {
                return Some(join(base, protocol, path));
            }
            // A signal's own variable is its full URL; the general one is a base.
            if let Some(own) = var(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")) {
                return Some(own.trim().to_owned());
            }
            var("OTEL_EXPORTER_OTLP_ENDPOINT").map(|e| join(&e, protocol, path))
        };
        let traces = endpoint("TRACES", "/v1/traces");
        let traces = match (traces, self.enabled) {
            (Some(url), _) => url,
            // Turned on with no collector named: the OTLP default on this host.
            (None, Some(true)) => join(default_endpoint(protocol), protocol, "/v1/traces"),
            (None, _) => return None,
        };
        let metrics = (self.metrics != Some(false)).then(|| {
            endpoint("METRICS", "/v1/metrics")
                .unwrap_or_else(|| join(&base_of(&traces), protocol, "/v1/metrics"))
        });
        Some(TelemetryExport {
            protocol,
            traces_endpoint: traces,
            metrics_endpoint: metrics,
            headers: self.headers.clone().into_iter().collect(),
            sample_ratio: self.sample_ratio.unwrap_or_else(|| env_ratio(&var)),
            service_name: (self.service_name.clone())
                .or_else(|| var("OTEL_SERVICE_NAME"))
                .unwrap_or_else(|| "switchyard".to_owned()),
            capture_content: self.capture_content,
            content_max_bytes: self.content_max_bytes.unwrap_or(DEFAULT_CONTENT_MAX_BYTES),
            metrics_interval: Duration::from_secs(
                (self.metrics_interval).unwrap_or(DEFAULT_METRICS_INTERVAL_SECONDS),
            ),
            queue_size: self.queue_size.unwrap_or(DEFAULT_QUEUE_SIZE),
            export_timeout: Duration::from_secs(
                self.export_timeout
                    .unwrap_or(DEFAULT_EXPORT_TIMEOUT_SECONDS),
            ),
        })
    }
}

fn default_endpoint(protocol: OtlpProtocol) -> &'static str {
    match protocol {
        OtlpProtocol::HttpProtobuf => "http://localhost:4318",
        OtlpProtocol::Grpc => "http://localhost:4317",
    }
}

/// A signal's URL from a base URL: over HTTP the signal's path is appended; gRPC has none.
fn join(base: &str, protocol: OtlpProtocol, path: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    match protocol {
        OtlpProtocol::HttpProtobuf => format!("{base}{path}"),
        OtlpProtocol::Grpc => base.to_owned(),
    }
}

/// The base URL a traces URL was made from.
fn base_of(traces: &str) -> String {
    traces
        .strip_suffix("/v1/traces")
        .unwrap_or(traces)
        .to_owned()
}

/// `OTEL_TRACES_SAMPLER_ARG` as a ratio when the sampler is a ratio one or unset; else 1.
fn env_ratio(var: &impl Fn(&str) -> Option<String>) -> f64 {
    let sampler = var("OTEL_TRACES_SAMPLER");
    let ratio_sampler = sampler
        .as_deref()
        .is_none_or(|s| s.contains("traceidratio"));
    let arg = var("OTEL_TRACES_SAMPLER_ARG").and_then(|a| a.trim().parse::<f64>().ok());
    match (sampler.as_deref().map(str::trim), arg) {
        (Some("always_off" | "parentbased_always_off"), _) => 0.0,
        (_, Some(r)) if ratio_sampler && (0.0..=1.0).contains(&r) => r,
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ApiConfiguration;
    use crate::config::test_env;

    #[test]
    fn the_file_wins_and_the_variables_fill_what_it_leaves_out() {
        let text = "[telemetry]\nendpoint = \"http://collector:4318/\"\nsample_ratio = 0.25\n\
                    headers = { authorization = \"Bearer abc\" }\n";
        let config = ApiConfiguration::from_toml(text, "c.toml", |_| None).unwrap();
        let env = test_env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://elsewhere:4318"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.5"),
            ("OTEL_SERVICE_NAME", "gw-eu"),
        ]);
        let export = config.telemetry.resolve(env).unwrap();
        assert_eq!(export.traces_endpoint, "http://collector:4318/v1/traces");
        assert_eq!(
            export.metrics_endpoint.as_deref(),
            Some("http://collector:4318/v1/metrics")
        );
        assert_eq!(
            (export.sample_ratio, export.service_name.as_str()),
            (0.25, "gw-eu")
        );
        assert_eq!(
            export.headers,
            [("authorization".into(), "Bearer abc".into())]
        );
        assert!(!export.capture_content);
    }

    #[test]
    fn the_variables_alone_turn_export_on_and_nothing_turns_it_off() {
        let off = TelemetrySettings::default();
        assert_eq!(off.resolve(|_| None), None);
        let env = test_env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:4317"),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.1"),
        ]);
        let export = off.resolve(&env).unwrap();
        assert_eq!(export.protocol, OtlpProtocol::Grpc);
        assert_eq!(export.traces_endpoint, "http://c:4317");
        assert_eq!(export.metrics_endpoint.as_deref(), Some("http://m:4317"));
        assert_eq!(export.sample_ratio, 0.1);
        let disabled = TelemetrySettings {
            enabled: Some(false),
            ..TelemetrySettings::default()
        };
        assert_eq!(disabled.resolve(&env), None);
        let sdk_off = test_env(&[
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
        ]);
        assert_eq!(off.resolve(sdk_off), None);
    }

    #[test]
    fn a_ratio_outside_zero_to_one_and_a_zero_queue_are_refused() {
        for text in [
            "[telemetry]\nsample_ratio = 1.5\n",
            "[telemetry]\nqueue_size = 0\n",
        ] {
            let e = ApiConfiguration::from_toml(text, "c.toml", |_| None).unwrap_err();
            assert!(e.to_string().contains("[telemetry]"), "{e}");
        }
        let e = ApiConfiguration::from_toml(
            "[telemetry]\nprotocol = \"http/json\"\n",
            "c.toml",
            |_| None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("http/json"), "{e}");
    }
}
