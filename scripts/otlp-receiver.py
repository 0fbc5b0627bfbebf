#!/usr/bin/env python3
"""A small OTLP receiver for the tests and the benchmark (SPEC R14.13).

It accepts OTLP/HTTP protobuf on POST /v1/traces and /v1/metrics and OTLP/gRPC (the trace and
metrics services), decodes every export with the official `opentelemetry-proto` package, and
writes one JSON line per span, per metric data point and per export request to --out.

Once both listeners are up it prints one JSON line to stdout, {"http": PORT, "grpc": PORT}, and
then runs until it is killed. --stall makes it accept exports and never answer them: a
collector that hangs rather than one that is down.

Run it with the venv scripts/otlp-receiver.sh makes: scripts/otlp-receiver.sh run ARGS.
"""

import argparse
import gzip
import json
import sys
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import (
    trace_service_pb2,
    trace_service_pb2_grpc,
)

LOCK = threading.Lock()
OUT = None
STALL = False


def write(record):
    line = json.dumps(record, sort_keys=True)
    with LOCK:
        OUT.write(line + "\n")
        OUT.flush()


def value(any_value):
    """An AnyValue as plain JSON: a string, number, bool or list."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    if kind is None:
        return None
    return getattr(any_value, kind)


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def spans(request, transport):
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                write(
                    {
                        "signal": "span",
                        "transport": transport,
                        "resource": resource,
                        "scope": scope_spans.scope.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "trace_state": span.trace_state,
                        "name": span.name,
                        "kind": span.kind,
                        "start_ns": span.start_time_unix_nano,
                        "end_ns": span.end_time_unix_nano,
                        "attributes": attributes(span.attributes),
                        "events": [
                            {"name": e.name, "attributes": attributes(e.attributes)}
                            for e in span.events
                        ],
                        "status": {"code": span.status.code, "message": span.status.message},
                    }
                )


def metrics(request, transport):
    for resource_metrics in request.resource_metrics:
        resource = attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                data = MessageToDict(metric, preserving_proto_field_name=True)
                kind = next((k for k in ("sum", "gauge", "histogram") if k in data), "other")
                body = getattr(metric, kind, None) if kind != "other" else None
                for point in body.data_points if body is not None else []:
                    record = {
                        "signal": "metric",
                        "transport": transport,
                        "resource": resource,
                        "name": metric.name,
                        "unit": metric.unit,
                        "kind": kind,
                        "attributes": attributes(point.attributes),
                    }
                    if kind == "histogram":
                        record["count"] = point.count
                        record["sum"] = point.sum
                        record["bounds"] = list(point.explicit_bounds)
                        record["buckets"] = list(point.bucket_counts)
                    else:
                        which = point.WhichOneof("value")
                        record["value"] = getattr(point, which) if which else None
                    write(record)


def export_seen(transport, path, headers):
    write({"signal": "export", "transport": transport, "path": path, "headers": headers})


def stall():
    # A collector that takes the export and never answers: the exporter's timeout ends it.
    while True:
        time.sleep(3600)


class Http(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        if self.headers.get("content-encoding", "") == "gzip":
            body = gzip.decompress(body)
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.path == "/v1/traces":
            request, response = trace_service_pb2.ExportTraceServiceRequest(), trace_service_pb2.ExportTraceServiceResponse()
        elif self.path == "/v1/metrics":
            request, response = metrics_service_pb2.ExportMetricsServiceRequest(), metrics_service_pb2.ExportMetricsServiceResponse()
        else:
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if STALL:
            stall()
        request.ParseFromString(body)
        export_seen("http", self.path, headers)
        if self.path == "/v1/traces":
            spans(request, "http")
        else:
            metrics(request, "http")
        out = response.SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def metadata(context):
    return {k.lower(): v for k, v in context.invocation_metadata()}


class Traces(trace_service_pb2_grpc.TraceServiceServicer):
    def Export(self, request, context):
        if STALL:
            stall()
        export_seen("grpc", "/v1/traces", metadata(context))
        spans(request, "grpc")
        return trace_service_pb2.ExportTraceServiceResponse()


class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
    def Export(self, request, context):
        if STALL:
            stall()
        export_seen("grpc", "/v1/metrics", metadata(context))
        metrics(request, "grpc")
        return metrics_service_pb2.ExportMetricsServiceResponse()


def main():
    global OUT, STALL
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the JSON-lines file to append to")
    parser.add_argument("--http-port", type=int, default=0)
    parser.add_argument("--grpc-port", type=int, default=0)
    parser.add_argument("--stall", action="store_true", help="take exports, never answer")
    args = parser.parse_args()
    OUT = open(args.out, "a", encoding="utf-8")
    STALL = args.stall
    http = ThreadingHTTPServer(("127.0.0.1", args.http_port), Http)
    http.daemon_threads = True
    threading.Thread(target=http.serve_forever, daemon=True).start()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)
    grpc_port = server.add_insecure_port(f"127.0.0.1:{args.grpc_port}")
    server.start()
    print(json.dumps({"http": http.server_address[1], "grpc": grpc_port}), flush=True)
    try:
        server.wait_for_termination()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
