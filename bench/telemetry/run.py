#!/usr/bin/env python3
"""The telemetry benchmark: sequential requests through `switchyard serve` with telemetry off,
to a live OTLP receiver, to a dead collector and to a hung one; p50/p90/p99 per way.

Run by bench/telemetry/run.sh. No timing is asserted; the run fails only when a request does.
"""

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
KEY = "sk-ant-telemetry-bench-0123456789"


def sse(events):
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


ANSWER = sse([
    ("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "usage": {"input_tokens": 12, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": "Paris."}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 3}}),
    ("message_stop", {"type": "message_stop"}),
])


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The head and the body are two writes: with Nagle on, the second waits for the gateway's
    # delayed ACK, a 40 ms floor under every request that would hide what is measured.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(cli, work, upstream, telemetry):
    home = tempfile.mkdtemp(dir=work)
    config = os.path.join(home, "serve.toml")
    with open(config, "w") as f:
        f.write(telemetry + "\n[serve.routes.sonnet]\nprovider = \"anthropic\"\n"
                f"model = \"claude-sonnet-4-5\"\nbase_url = \"{upstream}\"\n")
    env = {"PATH": os.environ.get("PATH", ""), "SWITCHYARD_HOME": home, "ANTHROPIC_API_KEY": KEY}
    proc = subprocess.Popen([cli, "--config", config, "serve", "--listen", "127.0.0.1:0"],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    prefix = "switchyard serve: listening on http://"
    if not line.startswith(prefix):
        proc.kill()
        sys.exit(f"switchyard serve did not start: {line}{proc.stderr.read()}")
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, line.strip()[len(prefix):]


def requests(addr, n):
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port))
    body = json.dumps({"model": "sonnet", "max_tokens": 64,
                       "messages": [{"role": "user", "content": "Capital of France?"}]})
    took = []
    for _ in range(n):
        start = time.perf_counter()
        conn.request("POST", "/v1/messages", body, {"content-type": "application/json"})
        response = conn.getresponse()
        data = response.read()
        took.append(time.perf_counter() - start)
        if response.status != 200 or b"Paris" not in data:
            sys.exit(f"a request failed: {response.status} {data[:300]!r}")
    conn.close()
    return took


def dropped(addr):
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port))
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    for line in text.splitlines():
        if line.startswith("switchyard_telemetry_dropped_total "):
            return int(line.split()[1])
    return None


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cli", required=True)
    p.add_argument("--receiver-python", required=True)
    p.add_argument("--requests", type=int, default=400)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=os.path.join(HERE, "..", "out"))
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="telemetry-bench-")
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    up = f"http://127.0.0.1:{upstream.server_address[1]}"
    receivers = []

    def receiver(stall):
        cmd = [args.receiver_python, os.path.join(ROOT, "scripts", "otlp-receiver.py"),
               "--out", os.path.join(work, f"otlp-{len(receivers)}.jsonl")]
        proc = subprocess.Popen(cmd + (["--stall"] if stall else []), stdout=subprocess.PIPE, text=True)
        receivers.append(proc)
        return json.loads(proc.stdout.readline())["http"]

    telemetry = "[telemetry]\nendpoint = \"http://127.0.0.1:{}\"\nmetrics_interval = 5\n"
    ways = {
        "off": "",
        "live receiver": telemetry.format(receiver(False)),
        "dead collector": telemetry.format(free_port()),
        "hung collector": telemetry.format(receiver(True)) + "queue_size = 256\nexport_timeout = 30\n",
    }
    servers = {name: start_serve(args.cli, work, up, t) for name, t in ways.items()}
    took = {name: [] for name in ways}
    try:
        for name, (_, addr) in servers.items():
            requests(addr, 50)  # warm-up: connections, caches
        for _ in range(args.rounds):
            for name, (_, addr) in servers.items():
                took[name] += requests(addr, args.requests)
        drops = {name: dropped(addr) for name, (_, addr) in servers.items()}
    finally:
        for proc, _ in servers.values():
            proc.kill()
        for proc in receivers:
            proc.kill()
        upstream.shutdown()
    rows = ["| telemetry | requests | p50 ms | p90 ms | p99 ms | mean ms | spans dropped |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for name, values in took.items():
        ms = [v * 1000 for v in values]
        drop = "" if drops[name] is None else str(drops[name])
        rows.append(f"| {name} | {len(ms)} | {quantile(ms, 0.5):.3f} | {quantile(ms, 0.9):.3f} | "
                    f"{quantile(ms, 0.99):.3f} | {statistics.mean(ms):.3f} | {drop} |")
    table = "\n".join(rows)
    print(table)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "telemetry-results.md"), "w") as f:
        f.write(f"Sequential non-streamed Messages requests through `switchyard serve`, "
                f"{args.rounds} interleaved rounds of {args.requests}.\n\n{table}\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
