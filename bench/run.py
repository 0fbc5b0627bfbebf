#!/usr/bin/env python3
"""The benchmark driver behind bench/run.sh (see bench/README.md).

Expects the binaries built and the SDKs installed (run.sh does both), then:

1. generates the synthetic streams (gen_streams.py) and starts the loopback server;
2. throughput: consumes each wire format's big stream with every client, alternating the
   order each round; every process is measured from outside with ``os.wait4`` (wall time,
   user+system CPU time, peak RSS), the same way for every client; each client also reports
   its in-process stream time and its counts, which must equal the generator's manifest;
3. time to first token: ``switchyard task --json`` against ``curl -N``, alternating, both timed
   from process spawn to the first line carrying text;
4. concurrency: N streams at once in one ``switchyard-bench`` process;
5. the SSE decoder micro-benchmark (criterion) of switchyard-api;

and writes the tables to ``bench/out/results-SIZE.md`` (and ``.json``). Any count mismatch,
client failure or stream error makes it exit non-zero. No timing is asserted.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import gen_streams

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OPENAI_MODEL = "gpt-4o"
ANTHROPIC_MODEL = "claude-haiku-4-5-20251001"

# Per size: throughput rounds, time-to-first-token runs per client, concurrent streams.
PLANS = {
    # `concurrency`: (stream, number of streams at once) pairs, each run `conc_runs` times.
    "full": {"rounds": 7, "ttft_runs": 50, "conc_runs": 3,
             "concurrency": [(name, n) for name in ("openai_ttft", "openai_conc")
                             for n in (10, 100, 1000)]},
    "tiny": {"rounds": 1, "ttft_runs": 3, "conc_runs": 1,
             "concurrency": [("openai_conc", 100)]},
}


# Longest any one client process may run, in seconds, before it is killed and the run fails.
PROCESS_TIMEOUT_S = 300


class BenchFailure(Exception):
    """A client failed or saw different content: the run is invalid."""


def kill_after(proc, what):
    """Starts a timer that kills `proc` after PROCESS_TIMEOUT_S; `.fired` tells if it did."""
    def fire():
        timer.fired = True
        proc.kill()

    timer = threading.Timer(PROCESS_TIMEOUT_S, fire)
    timer.fired = False
    timer.what = what
    timer.daemon = True
    timer.start()
    return timer


def check_timer(timer):
    timer.cancel()
    if timer.fired:
        raise BenchFailure(f"{timer.what} did not finish within {PROCESS_TIMEOUT_S} s")


# ----------------------------------------------------------------------------- measuring


def measure(cmd, env, cwd=None):
    """Runs `cmd` to the end; returns wall/CPU/RSS from wait4 and its stdout's last JSON line."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd)
        timer = kill_after(proc, " ".join(map(str, cmd[:4])))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        check_timer(timer)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise BenchFailure(f"{' '.join(map(str, cmd))} exited {proc.returncode}: {stderr[-2000:]}")
    lines = [l for l in stdout.splitlines() if l.strip()]
    report = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    return {
        "wall_ms": wall * 1000,
        "cpu_ms": (usage.ru_utime + usage.ru_stime) * 1000,
        "rss_kb": usage.ru_maxrss,
        "report": report,
        "stdout": stdout,
    }


