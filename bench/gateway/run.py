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

# Faulty upstream answers, each routed with a fallback to the `zero` answer (same text), so a
# gateway that fails over delivers the whole answer. What the client saw is counted by kind.
FAULTS = {
    "f429": "status=429",
    "f500": "status=500",
    "f529": "status=529",
    "fstall": "n=16,size=16,stall=0",
    "fcut": "n=16,size=16,cut=4",
    "fbad": "n=16,size=16,bad=4",
}
# Seconds each gateway is told to wait for a first chunk (and between chunks) before failing
# over; the load gives an answer FAULT_TIMEOUT * 4 in all.
FAULT_TIMEOUT = 3

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
    # Open loop: requests due at a fixed rate, timed from when they were due.
    ("zero stream open 200/s", "chat", "chat", "zero", True, 0, 1000, {"rate": 200}),
    ("16x5ms open 500/s", "chat", "chat", "p16x5", True, 0, 1500, {"rate": 500}),
    # 1,000 streams at once: the memory per stream in flight (LiteLLM left out: at its ~10
    # streams per second here the lane would take minutes and time out).
    ("64x20ms c=1000", "chat", "chat", "p64x20", True, 1000, 1000, {"skip": {"litellm", "litellm-2w"}}),
]

# The keys + budget + RPM gateway (a second `switchyard serve` with a store and a client key)
# runs only these lanes.
KEYS_LANES = {"zero c=1 whole", "zero c=1 stream", "16x5ms c=32", "16x5ms c=128"}

# Fault lanes: name, fault, requests per round (concurrency 1, streamed Chat on Chat).
# The direct baseline (no gateway, so no fallback) shows each raw fault once per round, except
# the stall, which would only wait out the load's timeout.
FAULT_LANES = [(f"fault {name}", "chat", "chat", name, True, 1, 4,
                {"timeout": FAULT_TIMEOUT * 4, "fault": True,
                 "skip": {"direct"} if name == "fstall" else set()}) for name in FAULTS]

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

    def __init__(self, name, proc, url_of, model_of, headers=(), lanes=None):
        self.name, self.proc, self.url_of, self.model_of = name, proc, url_of, model_of
        self.headers = list(headers)
        self.lanes = lanes  # None: every lane
        self.idle_rss_kb = status_kb(proc.pid, "VmRSS") if proc else None
        self.startup_s = None
        self.pause_rss_kb = None

    def runs(self, lane):
        opts = lane[7] if len(lane) > 7 else {}
        return (self.lanes is None or lane[0] in self.lanes) and self.name not in opts.get("skip", ())


