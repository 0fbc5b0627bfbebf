#!/usr/bin/env python3
"""What one client can take from `switchyard serve` (issue 46; SPEC R14.10): its memory and its
connections. No timing is asserted; the figures are printed as a table (and `--json`).

1. Memory: 1, 4 and 16 concurrent 30 MB Chat bodies of a million one-letter messages, each
   against a fresh `serve`: its resident memory before, at its peak (`VmHWM`) and settled
   (3 s and 15 s after the last answer).
2. A normal client's latency (p50, p99 and failures of 100 `count_tokens` requests, from
   127.0.0.2) alone, and under each attack from 127.0.0.1: 2,000 slow-head connections, 1,100
   connections reopened as soon as serve closes one, 10,000 idle connections, 1,024 bodies
   that never end, and million-message bodies four at a time.

    bench/gateway_memory.py [--binary target/release/switchyard] [--json out.json]

Everything runs on 127.0.0.1 (and 127.0.0.2, also loopback), bounded in count and time.
"""

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def rss_mib(pid):
    """(peak, current) resident memory of `pid` in MiB."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, rest = line.partition(":")
            fields[name] = rest.split()
    return int(fields["VmHWM"][0]) // 1024, int(fields["VmRSS"][0]) // 1024


class Serve:
    """A `switchyard serve --no-auth` on 127.0.0.1 with a route nothing answers."""

    def __init__(self, binary, settings=""):
        self.home = tempfile.TemporaryDirectory()
        config = os.path.join(self.home.name, "serve.toml")
        with open(config, "w") as f:
            f.write(f"[serve]\n{settings}\n[serve.routes.sonnet]\nprovider = \"anthropic\"\n"
                    "model = \"claude-sonnet-4-5\"\nbase_url = \"http://127.0.0.1:9\"\n")
        env = {"PATH": os.environ.get("PATH", ""), "SWITCHYARD_HOME": self.home.name,
               "ANTHROPIC_API_KEY": "sk-ant-bench-0123456789",
               "SWITCHYARD_STORE": "sqlite:" + os.path.join(self.home.name, "store.db")}
        self.proc = subprocess.Popen(
            [binary, "--config", config, "serve", "--no-auth", "--listen", "127.0.0.1:0"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        line = self.proc.stderr.readline().decode()
        prefix = "switchyard serve: listening on http://"
        if not line.startswith(prefix):
            raise SystemExit(f"serve did not start: {line}{self.proc.stderr.read().decode()}")
        host, port = line.strip()[len(prefix):].rsplit(":", 1)
        self.addr = (host, int(port))
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.home.cleanup()


def request(addr, method, path, body=b"", source=None, timeout=60):
    """One request on a new connection: (status, seconds); status 0 on a failure."""
    started = time.monotonic()
    try:
        s = socket.socket()
        s.settimeout(timeout)
        if source:
            s.bind((source, 0))
        s.connect(addr)
        head = (f"{method} {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode()
        s.sendall(head + body)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        status = int(data[9:12]) if data.startswith(b"HTTP/1.1 ") else 0
    except OSError:
        status = 0
    return status, time.monotonic() - started


def million_messages():
    one = b'{"role":"user","content":"a"}'
    return b'{"model":"sonnet","messages":[' + b",".join([one] * 1_000_000) + b"]}"


def at_the_caps():
    """The most a body within the caps can hold: 10,000 messages of 5 one-letter parts each
    (50,000 parts, 180,000 JSON values), about 1.8 MB, sent on to the route."""
    part = b'{"type":"text","text":"a"}'
    one = b'{"role":"user","content":[' + b",".join([part] * 5) + b"]}"
    return (b'{"model":"sonnet","max_tokens":16,"messages":['
            + b",".join([one] * 10_000) + b"]}")


def memory(binary, body, path="/v1/chat/completions"):
    rows = []
    for n in (1, 4, 16):
        serve = Serve(binary)
        pid = serve.proc.pid
        time.sleep(0.5)
        _, before = rss_mib(pid)
        statuses = []
        threads = [threading.Thread(target=lambda: statuses.append(
            request(serve.addr, "POST", path, body)[0])) for _ in range(n)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - started
        time.sleep(3)
        peak, settled = rss_mib(pid)
        # An allocator may give freed pages back only after a decay delay (jemalloc: 10 s).
        time.sleep(12)
        _, late = rss_mib(pid)
        rows.append({"concurrent": n, "before_mib": before, "peak_mib": peak,
                     "settled_mib": settled, "settled_15s_mib": late, "seconds": round(took, 2),
                     "statuses": sorted(set(statuses))})
        serve.stop()
    return rows


class Attack:
    """Connections from 127.0.0.1 held open in one thread until stopped."""

    def __init__(self, addr, count, first=b"", reopen=False):
        self.addr, self.count, self.first, self.reopen = addr, count, first, reopen
        self.stop = threading.Event()
        self.opened = self.closed = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def open_one(self):
        s = socket.socket()
        s.setblocking(True)
        s.settimeout(2)
        s.connect(self.addr)
        if self.first:
            s.sendall(self.first)
        s.setblocking(False)
        self.opened += 1
        return s

    def run(self):
        held = []
        deadline = time.monotonic() + 300
        while not self.stop.is_set() and time.monotonic() < deadline:
            while len(held) < self.count and (self.reopen or self.opened < self.count):
                try:
                    held.append(self.open_one())
                except OSError:
                    break
            alive = []
            for s in held:
                try:
                    if s.recv(512) == b"":
                        raise OSError
                    s.close()
                    self.closed += 1
                except BlockingIOError:
                    alive.append(s)
                except OSError:
                    s.close()
                    self.closed += 1
            held = alive
            self.stop.wait(0.05)
        for s in held:
            s.close()

    def end(self):
        self.stop.set()
        self.thread.join()


def normal_client(addr, n=100):
    body = b'{"model":"sonnet","messages":[{"role":"user","content":"What is the capital of France?"}]}'
    times, failed = [], 0
    for _ in range(n):
        status, took = request(addr, "POST", "/v1/messages/count_tokens", body, "127.0.0.2", 30)
        times.append(took)
        failed += status != 200
    times.sort()
    return {"p50_ms": round(statistics.median(times) * 1000, 1),
            "p99_ms": round(times[int(len(times) * 0.99) - 1] * 1000, 1), "failed": failed}


def attacks(binary, body):
    slow = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-slow: "
    never = (b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\n"
             b'{"model":')
    cases = [
        ("no attack", None),
        ("2,000 slow-head connections", lambda a: Attack(a, 2000, slow)),
        ("1,100 reconnecting connections", lambda a: Attack(a, 1100, slow, reopen=True)),
        ("10,000 idle connections", lambda a: Attack(a, 10_000)),
        ("1,024 bodies that never end", lambda a: Attack(a, 1024, never)),
        ("million-message bodies, 4 at a time", lambda a: Bodies(a, body)),
    ]
    rows = []
    for name, start in cases:
        serve = Serve(binary)
        attack = start(serve.addr) if start else None
        time.sleep(3 if attack else 0.5)
        row = {"attack": name, **normal_client(serve.addr)}
        if attack:
            attack.end()
            row["attack_opened"] = getattr(attack, "opened", 0)
            row["attack_closed_by_serve"] = getattr(attack, "closed", 0)
        rows.append(row)
        serve.stop()
    return rows


class Bodies:
    """Million-message bodies sent four at a time until stopped."""

    def __init__(self, addr, body):
        self.addr, self.body, self.stop, self.sent = addr, body, threading.Event(), 0
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(4)]
        for t in self.threads:
            t.start()

    def run(self):
        while not self.stop.is_set():
            request(self.addr, "POST", "/v1/chat/completions", self.body)
            self.sent += 1

    def end(self):
        self.stop.set()
        for t in self.threads:
            t.join()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    release = os.path.join(ROOT, "target", "release", "switchyard")
    debug = os.path.join(ROOT, "target", "debug", "switchyard")
    parser.add_argument("--binary", default=release if os.path.exists(release) else debug)
    parser.add_argument("--json")
    parser.add_argument("--only", choices=["memory", "attacks"])
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    body = million_messages()
    out = {"binary": args.binary}
    if args.only != "attacks":
        out["memory"] = memory(args.binary, body)
        out["memory_at_the_caps"] = memory(args.binary, at_the_caps(), "/v1/messages")
        for name in ("memory", "memory_at_the_caps"):
            print(f"{name}: concurrent | RSS before MiB | peak MiB | after 3 s MiB | after 15 s MiB"
                  " | s | statuses")
            for r in out[name]:
                print(f"{r['concurrent']:>10} | {r['before_mib']:>14} | {r['peak_mib']:>8} | "
                      f"{r['settled_mib']:>13} | {r['settled_15s_mib']:>14} | {r['seconds']:>7} | "
                      f"{r['statuses']}")
    if args.only != "memory":
        out["attacks"] = attacks(args.binary, body)
        print("attack | normal p50 ms | p99 ms | failed of 100")
        for r in out["attacks"]:
            print(f"{r['attack']} | {r['p50_ms']} | {r['p99_ms']} | {r['failed']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