def server_cpu_ms(pid):
    """User+system CPU time of a running process, from /proc (clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def med(values):
    return statistics.median(values) if values else float("nan")


def spread(values):
    return (min(values), max(values)) if values else (float("nan"), float("nan"))


# ----------------------------------------------------------------------------- the server


class Server:
    def __init__(self, bench_bin, stream_dir):
        self.proc = subprocess.Popen(
            [bench_bin, "serve", "--dir", stream_dir], stdout=subprocess.PIPE, text=True
        )
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening "):
            self.proc.kill()
            raise BenchFailure(f"the loopback server did not start: {line!r}")
        self.url = line.split(" ", 1)[1]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


# ----------------------------------------------------------------------------- clients


def clients_for(wire, size, url, paths):
    """The (name, command) of every client for one wire format."""
    if wire == "openai":
        base = f"{url}/s/openai_{size}/v1"
        model, sdk = OPENAI_MODEL, "openai"
        curl_path, provider = f"{base}/chat/completions", "openai"
        body = {"model": model, "stream": True, "stream_options": {"include_usage": True},
                "messages": [{"role": "user", "content": "Benchmark request."}]}
        headers = ["-H", "authorization: Bearer bench-dummy-key"]
    else:
        base = f"{url}/s/anthropic_{size}"
        model, sdk = ANTHROPIC_MODEL, "anthropic"
        curl_path, provider = f"{base}/v1/messages", "anthropic"
        body = {"model": model, "max_tokens": 64000, "stream": True,
                "messages": [{"role": "user", "content": "Benchmark request."}]}
        headers = ["-H", "x-api-key: bench-dummy-key", "-H", "anthropic-version: 2023-06-01"]
    rust = [paths["bench_bin"], "consume", "--provider", provider, "--base-url", base,
            "--model", model]
    node = [paths["node"], str(BENCH / "clients/node/consume.mjs"), "--sdk", sdk,
            "--base-url", base, "--model", model]
    py = [paths["python"], str(BENCH / "clients/python/consume.py"), "--sdk", sdk,
          "--base-url", base, "--model", model]
    curl = [paths["curl"], "-sS", "-o", "/dev/null", "-w", "%{size_download}", "-X", "POST",
            "-H", "content-type: application/json", *headers, "--data", json.dumps(body),
            curl_path]
    return [
        ("Switchyard (Rust, ApiHandler)", rust),
        (f"Node `{sdk}` SDK", node),
        (f"Python `{sdk}` SDK", py),
        ("curl (bytes only)", curl),
    ]


# Delta counts a client may lower by joining deltas: Switchyard's secret scrubber holds back a
# delta's tail that could start a configured key (the benchmark's `bench-dummy-key`: a delta
# ending in "b") and hands it on with the next (SPEC R10.5). What was said — every character,
# the usage — must still be exactly what was sent.
JOINABLE = ("text", "reasoning", "tool_args")


def check_counts(name, report, manifest):
    got, want = report.get("counts") or {}, manifest["counts"]
    joins = name.startswith("Switchyard")
    same = all(
        got.get(k) == v or (joins and k in JOINABLE and 0 < (got.get(k) or 0) <= v)
        for k, v in want.items()
    )
    if not same or set(got) != set(want):
        raise BenchFailure(
            f"{name} saw different content than was sent:\n  got  {got}\n  want {want}"
        )


def throughput(wire, size, rounds, server, env, paths, manifest):
    clients = clients_for(wire, size, server.url, paths)
    runs = {name: [] for name, _ in clients}
    for r in range(rounds):
        k = r % len(clients)
        order = clients[k:] + clients[:k]  # a different client goes first each round
        for name, cmd in order:
            before = server_cpu_ms(server.proc.pid)
            m = measure(cmd, env)
            m["server_cpu_ms"] = server_cpu_ms(server.proc.pid) - before
            if name.startswith("curl"):
                if int(m["stdout"].strip() or 0) != manifest["bytes"]:
                    raise BenchFailure(
                        f"curl read {m['stdout'].strip()} bytes, the stream has {manifest['bytes']}"
                    )
                # curl reports nothing itself: its stream is the whole process.
                m["report"] = {"stream_ms": m["wall_ms"], "stream_cpu_ms": m["cpu_ms"],
                               "peak_rss_kb": None}
            else:
                check_counts(f"{name} ({wire})", m["report"], manifest)
            runs[name].append(m)
            rep = m["report"]
            print(f"  {wire} round {r + 1}/{rounds} {name}: stream {rep['stream_ms']:.0f} ms, "
                  f"stream cpu {rep['stream_cpu_ms']:.0f} ms, process cpu {m['cpu_ms']:.0f} ms",
                  flush=True)
    return runs


# ----------------------------------------------------------------------------- first token


def first_text_cli(cmd, env, cwd):
    """Spawns the CLI; ms from spawn to its first `text` line, and its own first_token_ms."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=cwd, bufsize=0)
    timer = kill_after(proc, "switchyard task")
    first, own = None, None
    for raw in proc.stdout:
        line = raw.decode()
        if first is None and '"type":"text"' in line:
            first = (time.perf_counter() - started) * 1000
        if '"type":"task_finished"' in line:
            own = json.loads(line).get("first_token_ms")
    err = proc.stderr.read().decode()
    code = proc.wait()
    check_timer(timer)
    if code != 0 or first is None:
        raise BenchFailure(f"switchyard task failed or printed no text: {err[-2000:]}")
    return first, own


