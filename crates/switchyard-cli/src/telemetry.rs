//! `[telemetry]` started for a command: the gateway's OTLP export, or nothing when it is off.
//! Spec: R14.13.

use std::sync::Arc;
use std::time::Duration;

use switchyard_api::ApiConfiguration;
use switchyard_gateway::Telemetry;

/// How long a command's end waits for its last spans to be sent.
pub const FLUSH_WAIT: Duration = Duration::from_secs(5);

/// The telemetry `config` and the environment ask for, started on the current runtime.
///
/// # Errors
///
/// An exporter could not be built from the settings: the sentence says which and why.
pub fn start(config: &ApiConfiguration) -> Result<Arc<Telemetry>, String> {
    match config.telemetry.resolve(|name| std::env::var(name).ok()) {
        None => Ok(Arc::new(Telemetry::off())),
        Some(export) => {
            // The exporter reads these variables itself: their values are secrets all the same.
            for name in [
                "OTEL_EXPORTER_OTLP_HEADERS",
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
            ] {
                let pairs = std::env::var(name).unwrap_or_default();
                for value in pairs.split(',').filter_map(|pair| pair.split_once('=')) {
                    switchyard_api::secrets::register(value.1);
                }
            }
            let telemetry = Telemetry::start(&export)?;
            tracing::info!(endpoint = %export.traces_endpoint, "exporting spans over OTLP");
            Ok(Arc::new(telemetry))
        }
    }
}
