#!/usr/bin/env python3
"""The gateway benchmark's driver (bench/README.md, "Gateways"; issue 25).

Starts the paced upstream (`switchyard-bench serve`), `switchyard serve --no-auth`, and, when
their venv exists, LiteLLM and TensorZero, all routed to the upstream; then, round after round
(targets interleaved: direct, switchyard, litellm, tensorzero, direct, ...), runs every lane
with `switchyard-bench load` against each, and prints the side-by-side table of medians of
rounds. Gateways run on CPU 0, upstream and load on CPU 1 (`taskset`, when present).
Every answer is checked by `load` (whole text, end event, usage); no timing is asserted.
"""

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CLK = os.sysconf("SC_CLK_TCK")

# Upstream answers: spec of the paced upstream (`paced.rs`), chunks, size.
SPECS = {
    "zero": ("n=16,size=16", 16, 16),
    "p16x5": ("n=16,size=16,gap=5", 16, 16),
    "p64x20": ("n=64,size=16,gap=20", 64, 16),
}

# name, client dialect, upstream dialect, spec, stream, concurrency, requests per round
LANES = [
    ("zero c=1 whole", "chat", "chat", "zero", False, 1, 300),
    ("zero c=1 stream", "chat", "chat", "zero", True, 1, 300),
    ("16x5ms c=8", "chat", "chat", "p16x5", True, 8, 64),
    ("16x5ms c=32", "chat", "chat", "p16x5", True, 32, 128),
    ("16x5ms c=128", "chat", "chat", "p16x5", True, 128, 256),
    ("64x20ms c=8", "chat", "chat", "p64x20", True, 8, 16),
    ("64x20ms c=32", "chat", "chat", "p64x20", True, 32, 64),
    ("64x20ms c=128", "chat", "chat", "p64x20", True, 128, 256),
    ("messages on chat c=1", "messages", "chat", "zero", True, 1, 200),
    ("responses on chat c=1", "responses", "chat", "zero", True, 1, 200),
    ("messages on messages c=1", "messages", "messages", "zero", True, 1, 200),
]

PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pin(cpu):
    return ["taskset", "-c", str(cpu)] if shutil.which("taskset") and os.cpu_count() >= 2 else []


def wait_http(url, seconds, proc):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            return False
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return True
        except Exception as e:  # not up yet
            if getattr(e, "code", None):
                return True
            time.sleep(0.2)
    return False