def first_text_curl(cmd, env):
    """Spawns curl -N; ms from spawn to the first SSE line whose delta has content."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            bufsize=0)
    timer = kill_after(proc, "curl -N")
    first = None
    for raw in proc.stdout:
        if first is None and raw.startswith(b"data: {"):
            chunk = json.loads(raw[6:])
            if any(c.get("delta", {}).get("content") for c in chunk.get("choices", [])):
                first = (time.perf_counter() - started) * 1000
    code = proc.wait()
    check_timer(timer)
    if code != 0 or first is None:
        raise BenchFailure(f"curl -N failed or saw no text: {proc.stderr.read().decode()}")
    return first


class RequestClock:
    """A loopback HTTP/1.1 server that notes when each request's first bytes arrive
    (``time.perf_counter``, the clock the driver spawns by) and answers every request with one
    pre-read SSE body (Content-Length, then close): spawn → first request, timed from here."""

    def __init__(self, body):
        import socket
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.response = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"content-length: " + str(len(body)).encode() +
                         b"\r\nconnection: close\r\n\r\n" + body)
        self.arrivals = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(65536)
                self.arrivals.append(time.perf_counter())
                while b"\r\n\r\n" not in data:
                    more = conn.recv(65536)
                    if not more:
                        break
                    data += more
                head, _, body = data.partition(b"\r\n\r\n")
                m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
                want = int(m.group(1)) if m else 0
                while len(body) < want:
                    more = conn.recv(65536)
                    if not more:
                        break
                    body += more
                conn.sendall(self.response)

    def stop(self):
        self.sock.close()

    def time_one(self, cmd, env, cwd=None):
        """Spawns `cmd`; ms from spawn to its request's first bytes at this server."""
        before = len(self.arrivals)
        started = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, timeout=60)
        if proc.returncode != 0 or len(self.arrivals) != before + 1:
            raise BenchFailure(f"{cmd[0]} failed or sent no request: "
                               f"{proc.stderr.decode()[-2000:]}")
        return (self.arrivals[before] - started) * 1000


def cli_and_curl(base, env, paths):
    """The same one-question request to the OpenAI-compatible `base` two ways: `switchyard task
    --json` with a configuration in a new home folder, and `curl -sN` with the body the CLI sends.
    Returns (home, cli command, cli environment, curl command); the caller removes `home`."""
    home = Path(tempfile.mkdtemp(prefix="switchyard-bench-"))
    config = home / "config.toml"
    config.write_text(
        f'[act]\nprovider = "openai"\nmodel = "{OPENAI_MODEL}"\n\n'
        f'[providers.openai]\nbase_url = "{base}"\n'
    )
    cli_env = dict(env, SWITCHYARD_HOME=str(home), HOME=str(home))
    cli = [paths["cli"], "task", "--config", str(config), "--json", "Say hello."]
    body = json.dumps({"model": OPENAI_MODEL, "stream": True,
                       "messages": [{"role": "user", "content": "Say hello."}]})
    curl = [paths["curl"], "-sN", "-X", "POST", "-H", "content-type: application/json",
            "-H", "authorization: Bearer bench-dummy-key", "--data", body,
            f"{base}/chat/completions"]
    return home, cli, cli_env, curl


def spawn_to_request(runs, env, paths, stream_dir):
    """`runs` alternating spawns of `switchyard task --json` and `curl`, each timed from spawn
    to its request's first bytes at a loopback server (RequestClock)."""
    clock = RequestClock((Path(stream_dir) / "openai_ttft.sse").read_bytes())
    home, cli, cli_env, curl = cli_and_curl(f"http://127.0.0.1:{clock.port}/v1", env, paths)
    try:
        # One task first: the store's file is created once, as on any machine after first use.
        clock.time_one(cli, cli_env, home)
        cli_ms, curl_ms = [], []
        for i in range(runs):
            pair = [("cli", cli, cli_env, home), ("curl", curl, env, None)]
            if i % 2:
                pair.reverse()
            for which, cmd, e, cwd in pair:
                (cli_ms if which == "cli" else curl_ms).append(clock.time_one(cmd, e, cwd))
    finally:
        clock.stop()
        shutil.rmtree(home, ignore_errors=True)
    return {"cli_ms": cli_ms, "curl_ms": curl_ms}