def first_200(url, model, headers, proc, started, seconds=180):
    """Seconds from `started` to the first 200 of a whole Chat request for `model` at `url`
    (polled every 20 ms), or None when the process exits or `seconds` pass."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}],
                       "max_tokens": 16}).encode()
    hdrs = {"content-type": "application/json"}
    for h in headers:
        k, v = h.split(":", 1)
        hdrs[k.strip()] = v.strip()
    while time.monotonic() - started < seconds:
        if proc.poll() is not None:
            return None
        try:
            req = urllib.request.Request(url, data=body, headers=hdrs, method="POST")
            if urllib.request.urlopen(req, timeout=2).status == 200:
                return time.monotonic() - started
        except Exception:
            pass
        time.sleep(0.02)
    return None


def start_upstream(args, work):
    sse = os.path.join(work, "sse")
    os.makedirs(sse)
    with open(os.path.join(sse, "unused.sse"), "w") as f:
        f.write("data: {}\n\n")
    proc = subprocess.Popen(pin(1) + [args.bench_bin, "serve", "--dir", sse], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    return proc, line.split()[-1]


def switchyard_config(up):
    """serve.toml: a route per upstream answer, a route per fault with its fallback."""
    # The faulty entries go through provider `xai` (a plain Chat Completions preset), so only
    # they have the short timeouts: the ordinary routes keep the defaults.
    lines = ["[serve]", "max_connections = 4096", "",
             "[providers.xai]", f"first_content_timeout_seconds = {FAULT_TIMEOUT}",
             f"idle_timeout_seconds = {FAULT_TIMEOUT}", ""]
    for spec, (s, _, _) in SPECS.items():
        lines += [f'[serve.routes."chat-{spec}"]', 'provider = "openai"', 'model = "bench"',
                  f'base_url = "{up}/p/{s}/v1"']
        lines += [f'[serve.routes."messages-{spec}"]', 'provider = "anthropic"',
                  'model = "claude-sonnet-4-5"', f'base_url = "{up}/p/{s}"']
    for name, fault in FAULTS.items():
        lines += [f'[serve.routes."chat-{name}"]', 'provider = "xai"', 'model = "bench"',
                  f'base_url = "{up}/p/{fault}/v1"', f'[[serve.routes."chat-{name}".fallbacks]]',
                  'provider = "openai"', 'model = "bench"', f'base_url = "{up}/p/{SPECS["zero"][0]}/v1"']
    return "\n".join(lines) + "\n"


def start_switchyard(args, up, work, keys=False):
    name = "switchyard+keys" if keys else "switchyard"
    home = os.path.join(work, name)
    os.makedirs(home)
    port = free_port()
    config = os.path.join(home, "serve.toml")
    with open(config, "w") as f:
        f.write(switchyard_config(up))
    env = {"PATH": os.environ["PATH"], "SWITCHYARD_HOME": home, "OPENAI_API_KEY": "sk-bench-unused",
           "ANTHROPIC_API_KEY": "sk-ant-bench-unused", "XAI_API_KEY": "xai-bench-unused"}
    headers, auth = [], ["--no-auth"]
    if keys:
        # A client key with a daily budget and an RPM limit: every request holds, settles and
        # takes a rate slot (SPEC R14.6, R14.7) on the SQLite store in `home`.
        key = subprocess.run([args.cli, "keys", "create", "--name", "bench", "--budget", "100000/day",
                              "--rpm", "1000000"], env=env, capture_output=True, text=True, check=True)
        secret = key.stdout.strip().split()[-1]
        headers, auth = [f"authorization: Bearer {secret}", f"x-api-key: {secret}"], []
    started = time.monotonic()
    proc = subprocess.Popen(pin(0) + [args.cli, "--config", config, "serve", *auth, "--listen",
                            f"127.0.0.1:{port}"], env=env, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, name + ".log"), "w"))
    base = f"http://127.0.0.1:{port}"
    t = Target(name, proc, lambda lane: base + PATHS[lane[1]], lambda lane: f"{lane[2]}-{lane[3]}", headers,
               KEYS_LANES if keys else None)
    t.startup_s = first_200(base + PATHS["chat"], "chat-zero", headers, proc, started, 30)
    if t.startup_s is None:
        raise SystemExit(f"switchyard serve did not answer: see {os.path.join(work, name + '.log')}")
    return t


def start_litellm(args, up, work, workers=1):
    name = "litellm" if workers == 1 else f"litellm-{workers}w"
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
    for fname, fault in FAULTS.items():
        lines += [f"  - model_name: chat-{fname}",
                  f'    litellm_params: {{model: openai/bench, api_base: "{up}/p/{fault}/v1", api_key: sk-unused,'
                  f" timeout: {FAULT_TIMEOUT}, stream_timeout: {FAULT_TIMEOUT}}}"]
    fallbacks = ", ".join(f'{{"chat-{f}": ["chat-zero"]}}' for f in FAULTS)
    lines += ["litellm_settings:", "  telemetry: false", "  success_callback: []", "  callbacks: []",
              "router_settings:", f"  fallbacks: [{fallbacks}]",
              "general_settings:", f"  master_key: {key}"]
    config = os.path.join(work, name + ".yaml")
    with open(config, "w") as f:
        f.write("\n".join(lines) + "\n")
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_TELEMETRY="False",
               LITELLM_LOG="ERROR", NO_DOCS="True")
    env.pop("DATABASE_URL", None)
    started = time.monotonic()
    # More than one worker under uvicorn: every child dies at start-up ("Child process died",
    # BerriAI/litellm#18457, since 1.80); under gunicorn (in the `litellm[proxy]` extra) they run.
    many = ["--run_gunicorn"] if workers > 1 else []
    proc = subprocess.Popen(pin(0) + [litellm, "--config", config, "--host", "127.0.0.1", "--port", str(port),
                            "--num_workers", str(workers), *many], env=env, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, name + ".log"), "w"))
    base = f"http://127.0.0.1:{port}"
    headers = [f"authorization: Bearer {key}", f"x-api-key: {key}"]
    t = Target(name, proc, lambda lane: base + PATHS[lane[1]], lambda lane: f"{lane[2]}-{lane[3]}", headers)
    t.startup_s = first_200(base + PATHS["chat"], "chat-zero", headers, proc, started)
    if t.startup_s is None:
        proc.kill()
        return None, "did not answer within 180 s (see its log)"
    return t, None


def start_tensorzero(args, up, work):
    python = os.path.join(args.peers, "bin", "python")
    if not os.path.exists(python):
        return None, "not installed"
    lines = []
    for spec, (s, _, _) in SPECS.items():
        lines += [f'[models."chat-{spec}"]', 'routing = ["up"]', f'[models."chat-{spec}".providers.up]',
                  'type = "openai"', 'model_name = "bench"', f'api_base = "{up}/p/{s}/v1/"',
                  'api_key_location = "none"']
    ms = FAULT_TIMEOUT * 1000
    for fname, fault in FAULTS.items():
        # Model provider routing: the faulty provider, then the good one (its fallback).
        lines += [f'[models."chat-{fname}"]', 'routing = ["bad", "good"]',
                  f'[models."chat-{fname}".providers.bad]', 'type = "openai"', 'model_name = "bench"',
                  f'api_base = "{up}/p/{fault}/v1/"', 'api_key_location = "none"',
                  f"timeouts = {{ non_streaming = {{ total_ms = {ms} }}, streaming = {{ ttft_ms = {ms} }} }}",
                  f'[models."chat-{fname}".providers.good]', 'type = "openai"', 'model_name = "bench"',
                  f'api_base = "{up}/p/{SPECS["zero"][0]}/v1/"', 'api_key_location = "none"']
    config = os.path.join(work, "tensorzero.toml")
    with open(config, "w") as f:
        f.write("\n".join(lines) + "\n")
    script = ("import sys, time, tensorzero\n"
              "g = tensorzero._start_http_gateway(config_file=sys.argv[1], clickhouse_url=None,"
              " postgres_url=None, valkey_url=None, async_setup=False)\n"
              "print(g.base_url, flush=True)\n"
              "while True: time.sleep(3600)\n")
    env = dict(os.environ, TENSORZERO_DISABLE_PSEUDONYMOUS_USAGE_ANALYTICS="1", RUST_LOG="error")
    started = time.monotonic()
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

    t = Target("tensorzero", proc, url_of, model_of)
    t.startup_s = first_200(base + "/chat/completions", "tensorzero::model_name::chat-zero", [], proc, started)
    return t, None


def direct(up):
    def url_of(lane):
        spec = SPECS[lane[3]][0] if lane[3] in SPECS else FAULTS[lane[3]]
        return f"{up}/p/{spec}{PATHS[lane[1]]}"

    return Target("direct", None, url_of, lambda lane: "bench")


def run_lane(args, target, lane):
    name, dialect, _, spec, stream, conc, requests = lane[:7]
    opts = lane[7] if len(lane) > 7 else {}
    url = target.url_of(lane)
    if url is None or not target.runs(lane):
        return None
    _, chunks, size = SPECS.get(spec, SPECS["zero"])
    requests = max(conc, 1, int(requests * args.scale))
    cmd = pin(1) + [args.bench_bin, "load", "--url", url, "--dialect", dialect, "--model", target.model_of(lane),
                    "--requests", str(requests), "--chunks", str(chunks), "--size", str(size),
                    "--timeout", str(opts.get("timeout", 60))] + (["--stream"] if stream else [])
    cmd += ["--rate", str(opts["rate"])] if "rate" in opts else ["--concurrency", str(conc)]
    for h in target.headers:
        cmd += ["--header", h]
    pid = target.proc.pid if target.proc else None
    if pid:
        reset_peak(pid)
        cpu0 = cpu_ms(pid)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
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
    out = ["| lane | gateway | added first text p50 / p99, µs | added last byte p50 / p99, µs | req/s | errors (all rounds) | "
           "CPU per request, ms | peak RSS, MiB |", "|---|---|---|---|---|---|---|---|"]
    for lane in lanes:
        name = lane[0]
        base = [r[("direct", name)] for r in rounds]
        for t in targets:
            results = [r.get((t.name, name)) for r in rounds]
            if not t.runs(lane):
                out.append(f"| {name} | {t.name} | not run in this lane | | | | | |")
                continue
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
            said = next((x.get("first_error") for x in results if x.get("first_error")), None)
            note = f" ({said})" if errors and said else ""
            out.append(f"| {name} | {label} | {first} | {last} | {rps} | {errors}{note} | {cpu} | {rss} |")
    return "\n".join(out)


def fault_table(rounds, targets):
    """Markdown: what each gateway's client saw when the upstream failed, with a fallback."""
    out = ["| fault (fallback: the zero answer) | gateway | complete answers | what the other answers were "
           "| last byte p50 of complete ones, ms |", "|---|---|---|---|---|"]
    for lane in FAULT_LANES:
        for t in targets:
            results = [r.get((t.name, lane[0])) for r in rounds]
            if any(x is None for x in results):
                out.append(f"| {lane[0]} | {t.name} | n/a | | |")
                continue
            ok = sum(x.get("ok", 0) for x in results)
            asked = sum(x.get("requests", 0) for x in results)
            kinds = {}
            for x in results:
                for k, n in (x.get("error_kinds") or {}).items():
                    kinds[k] = kinds.get(k, 0) + n
                if not x.get("error_kinds") and x.get("errors"):
                    kinds["load failed"] = kinds.get("load failed", 0) + x["errors"]
            seen = ", ".join(f"{k} × {n}" for k, n in sorted(kinds.items())) or "–"
            last = med([x["last_byte_us"]["p50"] for x in results if x.get("last_byte_us")])
            label = "direct (no gateway, no fallback)" if t.name == "direct" else t.name
            out.append(f"| {lane[0]} | {label} | {ok} / {asked} | {seen} | "
                       f"{'–' if last is None else f'{last / 1000:,.1f}'} |")
    return "\n".join(out)


