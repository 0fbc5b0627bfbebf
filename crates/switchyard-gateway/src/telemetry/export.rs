//! The OTLP exporters of `[telemetry]`: HTTP/protobuf over reqwest, or gRPC over tonic.
//! Spec: R14.13.

use std::collections::HashMap;

use opentelemetry_otlp::tonic_types::metadata::MetadataMap;
use opentelemetry_otlp::{
    MetricExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig, WithTonicConfig,
};
use switchyard_api::config::{OtlpProtocol, TelemetryExport};

pub(super) fn spans(export: &TelemetryExport) -> Result<SpanExporter, String> {
    let url = &export.traces_endpoint;
    let built = match export.protocol {
        OtlpProtocol::HttpProtobuf => SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url)
            .with_timeout(export.export_timeout)
            .with_headers(headers(export))
            .build(),
        OtlpProtocol::Grpc => SpanExporter::builder()
            .with_tonic()
            .with_protocol(Protocol::Grpc)
            .with_endpoint(url)
            .with_timeout(export.export_timeout)
            .with_metadata(metadata(export)?)
            .build(),
    };
    built.map_err(|e| format!("the span exporter to {url} could not be built: {e}"))
}

pub(super) fn metrics(export: &TelemetryExport, url: &str) -> Result<MetricExporter, String> {
    let built = match export.protocol {
        OtlpProtocol::HttpProtobuf => MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url)
            .with_timeout(export.export_timeout)
            .with_headers(headers(export))
            .build(),
        OtlpProtocol::Grpc => MetricExporter::builder()
            .with_tonic()
            .with_protocol(Protocol::Grpc)
            .with_endpoint(url)
            .with_timeout(export.export_timeout)
            .with_metadata(metadata(export)?)
            .build(),
    };
    built.map_err(|e| format!("the metric exporter to {url} could not be built: {e}"))
}

fn headers(export: &TelemetryExport) -> HashMap<String, String> {
    export.headers.iter().cloned().collect()
}

fn metadata(export: &TelemetryExport) -> Result<MetadataMap, String> {
    let mut map = hyper::HeaderMap::new();
    for (name, value) in &export.headers {
        let name = hyper::header::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
            .map_err(|_| format!("[telemetry] headers: {name:?} is not a header name"))?;
        // The value is a secret: the error names only its header.
        let value = hyper::header::HeaderValue::from_str(value).map_err(|_| {
            format!("[telemetry] headers: the value of {name} is not a header value")
        })?;
        map.insert(name, value);
    }
    Ok(MetadataMap::from_headers(map))
}