def first_token(runs, server, env, paths):
    home, cli, cli_env, curl = cli_and_curl(f"{server.url}/s/openai_ttft/v1", env, paths)
    cli_ms, own_ms, curl_ms = [], [], []
    for i in range(runs):
        pair = [("cli", None), ("curl", None)]
        if i % 2:
            pair.reverse()
        for which, _ in pair:
            if which == "cli":
                first, own = first_text_cli(cli, cli_env, home)
                cli_ms.append(first)
                if own is not None:
                    own_ms.append(own)
            else:
                curl_ms.append(first_text_curl(curl, env))
    shutil.rmtree(home, ignore_errors=True)
    return {"cli_ms": cli_ms, "cli_own_ms": own_ms, "curl_ms": curl_ms}


# ----------------------------------------------------------------------------- concurrency


def concurrency(stream, streams, runs, server, env, paths, manifest):
    """`runs` runs of `streams` streams of `stream` at once in one process; every stream must
    succeed."""
    base = f"{server.url}/s/{stream}/v1"
    cmd = [paths["bench_bin"], "consume", "--provider", "openai", "--base-url", base,
           "--model", OPENAI_MODEL, "--streams", str(streams)]
    results = []
    for i in range(runs):
        before = server_cpu_ms(server.proc.pid)
        m = measure(cmd, env)
        m["server_cpu_ms"] = server_cpu_ms(server.proc.pid) - before
        m.pop("stdout", None)
        r = m["report"]
        if r.get("errors") != 0 or r.get("mismatched") != 0 or r.get("streams") != streams:
            raise BenchFailure(f"concurrency run had errors or mismatches: {r}")
        check_counts(f"{streams} concurrent streams", r, manifest)
        print(f"  run {i + 1}/{runs}: {r['stream_ms']:.0f} ms, peak RSS "
              f"{r['peak_rss_kb'] / 1024:.0f} MB, 0 errors", flush=True)
        results.append(m)
    return results


# ----------------------------------------------------------------------------- decoder