def memory_table(targets, rounds):
    """Markdown: start-up, idle, after a pause, and at 1,000 streams in flight."""
    out = ["| gateway | start to first 200, s | idle RSS, MiB | peak at 1,000 streams, MiB | per stream "
           "in flight, KiB | RSS after the run and a 5 s pause, MiB |", "|---|---|---|---|---|---|"]
    for t in targets:
        if not t.proc:
            continue
        lane = "64x20ms c=1000"
        peaks = [r.get((t.name, lane)) for r in rounds]
        peak = med([x.get("peak_rss_kb") for x in peaks if x])
        per = None if peak is None else (peak - t.idle_rss_kb) / 1000
        f = lambda v, d=1: "–" if v is None else f"{v:,.{d}f}"
        out.append(f"| {t.name} | {f(t.startup_s, 2)} | {f(t.idle_rss_kb / 1024)} | "
                   f"{f(None if peak is None else peak / 1024)} | {f(per, 0)} | "
                   f"{f(None if t.pause_rss_kb is None else t.pause_rss_kb / 1024)} |")
    return "\n".join(out)


def start_targets(args, up, work, notes):
    targets = [direct(up), start_switchyard(args, up, work), start_switchyard(args, up, work, keys=True)]
    only = set(filter(None, args.only.split(",")))
    workers = args.litellm_workers.split(",")
    starts = [("litellm", lambda: start_litellm(args, up, work))] if "1" in workers else []
    if "2" in workers:
        starts.append(("litellm-2w", lambda: start_litellm(args, up, work, workers=2)))
    starts.append(("tensorzero", lambda: start_tensorzero(args, up, work)))
    for name, start in starts:
        if only and name.split("-")[0] not in only:
            continue
        t, why = start()
        if t is None:
            notes[name] = why
            print(f"== {name}: {why}", file=sys.stderr)
        else:
            targets.append(t)
    return targets


