#!/usr/bin/env python3
"""Seeds each fuzz target's corpus (issue 27) from the repository's own recorded bytes:
tests/fixtures and tests/cases (provider bodies and error responses), the TOML examples of
README.md and docs/*.md, the built-in model tables, the sign-in files of tests/fixtures/credentials, and
fuzz/seeds/ (hand-written requests, headers, settings and a task folder). Writes fuzz/corpus/TARGET/seed-*; a target whose corpus already holds files is
left alone unless --force. Run by scripts/fuzz.sh before a target's first run."""

import hashlib
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FUZZ = ROOT / "fuzz"


def http_files():
    for d in ("tests/fixtures", "tests/cases"):
        yield from sorted((ROOT / d).glob("*.http"))


def split_http(path):
    raw = path.read_bytes()
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None
    headers = [l for l in lines[1:] if ":" in l]
    if any(l.lower().startswith("transfer-encoding: chunked") for l in headers):
        body = dechunk(body)
    return status, headers, body


def dechunk(body):
    out = b""
    while body:
        size, sep, rest = body.partition(b"\r\n")
        try:
            n = int(size.split(b";")[0], 16)
        except ValueError:
            break
        if n == 0 or not sep:
            break
        out += rest[:n]
        body = rest[n + 2 :]
    return out


def content_type(headers):
    for h in headers:
        name, _, value = h.partition(":")
        if name.strip().lower() == "content-type":
            return value.strip()
    return ""


def corpus():
    seeds = {}

    def add(target, data):
        seeds.setdefault(target, []).append(data)

    split_seed = bytes([0, 4, 6, 0, 12, 2, 9, 1])
    for path in http_files():
        parsed = split_http(path)
        if parsed is None:
            continue
        status, headers, body = parsed
        ct = content_type(headers)
        if status >= 400 or "json" in ct and status != 200:
            head = "\n".join([ct] + headers).encode()
            add("error_body", status.to_bytes(2, "big") + head + b"\n\n" + body)
            add("retry_after", "\n".join(headers).encode())
            continue
        if "event-stream" in ct and b"data:" in body:
            add("sse", b"\0" + split_seed + body)
            for t in ("map_anthropic", "map_openai_chat", "map_openai_responses", "map_gemini"):
                add(t, body)
        elif "ndjson" in ct or path.name.startswith("ollama"):
            add("ndjson", b"\0" + split_seed + body)
            add("map_ollama", body)
        elif "amazon" in ct or "eventstream" in ct:
            add("eventstream", b"\0" + split_seed + body)
            add("eventstream_raw", split_seed + body)
            add("map_bedrock", body)
        for line in body.split(b"\n"):
            line = line.strip()
            if line.startswith(b"data:"):
                line = line[5:].strip()
            if line.startswith(b"{") and len(line) < 4096:
                add("fast_json", line)
    for page in [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")):
        for block in re.findall(r"```toml\n(.*?)```", page.read_text(), re.S):
            add("config_toml", block.encode())
    for path in sorted((ROOT / "crates/switchyard-api/models/switchyard").glob("*.toml"))[:6]:
        add("models_toml", path.read_bytes()[:8192])
    for path in sorted((ROOT / "tests/fixtures/credentials").glob("*.json")):
        add("signin_file", path.read_bytes())
    for path in sorted((FUZZ / "seeds").glob("*")):
        target = path.name.split(".")[0]
        add(target, path.read_bytes())
    return seeds


def main():
    force = "--force" in sys.argv
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    for target, items in sorted(corpus().items()):
        if only and target not in only:
            continue
        d = FUZZ / "corpus" / target
        d.mkdir(parents=True, exist_ok=True)
        if any(d.iterdir()) and not force:
            continue
        for data in items:
            name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
            (d / name).write_bytes(data)
        print(f"{target}: {len(items)} seeds")


if __name__ == "__main__":
    main()
