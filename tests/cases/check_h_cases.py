#!/usr/bin/env python3
"""Replays the H cases through the real `switchyard` CLI and compares what a user gets with
the `task` part of each `Hxx.expected.json` (README.md, "H cases").

    python3 tests/cases/check_h_cases.py [--bin target/release/switchyard] [H01 H04b …]

For each case a loopback server (this file, standard library only) answers request 1, 2, 3 …
with the files of the case's `meta.json` `sequence` (the last one repeats), byte for byte, and
records when each request arrived. The CLI runs one non-interactive task
(`switchyard task --json --provider P --model M --base-url URL "…"`) with a throw-away HOME and
configuration directory and placeholder keys. The check compares: the task's final status, the
number of HTTP requests, the waits between them (a wait may be up to 10 % longer than stated:
jitter, R5.2), the error kind, the assistant text and the tool calls handed over.

Retry waits are real here (seconds), so a run of every case takes a few minutes. This is a
diagnostic for the lead and the engineer fixing the cases; the product's own tests replay the
same files with tokio's paused clock.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KEY = "sk-PLACEHOLDER-check-h-cases-0000000000"
KEY_VARS = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY", "DEEPSEEK_API_KEY",
            "GROQ_API_KEY", "XAI_API_KEY", "CEREBRAS_API_KEY", "ZAI_API_KEY", "QWEN_API_KEY", "DASHSCOPE_API_KEY",
            "MINIMAX_API_KEY", "LMSTUDIO_API_KEY", "AWS_BEARER_TOKEN_BEDROCK"]


class Replay:
    """A loopback HTTP/1.1 server that answers request n with files[min(n, len-1)]."""

    def __init__(self, files):
        self.files = files
        self.arrivals = []  # (arrival time, time the reply was fully sent)
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _read_request(self, conn, buf):
        while b"\r\n\r\n" not in buf:
            chunk = conn.recv(65536)
            if not chunk:
                return None, buf
            buf += chunk
        head, rest = buf.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(rest) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return None, b""
            rest += chunk
        return head, rest[length:]

    def _serve(self, conn):
        buf = b""
        with conn:
            while True:
                head, buf = self._read_request(conn, buf)
                if head is None:
                    return
                arrived = time.monotonic()
                with self.lock:
                    n = len(self.arrivals)
                    self.arrivals.append([arrived, arrived])
                raw = self.files[min(n, len(self.files) - 1)]
                try:
                    conn.sendall(raw)
                except OSError:
                    return
                with self.lock:
                    self.arrivals[n][1] = time.monotonic()
                resp_head = raw.split(b"\r\n\r\n", 1)[0].lower()
                if b"content-length:" not in resp_head or b"connection: close" in resp_head:
                    try:
                        conn.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    return

    def waits(self):
        with self.lock:
            a = sorted(self.arrivals)
        return [round(a[i + 1][0] - a[i][1], 2) for i in range(len(a) - 1)]

    def close(self):
        self.sock.close()


def case_files(case):
    meta_path = os.path.join(HERE, case + ".meta.json")
    seq = [case + ".http"]
    if os.path.exists(meta_path):
        with open(meta_path, encoding="utf-8") as f:
            seq = json.load(f).get("sequence") or seq
    out = []
    for name in seq:
        name = name if name.endswith(".http") else name + ".http"
        with open(os.path.join(HERE, name), "rb") as f:
            out.append(f.read())
    return out


def run_case(binary, case, timeout):
    with open(os.path.join(HERE, case + ".expected.json"), encoding="utf-8") as f:
        exp = json.load(f)
    server = Replay(case_files(case))
    home = tempfile.mkdtemp(prefix="swyd-h-")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("AWS_")}
    env.update({k: KEY for k in KEY_VARS})
    env.update({"HOME": home, "SWITCHYARD_HOME": os.path.join(home, "cfg"), "AWS_REGION": "us-east-1",
                "NO_COLOR": "1"})
    os.makedirs(env["SWITCHYARD_HOME"])
    cmd = [binary, "task", "--json", "--on-failure", "fail", "--provider", exp["provider"], "--model", exp["model"],
           "--base-url", f"http://127.0.0.1:{server.port}{exp['base_path']}", "Summarise the build log."]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        out, err, code = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"), proc.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        err, code = f"timed out after {timeout} s", None
    elapsed = time.monotonic() - started
    server.close()
    shutil.rmtree(home, ignore_errors=True)
    events = []
    for line in out.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    got = {
        "status": next((e.get("status") for e in events if e.get("type") == "task_finished"), None),
        "requests": len(server.arrivals),
        "waits_s": server.waits(),
        "error_kind": next((e.get("kind") for e in reversed(events) if e.get("type") == "error"), None),
        "first_failure": first_failure(events),
        "error_message": next((e.get("message") for e in reversed(events) if e.get("type") == "error"), ""),
        "text": "".join(e.get("text", "") for e in events if e.get("type") == "text"),
        "tool_calls": [{"name": e.get("name"), "arguments": e.get("arguments")} for e in events
                       if e.get("type") == "tool_call"],
        "exit": code, "seconds": round(elapsed, 1), "stderr_tail": err.strip().splitlines()[-1:] if err else [],
    }
    return exp, got


def first_failure(events):
    """The error of the first failed attempt: an `error` event, or an `api_req_finished` whose
    `streaming_failed_message` is the serialized ApiError (with its `code`), whichever comes
    first."""
    for e in events:
        if e.get("type") == "error":
            return {"kind": e.get("kind"), "message": e.get("message", "")}
        if e.get("type") == "api_req_finished" and e.get("streaming_failed_message"):
            try:
                return json.loads(e["streaming_failed_message"])
            except ValueError:
                continue
    return None


def compare(exp, got):
    want = exp["task"]
    problems = []
    chunks = exp["stream"]["chunks"]
    want_err = chunks[-1] if chunks and chunks[-1]["type"] == "error" else None
    if want_err and got["first_failure"]:
        first = got["first_failure"]
        if first.get("kind") != want_err["kind"]:
            problems.append(f"first failure is {first.get('kind')} (want {want_err['kind']})")
        said = f"{first.get('code') or ''} {first.get('message') or ''}".lower()
        if want_err.get("reason") and want_err["reason"].lower() not in said:
            problems.append(f"first failure does not name {want_err['reason']!r}")
    if got["status"] != want["status"]:
        problems.append(f"status {got['status']} (want {want['status']})")
    if got["requests"] != want["requests"]:
        problems.append(f"{got['requests']} requests (want {want['requests']})")
    if len(got["waits_s"]) == len(want["waits_s"]):
        for g, w in zip(got["waits_s"], want["waits_s"]):
            if not (w * 0.9 - 0.3 <= g <= w * 1.1 + 0.3):
                problems.append(f"waits {got['waits_s']} (want {want['waits_s']})")
                break
    elif got["requests"] == want["requests"]:
        problems.append(f"waits {got['waits_s']} (want {want['waits_s']})")
    if got["error_kind"] != want["error_kind"]:
        problems.append(f"error kind {got['error_kind']} (want {want['error_kind']})")
    if "text" in want and got["text"] != want["text"] and got["requests"] == want["requests"]:
        problems.append(f"text {got['text']!r} (want {want['text']!r})")
    for needle in want.get("message_contains", []):
        if want["error_kind"] and needle.lower() not in got["error_message"].lower():
            problems.append(f"message lacks {needle!r}")
    calls = []
    for c in got["tool_calls"]:
        try:
            args = json.loads(c["arguments"]) if isinstance(c["arguments"], str) else c["arguments"]
        except ValueError:
            args = {"<not JSON>": c["arguments"]}
        calls.append({"name": c["name"], "arguments": args})
    want_calls = [{"name": c["name"], "arguments": c["arguments"]} for c in exp["tool_calls"]]
    if calls != want_calls:
        problems.append(f"tool calls {calls} (want {want_calls})")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "switchyard"))
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args()
    cases = args.cases or sorted(n[: -len(".expected.json")] for n in os.listdir(HERE)
                                 if n.startswith("H") and n.endswith(".expected.json"))
    failing = 0
    for case in cases:
        exp, got = run_case(args.bin, case, args.timeout)
        problems = compare(exp, got)
        failing += bool(problems)
        verdict = "passes" if not problems else "FAILS: " + "; ".join(problems)
        print(f"{case}\t{verdict}\t[{got['status']}, {got['requests']} req, waits {got['waits_s']}, "
              f"kind {got['error_kind']}, {got['seconds']} s] {got['error_message'][:160]!r}", flush=True)
    print(f"{failing} of {len(cases)} fail today")


if __name__ == "__main__":
    sys.exit(main())