def decoder_bench(size, profile):
    """Runs the criterion SSE decoder benchmark; returns [(name, time, throughput)]."""
    if size == "tiny":
        # Smoke: criterion's test mode runs each variant once (and checks their counts agree).
        # The flags of scripts/test.sh (and run.sh's dev build), so nothing is rebuilt.
        cmd = ["cargo", "test", "--workspace", "--bench", "sse_decoder"]
        if profile == "release":
            cmd.insert(2, "--release")
    else:
        cmd = ["cargo", "bench", "-p", "switchyard-api", "--bench", "sse_decoder", "--",
               "--warm-up-time", "1", "--measurement-time", "3"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchFailure(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    results, current = [], None
    for line in proc.stdout.splitlines():
        m = re.match(r"^(sse_\S+/(\w+))", line)
        if m:
            current = m.group(2)
        t = re.search(r"time:\s+\[\S+ \S+ (\S+ \S+) \S+ \S+\]", line)
        if t and current:
            results.append([current, t.group(1), None])
        q = re.search(r"thrpt:\s+\[\S+ \S+ (\S+ \S+) \S+ \S+\]", line)
        if q and results:
            results[-1][2] = q.group(1)
    return {"command": " ".join(cmd), "results": results}


def criterion_seconds(text):
    """Criterion's printed time ("7.9741 ms", "703.47 µs") in seconds, None if unreadable."""
    m = re.fullmatch(r"([\d.]+) (s|ms|µs|us|ns)", text)
    if not m:
        return None
    scale = {"s": 1, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}[m.group(2)]
    return float(m.group(1)) * scale


# ----------------------------------------------------------------------------- report


def machine():
    meminfo = Path("/proc/meminfo").read_text()
    mem_kb = int(re.search(r"MemTotal:\s+(\d+)", meminfo).group(1))
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = re.search(r"model name\s*:\s*(.+)", cpuinfo)
    return {
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "cpu": model.group(1).strip() if model else platform.processor(),
        "os": f"{platform.system()} {platform.release()}",
    }


def tool_version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout.strip()
    except OSError:
        return "?"


def versions(paths):
    node_mods = BENCH / "clients/node/node_modules"

    def npm_version(pkg):
        return json.loads((node_mods / pkg / "package.json").read_text())["version"]

    py = tool_version([paths["python"], "-c",
                       "import importlib.metadata as m, sys\n"
                       "names = {d.metadata['Name'] for d in m.distributions()}\n"
                       "http = 'httpx2' if 'httpx2' in names else 'httpx'\n"
                       "print(sys.version.split()[0], m.version('openai'), "
                       "m.version('anthropic'), http, m.version(http))"]).split()
    return {
        "switchyard": tool_version([paths["cli"], "--version"]).removeprefix("switchyard "),
        "git_commit": tool_version(["git", "rev-parse", "--short", "HEAD"]),
        "rustc": tool_version(["rustc", "--version"]).removeprefix("rustc ").split(" (")[0],
        "node": tool_version([paths["node"], "--version"]).removeprefix("v"),
        "npm openai": npm_version("openai"),
        "npm @anthropic-ai/sdk": npm_version("@anthropic-ai/sdk"),
        "python": py[0] if py else "?",
        "pypi openai": py[1] if len(py) > 1 else "?",
        "pypi anthropic": py[2] if len(py) > 2 else "?",
        f"pypi {py[3] if len(py) > 4 else 'httpx'}": py[4] if len(py) > 4 else "?",
        "curl": (tool_version([paths["curl"], "--version"]).split() + ["?", "?"])[1],
    }


def fmt_ms(values):
    lo, hi = spread(values)
    return f"{med(values):,.0f} ({lo:,.0f}–{hi:,.0f})"


def throughput_table(wire, manifest, runs):
    def col(ms, key):
        return [r["report"][key] for r in ms if r["report"].get(key) is not None]

    sy = runs["Switchyard (Rust, ApiHandler)"]
    sy_stream, sy_cpu = med(col(sy, "stream_ms")), med(col(sy, "stream_cpu_ms"))
    c = manifest["counts"]
    rows = [
        f"**{wire}**: {manifest['bytes'] / 1e6:.1f} MB, {manifest['events']:,} SSE events; "
        f"every client counted {c['text']:,} text, {c['reasoning']:,} reasoning and "
        f"{c['tool_args']:,} tool-argument deltas and {c['usage']} usage report, with their "
        "lengths, checked against the generator's manifest.",
        "",
        "| client | stream time, ms: median (min–max) | × Switchyard | stream CPU, ms | "
        "× Switchyard | whole process CPU, ms | peak RSS, MB | MB/s | first text, ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, ms in runs.items():
        stream, cpu = col(ms, "stream_ms"), col(ms, "stream_cpu_ms")
        rss, first = col(ms, "peak_rss_kb"), col(ms, "first_text_ms")
        rows.append(
            f"| {name} | {fmt_ms(stream)} | {med(stream) / sy_stream:.1f}× | "
            f"{fmt_ms(cpu)} | {med(cpu) / sy_cpu:.1f}× | "
            f"{med([r['cpu_ms'] for r in ms]):,.0f} | "
            f"{(f'{med(rss) / 1024:.1f}' if rss else '–')} | "
            f"{manifest['bytes'] / 1e6 / (med(stream) / 1000):,.0f} | "
            f"{(f'{med(first):,.1f}' if first else '–')} |"
        )
    return rows


def render(result):
    m, v, plan = result["machine"], result["versions"], result["plan"]
    load = result["load"]
    out = [
        f"Run {result['date']} with `{result['command']}` "
        f"({plan['rounds']} round{'s' if plan['rounds'] != 1 else ''}, clients alternating; "
        f"{result['profile']} build).",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['os']}; "
        f"load average {load['start']:.2f} at start, {load['end']:.2f} at end.",
        "",
        "Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".",
        "",
        "### Stream throughput",
        "",
        "Each client measures its own stream: time and CPU time (user + system, all "
        "threads) from sending the request to the end of the stream, and its peak RSS "
        "(`VmHWM`), and the time from the request to its first text delta (median). "
        "\"Whole process CPU\" is measured from outside with `wait4`: it adds "
        "interpreter start and SDK imports. curl only reads the bytes to /dev/null (whole "
        "process): the floor set by the server and the kernel.",
        "",
    ]
    for wire in ("openai", "anthropic"):
        t = result["throughput"][wire]
        out += throughput_table(t["label"], t["manifest"], t["runs"]) + [""]
    ttft = result["ttft"]
    out += [
        "### Time to first token",
        "",
        f"{len(ttft['cli_ms'])} runs each, alternating; the server sends the whole short "
        "stream at once. Both timed from process spawn to the first line carrying text.",
        "",
        "| client | first text, ms: median (min–max) |",
        "|---|---|",
        f"| `switchyard task --json` (whole CLI: start, config, prompt, request) | "
        f"{fmt_ms(ttft['cli_ms'])} |",
        f"| `curl -N` | {fmt_ms(ttft['curl_ms'])} |",
        f"| Switchyard's own `first_token_ms` (inside the task) | "
        f"{fmt_ms(ttft['cli_own_ms'])} |",
        "",
        f"Overhead of the CLI over curl: {med(ttft['cli_ms']) - med(ttft['curl_ms']):+.1f} ms "
        "(median).",
        "",
    ]
    spawn = result["spawn"]
    out += [
        "### Spawn to first request",
        "",
        f"{len(spawn['cli_ms'])} runs each, alternating (after one task that creates the store's "
        "file): from process spawn to the arrival of the request's first bytes at a loopback "
        "server in the driver (both on the driver's clock). The CLI opens its task store, "
        "commits the task and its first message, reads its configuration, builds the system "
        "prompt and the handler, then sends.",
        "",
        "| client | spawn → request, ms: median (min–max) |",
        "|---|---|",
        f"| `switchyard task --json` | {fmt_ms(spawn['cli_ms'])} |",
        f"| `curl` | {fmt_ms(spawn['curl_ms'])} |",
        "",
        f"Overhead of the CLI over curl: {med(spawn['cli_ms']) - med(spawn['curl_ms']):+.1f} ms "
        "(median).",
        "",
    ]
    def rng(values, f="{:,.0f}"):
        lo, hi = spread(values)
        return f"{f.format(med(values))} ({f.format(lo)}–{f.format(hi)})"

    conc = result["concurrency"]
    out += [
        "### Concurrency",
        "",
        "N streams of one OpenAI Chat Completions stream at once in one `switchyard-bench` "
        "process (multi-thread tokio runtime, one shared `ApiHandler`); each stream waits until "
        f"all N are open before reading on. {len(conc[0]['runs'])} run(s) each: median "
        "(min–max). Every stream of every run ended without error and with the generator's "
        "counts. Peak RSS per stream is (peak RSS − RSS before the streams) / N.",
        "",
        "| stream | streams | errors | wall, ms | MB/s | chunks/s | process CPU, ms | "
        "RSS before, MB | peak RSS, MB | peak RSS per stream, kB | server CPU, ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in conc:
        runs = c["runs"]
        reps = [m["report"] for m in runs]
        n = c["streams"]
        stream_bytes = c["manifest"]["bytes"]
        wall = [r["stream_ms"] for r in reps]
        mbps = [n * stream_bytes / 1e6 / (r["stream_ms"] / 1000) for r in reps]
        chunks = [r["chunks"] / (r["stream_ms"] / 1000) for r in reps]
        base = [r["baseline_rss_kb"] / 1024 for r in reps]
        peak = [r["peak_rss_kb"] / 1024 for r in reps]
        per = [(r["peak_rss_kb"] - r["baseline_rss_kb"]) / n for r in reps]
        out.append(
            f"| `{c['stream']}` ({stream_bytes / 1e3:,.1f} kB, {c['manifest']['events']:,} "
            f"events) | {n:,} | {sum(r['errors'] for r in reps)} | {rng(wall)} | {rng(mbps)} | "
            f"{rng(chunks)} | {rng([m['cpu_ms'] for m in runs])} | {rng(base, '{:.1f}')} | "
            f"{rng(peak)} | {rng(per)} | {rng([m['server_cpu_ms'] for m in runs])} |")
    out += [
        "",
        "### SSE decoder micro-benchmark",
        "",
        f"`{result['decoder']['command']}`",
        "",
        "| variant | time (median estimate) | throughput | % of the memchr bound | "
        "× eventsource-stream |",
        "|---|---|---|---|---|",
    ]
    seconds = {name: criterion_seconds(t) for name, t, _ in result["decoder"]["results"]}
    bound, theirs = seconds.get("memchr_upper_bound"), seconds.get("eventsource_stream")
    for name, t, q in result["decoder"]["results"]:
        mine = seconds[name]
        share = f"{100 * bound / mine:.1f} %" if bound and mine else "–"
        ratio = f"{theirs / mine:.1f}×" if theirs and mine else "–"
        out.append(f"| {name} | {t} | {q or '–'} | {share} | {ratio} |")
    if not result["decoder"]["results"]:
        out.append("| (test mode: each variant ran once, counts agreed) | – | – | – | – |")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser(description="Switchyard benchmark driver (use bench/run.sh)")
    p.add_argument("--size", choices=sorted(PLANS), default="full")
    p.add_argument("--profile", default="release")
    p.add_argument("--bench-bin", required=True)
    p.add_argument("--cli", required=True)
    p.add_argument("--python", required=True)
    p.add_argument("--node", default="node")
    p.add_argument("--curl", default="curl")
    p.add_argument("--rounds", type=int)
    p.add_argument("--command", default="bench/run.sh")
    a = p.parse_args()
    plan = dict(PLANS[a.size])
    if a.rounds:
        plan["rounds"] = a.rounds
    paths = {"bench_bin": a.bench_bin, "cli": a.cli, "python": a.python, "node": a.node,
             "curl": a.curl}
    out_dir = BENCH / "out"
    stream_dir = out_dir / "streams"
    print(f"generating {a.size} streams into {stream_dir}", flush=True)
    gen_streams.generate(a.size, stream_dir)
    manifests = {p.stem: json.loads(p.read_text()) for p in stream_dir.glob("*.json")}

    env = dict(os.environ, OPENAI_API_KEY="bench-dummy-key", ANTHROPIC_API_KEY="bench-dummy-key",
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                "all_proxy", "RUST_LOG"):
        env.pop(var, None)

    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": a.command, "profile": a.profile, "plan": plan,
        "machine": machine(), "versions": versions(paths),
        "load": {"start": os.getloadavg()[0]}, "throughput": {},
    }
    server = Server(a.bench_bin, str(stream_dir))
    try:
        for wire, label in (("openai", "OpenAI Chat Completions"),
                            ("anthropic", "Anthropic Messages")):
            name = f"{wire}_{a.size}"
            print(f"throughput: {label} ({name})", flush=True)
            runs = throughput(wire, a.size, plan["rounds"], server, env, paths,
                                        manifests[name])
            result["throughput"][wire] = {"label": label, "manifest": manifests[name],
                                          "runs": runs}
        print(f"time to first token: {plan['ttft_runs']} runs each", flush=True)
        result["ttft"] = first_token(plan["ttft_runs"], server, env, paths)
        print(f"spawn to first request: {plan['ttft_runs']} runs each", flush=True)
        result["spawn"] = spawn_to_request(plan["ttft_runs"], env, paths, stream_dir)
        result["concurrency"] = []
        for stream, streams in plan["concurrency"]:
            print(f"concurrency: {streams} streams of {stream}", flush=True)
            runs = concurrency(stream, streams, plan["conc_runs"], server, env, paths,
                               manifests[stream])
            result["concurrency"].append({"stream": stream, "streams": streams,
                                          "manifest": manifests[stream], "runs": runs})
    finally:
        server.stop()
    print("SSE decoder micro-benchmark", flush=True)
    result["decoder"] = decoder_bench(a.size, a.profile)
    result["load"]["end"] = os.getloadavg()[0]

    table = render(result)
    (out_dir / f"results-{a.size}.md").write_text(table)
    for t in result["throughput"].values():
        for runs in t["runs"].values():
            for r in runs:
                r.pop("stdout", None)
    (out_dir / f"results-{a.size}.json").write_text(json.dumps(result, indent=1))
    print()
    print(table)
    print(f"written to {out_dir / f'results-{a.size}.md'}; all clients agreed on every count.")


if __name__ == "__main__":
    try:
        main()
    except BenchFailure as e:
        print(f"benchmark FAILED: {e}", file=sys.stderr)
        sys.exit(1)