def tree(pid):
    """pid and all its descendants."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cpu_ms(pid):
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total * 1000 / CLK


def status_kb(pid, key):
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith(key + ":"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def reset_peak(pid):
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass


class Target:
    """A gateway (or the direct baseline): how to reach each lane, its process."""

    def __init__(self, name, proc, url_of, model_of, headers=()):
        self.name, self.proc, self.url_of, self.model_of = name, proc, url_of, model_of
        self.headers = list(headers)
        self.idle_rss_kb = status_kb(proc.pid, "VmRSS") if proc else None


def start_upstream(args, work):
    sse = os.path.join(work, "sse")
    os.makedirs(sse)
    with open(os.path.join(sse, "unused.sse"), "w") as f:
        f.write("data: {}\n\n")
    proc = subprocess.Popen(pin(1) + [args.bench_bin, "serve", "--dir", sse], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    return proc, line.split()[-1]


def start_switchyard(args, up, work):
    home = os.path.join(work, "switchyard")
    os.makedirs(home)
    port = free_port()
    lines = []
    for spec, (s, _, _) in SPECS.items():
        lines += [f'[serve.routes."chat-{spec}"]', 'provider = "openai"', 'model = "bench"',
                  f'base_url = "{up}/p/{s}/v1"']
        lines += [f'[serve.routes."messages-{spec}"]', 'provider = "anthropic"',
                  'model = "claude-sonnet-4-5"', f'base_url = "{up}/p/{s}"']
    config = os.path.join(home, "serve.toml")
    with open(config, "w") as f:
        f.write("\n".join(lines) + "\n")
    env = {"PATH": os.environ["PATH"], "SWITCHYARD_HOME": home, "OPENAI_API_KEY": "sk-bench-unused",
           "ANTHROPIC_API_KEY": "sk-ant-bench-unused"}
    proc = subprocess.Popen(pin(0) + [args.cli, "--config", config, "serve", "--no-auth", "--listen",
                            f"127.0.0.1:{port}"], env=env, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "switchyard.log"), "w"))
    base = f"http://127.0.0.1:{port}"
    if not wait_http(base + "/health", 30, proc):
        raise SystemExit("switchyard serve did not start: see " + os.path.join(work, "switchyard.log"))
    return Target("switchyard", proc, lambda lane: base + PATHS[lane[1]], lambda lane: f"{lane[2]}-{lane[3]}")


def start_litellm(args, up, work):
    litellm = os.path.join(args.peers, "bin", "litellm")
    if not os.path.exists(litellm):
        return None, f"not installed ({litellm} missing: run bench/gateway/run.sh --peers)"
    key = "sk-" + secrets.token_hex(24)
    port = free_port()
    lines = ["model_list:"]
    for spec, (s, _, _) in SPECS.items():
        lines += [f"  - model_name: chat-{spec}",
                  f'    litellm_params: {{model: openai/bench, api_base: "{up}/p/{s}/v1", api_key: sk-unused}}',
                  f"  - model_name: messages-{spec}",
                  f'    litellm_params: {{model: anthropic/bench, api_base: "{up}/p/{s}", api_key: sk-unused}}']
    lines += ["litellm_settings:", "  telemetry: false", "  success_callback: []", "  callbacks: []",
              "general_settings:", f"  master_key: {key}"]
    config = os.path.join(work, "litellm.yaml")
    with open(config, "w") as f:
        f.write("\n".join(lines) + "\n")
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_TELEMETRY="False",
               LITELLM_LOG="ERROR", NO_DOCS="True")
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen(pin(0) + [litellm, "--config", config, "--host", "127.0.0.1", "--port", str(port),
                            "--num_workers", "1"], env=env, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "litellm.log"), "w"))
    base = f"http://127.0.0.1:{port}"
    if not wait_http(base + "/health/liveliness", 180, proc):
        proc.kill()
        return None, "did not start within 180 s (see its log)"
    headers = [f"authorization: Bearer {key}", f"x-api-key: {key}"]
    return Target("litellm", proc, lambda lane: base + PATHS[lane[1]], lambda lane: f"{lane[2]}-{lane[3]}",
                  headers), None


def start_tensorzero(args, up, work):
    python = os.path.join(args.peers, "bin", "python")
    if not os.path.exists(python):
        return None, "not installed"
    lines = []
    for spec, (s, _, _) in SPECS.items():
        lines += [f'[models."chat-{spec}"]', 'routing = ["up"]', f'[models."chat-{spec}".providers.up]',
                  'type = "openai"', 'model_name = "bench"', f'api_base = "{up}/p/{s}/v1/"',
                  'api_key_location = "none"']
    config = os.path.join(work, "tensorzero.toml")
    with open(config, "w") as f:
        f.write("\n".join(lines) + "\n")
    script = ("import sys, time, tensorzero\n"
              "g = tensorzero._start_http_gateway(config_file=sys.argv[1], clickhouse_url=None,"
              " postgres_url=None, valkey_url=None, async_setup=False)\n"
              "print(g.base_url, flush=True)\n"
              "while True: time.sleep(3600)\n")
    env = dict(os.environ, TENSORZERO_DISABLE_PSEUDONYMOUS_USAGE_ANALYTICS="1", RUST_LOG="error")
    proc = subprocess.Popen(pin(0) + [python, "-c", script, config], env=env, stdout=subprocess.PIPE,
                            stderr=open(os.path.join(work, "tensorzero.log"), "w"), text=True)
    base = proc.stdout.readline().strip()  # .../openai/v1
    if not base.startswith("http"):
        proc.kill()
        return None, "did not start (see its log)"

    def url_of(lane):
        return base + "/chat/completions" if lane[1] == "chat" else None  # only an OpenAI Chat ingress

    def model_of(lane):
        return f"tensorzero::model_name::{lane[2]}-{lane[3]}" if lane[2] == "chat" else None

    return Target("tensorzero", proc, url_of, model_of), None


def direct(up):
    def url_of(lane):
        return f"{up}/p/{SPECS[lane[3]][0]}{PATHS[lane[1]]}"

    return Target("direct", None, url_of, lambda lane: "bench")


def run_lane(args, target, lane):
    name, dialect, _, spec, stream, conc, requests = lane
    url = target.url_of(lane)
    if url is None:
        return None
    _, chunks, size = SPECS[spec]
    requests = max(conc, int(requests * args.scale))
    cmd = pin(1) + [args.bench_bin, "load", "--url", url, "--dialect", dialect, "--model", target.model_of(lane),
                    "--concurrency", str(conc), "--requests", str(requests), "--chunks", str(chunks),
                    "--size", str(size)] + (["--stream"] if stream else [])
    for h in target.headers:
        cmd += ["--header", h]
    pid = target.proc.pid if target.proc else None
    if pid:
        reset_peak(pid)
        cpu0 = cpu_ms(pid)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return {"errors": requests, "first_error": out.stderr.strip()[:300]}
    result = json.loads(out.stdout)
    if pid:
        result["cpu_ms_per_request"] = (cpu_ms(pid) - cpu0) / requests
        result["peak_rss_kb"] = status_kb(pid, "VmHWM")
    return result


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def table(rounds, targets, lanes):
    """Markdown: one row per lane and gateway."""
    out = ["| lane | gateway | added first text p50 / p99, µs | added last byte p50 / p99, µs | req/s | errors | "
           "CPU per request, ms | peak RSS, MiB |", "|---|---|---|---|---|---|---|---|"]
    for lane in lanes:
        name = lane[0]
        base = [r[("direct", name)] for r in rounds]
        for t in targets:
            results = [r.get((t.name, name)) for r in rounds]
            if any(x is None for x in results):
                out.append(f"| {name} | {t.name} | n/a (no such ingress) | | | | | |")
                continue
            errors = sum(x.get("errors", 0) for x in results)
            if errors and all(x.get("ok", 0) == 0 for x in results):
                out.append(f"| {name} | {t.name} | failed: {results[0].get('first_error')} | | | {errors} | | |")
                continue

            def added(key, q):
                if t.name == "direct":
                    return med([x[key][q] for x in results if x.get(key)])
                return med([x[key][q] - b[key][q] for x, b in zip(results, base)
                            if x.get(key) and x[key][q] is not None and b[key][q] is not None])

            def fmt(v, d=0):
                return "–" if v is None else f"{v:,.{d}f}"

            first = f"{fmt(added('first_text_us', 'p50'))} / {fmt(added('first_text_us', 'p99'))}"
            last = f"{fmt(added('last_byte_us', 'p50'))} / {fmt(added('last_byte_us', 'p99'))}"
            rps = fmt(med([x.get("rps") for x in results]))
            cpu = fmt(med([x.get("cpu_ms_per_request") for x in results]), 3)
            rss = fmt(med([x.get("peak_rss_kb") for x in results]) / 1024, 1) if t.proc else "–"
            label = "direct (absolute, not added)" if t.name == "direct" else t.name
            note = f" ({results[0].get('first_error')})" if errors else ""
            out.append(f"| {name} | {label} | {first} | {last} | {rps} | {errors}{note} | {cpu} | {rss} |")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bench-bin", required=True)
    p.add_argument("--cli", required=True)
    p.add_argument("--peers", default=os.path.join(HERE, "..", ".venv-peers"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scale", type=float, default=1.0, help="multiplies every lane's requests")
    p.add_argument("--only", default="", help="comma-separated gateways (switchyard,litellm,tensorzero)")
    p.add_argument("--out", default=os.path.join(HERE, "..", "out"))
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="switchyard-gw-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    procs = []
    notes = {}
    try:
        upstream, up = start_upstream(args, work)
        procs.append(upstream)
        targets = [direct(up)]
        only = set(filter(None, args.only.split(",")))
        sy = start_switchyard(args, up, work)
        procs.append(sy.proc)
        targets.append(sy)
        for name, start in (("litellm", start_litellm), ("tensorzero", start_tensorzero)):
            if only and name not in only:
                continue
            t, why = start(args, up, work)
            if t is None:
                notes[name] = why
                print(f"== {name}: {why}", file=sys.stderr)
            else:
                procs.append(t.proc)
                targets.append(t)
        time.sleep(1)
        for t in targets:
            if t.proc:
                t.idle_rss_kb = status_kb(t.proc.pid, "VmRSS")
        # One warm-up pass of every lane (connections, caches, JIT of nothing).
        for t in targets:
            for lane in LANES:
                run_lane(argparse.Namespace(**{**vars(args), "scale": 0.05}), t, lane)
        up_cpu0 = cpu_ms(upstream.pid)
        rounds = []
        for r in range(args.rounds):
            results = {}
            order = targets[r % len(targets):] + targets[:r % len(targets)]
            for lane in LANES:
                for t in order:  # interleaved: A B C, then B C A, ...
                    results[(t.name, lane[0])] = run_lane(args, t, lane)
                print(f"== round {r + 1}/{args.rounds}: {lane[0]} done", file=sys.stderr, flush=True)
            rounds.append(results)
        up_cpu = cpu_ms(upstream.pid) - up_cpu0
        md = [table(rounds, targets, LANES), "",
              "Idle RSS (after start, before any request): " + ", ".join(
                  f"{t.name} {t.idle_rss_kb / 1024:.1f} MiB" for t in targets if t.proc),
              f"Upstream CPU over the measured rounds: {up_cpu:,.0f} ms."]
        for name, why in notes.items():
            md.append(f"{name}: {why}.")
        text = "\n".join(md)
        print(text)
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "gateway-results.md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(args.out, "gateway-results.json"), "w") as f:
            json.dump([{f"{k[0]}|{k[1]}": v for k, v in r.items()} for r in rounds], f, indent=1)
    finally:
        for proc in procs:
            if proc and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except Exception:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