def run_rounds(args, targets):
    lanes = LANES + FAULT_LANES
    # One warm-up pass of the ordinary lanes (connections, caches).
    for t in targets:
        for lane in LANES:
            if lane[5] < 1000:
                run_lane(argparse.Namespace(**{**vars(args), "scale": 0.05}), t, lane)
    rounds = []
    for r in range(args.rounds):
        results = {}
        order = targets[r % len(targets):] + targets[:r % len(targets)]
        for lane in lanes:
            for t in order:  # interleaved: A B C, then B C A, ...
                results[(t.name, lane[0])] = run_lane(args, t, lane)
            print(f"== round {r + 1}/{args.rounds}: {lane[0]} done", file=sys.stderr, flush=True)
        rounds.append(results)
    return rounds


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bench-bin", required=True)
    p.add_argument("--cli", required=True)
    p.add_argument("--peers", default=os.path.join(HERE, "..", ".venv-peers"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scale", type=float, default=1.0, help="multiplies every lane's requests")
    p.add_argument("--only", default="", help="comma-separated peers (litellm,tensorzero)")
    p.add_argument("--litellm-workers", default="1,2", help="LiteLLM worker counts to run: 1, 2 or 1,2")
    p.add_argument("--out", default=os.path.join(HERE, "..", "out"))
    p.add_argument("--lanes", default="", help="comma-separated parts of lane names: run only those lanes")
    args = p.parse_args()
    if args.lanes:
        wanted = [w.strip() for w in args.lanes.split(",") if w.strip()]
        LANES[:] = [lane for lane in LANES if any(w in lane[0] for w in wanted)]
        FAULT_LANES[:] = [lane for lane in FAULT_LANES if any(w in lane[0] for w in wanted)]
        if not LANES and not FAULT_LANES:
            raise SystemExit(f"--lanes {args.lanes}: no lane's name contains any of these")
    work = tempfile.mkdtemp(prefix="switchyard-gw-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    targets, notes = [], {}
    upstream = None
    try:
        upstream, up = start_upstream(args, work)
        targets = start_targets(args, up, work, notes)
        time.sleep(1)
        for t in targets:
            if t.proc:
                t.idle_rss_kb = status_kb(t.proc.pid, "VmRSS")
        up_cpu0 = cpu_ms(upstream.pid)
        rounds = run_rounds(args, targets)
        up_cpu = cpu_ms(upstream.pid) - up_cpu0
        time.sleep(5)
        for t in targets:
            if t.proc:
                t.pause_rss_kb = status_kb(t.proc.pid, "VmRSS")
        md = [table(rounds, targets, LANES), "", fault_table(rounds, targets), "",
              memory_table(targets, rounds), "",
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
        procs = [upstream] + [t.proc for t in targets]
        for proc in procs:
            if proc and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc and proc.wait(timeout=10)
            except Exception:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
