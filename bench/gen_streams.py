#!/usr/bin/env python3
"""Deterministic synthetic SSE streams for the benchmark (bench/README.md).

Writes, into OUT_DIR (default bench/out/streams):

- ``openai_{size}.sse``: an OpenAI Chat Completions stream (``chat.completion.chunk`` per
  ``data:`` line, as platform.openai.com/docs/api-reference/chat-streaming shows): a role
  chunk, many small text deltas (some non-ASCII, quotes and newlines), two tool calls whose
  ``function.arguments`` arrive in small fragments, a ``finish_reason`` chunk, the usage chunk
  of ``stream_options.include_usage`` (``choices: []``) and ``data: [DONE]``.
- ``anthropic_{size}.sse``: an Anthropic Messages stream (docs.claude.com "Streaming
  messages"): ``message_start``, ``ping``, a thinking block (``thinking_delta`` then
  ``signature_delta``), a text block (``text_delta``), a ``tool_use`` block
  (``input_json_delta``), ``message_delta`` with usage, ``message_stop``.
- ``openai_ttft.sse``: a short text-only OpenAI stream for the time-to-first-token runs.
- ``openai_conc.sse``: a medium OpenAI stream for the 1,000-concurrent-streams run.

Each ``NAME.sse`` has a ``NAME.json`` manifest with the logical content every client must
see: the number of non-empty text, reasoning and tool-argument deltas, their lengths in
Unicode code points (all characters are in the Basic Multilingual Plane, so JavaScript's
UTF-16 ``length`` agrees), the number of usage reports and the final ``output_tokens``.

Sizes: ``full`` is about 50,000 events (OpenAI: ~15 MB); ``tiny`` is 500 events. The output
depends only on the size: the same bytes on every machine (seeded ``random.Random``).
"""

import argparse
import json
import random
from pathlib import Path

SIZES = {
    # name: (openai events, anthropic events, concurrency-stream events)
    "full": (50_000, 50_000, 2_000),
    "tiny": (500, 500, 200),
}

# Small deltas as models stream them; BMP characters only (see the module doc).
WORDS = [
    "The", " weather", " in", " Tokyo", " (東京)", " is", " 21", "°C", " with", " light",
    " rain", " —", " «", "umbrella", "»", " advised", ".", "\n\n", " CO₂", " levels", " are",
    ' "normal"', " today", "!", " fn", " main", "()", " {", " }", " let", " x", " =", " 42",
    ";", "\n", "    ", "`", "```rust", " Über", "größe", " naïve", " café", " ok",
    " résumé", " Ω", " π", " ≈", " 3.14", "\t", " \\", " path/to/file.rs", " #", " *", " —ok",
]

OPENAI_HEAD = (
    '{"id":"chatcmpl-BenchStream0000000000000000001","object":"chat.completion.chunk",'
    '"created":1756289702,"model":"gpt-4o-2024-08-06","service_tier":"default",'
    '"system_fingerprint":"fp_07871e2ad8","choices":['
)


def dumps(value):
    """Compact JSON with raw UTF-8, as the providers send it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Manifest:
    def __init__(self):
        self.text = self.text_chars = 0
        self.reasoning = self.reasoning_chars = 0
        self.tool_args = self.tool_args_chars = 0
        self.usage = 0
        self.output_tokens = 0

    def as_dict(self, events, size_bytes):
        return {
            "events": events,
            "bytes": size_bytes,
            "counts": {
                "text": self.text,
                "text_chars": self.text_chars,
                "reasoning": self.reasoning,
                "reasoning_chars": self.reasoning_chars,
                "tool_args": self.tool_args,
                "tool_args_chars": self.tool_args_chars,
                "usage": self.usage,
                "output_tokens": self.output_tokens,
            },
        }


def delta_text(rng):
    return "".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))


def obfuscation(rng):
    # OpenAI pads chunks with a random `obfuscation` string (stream_options.include_obfuscation).
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(4, 16)))


def tool_arguments(rng, target_chars):
    """A JSON object text of about `target_chars` characters (valid once joined)."""
    content = []
    while sum(len(c) for c in content) < target_chars:
        content.append(delta_text(rng))
    return dumps({"path": "src/bench/generated.rs", "content": "".join(content)})


def fragments(rng, text, low=1, high=8):
    out, i = [], 0
    while i < len(text):
        n = rng.randint(low, high)
        out.append(text[i : i + n])
        i += n
    return out


def openai_stream(events, seed, tool_calls=True):
    """Returns (bytes, event count, manifest) of an OpenAI Chat Completions stream."""
    rng = random.Random(seed)
    m = Manifest()
    out = []

    def chunk(choice_delta, finish=None):
        choice = {"index": 0, "delta": choice_delta, "logprobs": None, "finish_reason": finish}
        out.append(
            "data: " + OPENAI_HEAD + dumps(choice)
            + '],"usage":null,"obfuscation":' + dumps(obfuscation(rng)) + "}\n\n"
        )

    chunk({"role": "assistant", "content": "", "refusal": None})
    calls = 2 if tool_calls else 0
    tool_events = (events // 10) if tool_calls else 0  # ~10 % argument fragments
    per_call = tool_events // calls if calls else 0
    text_events = events - 1 - 1 - 1 - calls * (per_call + 1)  # role, finish, usage
    for _ in range(text_events):
        text = delta_text(rng)
        chunk({"content": text})
        m.text += 1
        m.text_chars += len(text)
    for k in range(calls):
        args = tool_arguments(rng, per_call * 4)
        parts = fragments(rng, args)
        # Re-balance so each call has exactly `per_call` fragments.
        while len(parts) > per_call:
            parts[-2] += parts[-1]
            parts.pop()
        while len(parts) < per_call:
            longest = max(range(len(parts)), key=lambda i: len(parts[i]))
            p = parts[longest]
            parts[longest : longest + 1] = [p[: len(p) // 2], p[len(p) // 2 :]]
        call_id = f"call_Bench{k:04d}xYz0123456789abcd"
        chunk({"tool_calls": [{"index": k, "id": call_id, "type": "function",
                               "function": {"name": "write_to_file", "arguments": ""}}]})
        for part in parts:
            chunk({"tool_calls": [{"index": k, "function": {"arguments": part}}]})
            m.tool_args += 1
            m.tool_args_chars += len(part)
    chunk({}, finish="tool_calls" if calls else "stop")
    completion_tokens = m.text + m.tool_args
    usage = {
        "prompt_tokens": 1234, "completion_tokens": completion_tokens,
        "total_tokens": 1234 + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0,
                                      "rejected_prediction_tokens": 0},
    }
    out.append("data: " + OPENAI_HEAD + '],"usage":' + dumps(usage)
               + ',"obfuscation":' + dumps(obfuscation(rng)) + "}\n\n")
    m.usage = 1
    m.output_tokens = completion_tokens
    out.append("data: [DONE]\n\n")
    return "".join(out).encode(), len(out), m


def anthropic_stream(events, seed):
    """Returns (bytes, event count, manifest) of an Anthropic Messages stream."""
    rng = random.Random(seed)
    m = Manifest()
    out = []

    def event(kind, data):
        out.append(f"event: {kind}\ndata: {dumps(data)}\n\n")

    fixed = 11  # message_start, ping, 3 × start/stop, signature, message_delta, message_stop
    deltas = events - fixed
    thinking_n, tool_n = deltas * 3 // 10, deltas // 5
    text_n = deltas - thinking_n - tool_n
    event("message_start", {"type": "message_start", "message": {
        "id": "msg_01BenchStream000000000000", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": 1234, "cache_creation_input_tokens": 0,
                                          "cache_read_input_tokens": 1024, "output_tokens": 1}}})
    event("ping", {"type": "ping"})
    event("content_block_start", {"type": "content_block_start", "index": 0,
                                  "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
    for _ in range(thinking_n):
        text = delta_text(rng)
        event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "thinking_delta", "thinking": text}})
        m.reasoning += 1
        m.reasoning_chars += len(text)
    event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
        "type": "signature_delta", "signature": "EqQBCgIYAhIM" + "Bench" * 40 + "=="}})
    event("content_block_stop", {"type": "content_block_stop", "index": 0})
    event("content_block_start", {"type": "content_block_start", "index": 1,
                                  "content_block": {"type": "text", "text": ""}})
    for _ in range(text_n):
        text = delta_text(rng)
        event("content_block_delta", {"type": "content_block_delta", "index": 1,
                                      "delta": {"type": "text_delta", "text": text}})
        m.text += 1
        m.text_chars += len(text)
    event("content_block_stop", {"type": "content_block_stop", "index": 1})
    event("content_block_start", {"type": "content_block_start", "index": 2, "content_block": {
        "type": "tool_use", "id": "toolu_01BenchStream0000000000", "name": "write_to_file",
        "input": {}}})
    parts = fragments(rng, tool_arguments(rng, tool_n * 4))
    while len(parts) > tool_n:
        parts[-2] += parts[-1]
        parts.pop()
    for part in parts:
        event("content_block_delta", {"type": "content_block_delta", "index": 2,
                                      "delta": {"type": "input_json_delta", "partial_json": part}})
        m.tool_args += 1
        m.tool_args_chars += len(part)
    event("content_block_stop", {"type": "content_block_stop", "index": 2})
    output_tokens = m.reasoning + m.text + m.tool_args
    event("message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                            "usage": {"output_tokens": output_tokens}})
    event("message_stop", {"type": "message_stop"})
    m.usage = 1
    m.output_tokens = output_tokens
    return "".join(out).encode(), len(out), m


def write(out_dir, name, generated):
    body, events, manifest = generated
    (out_dir / f"{name}.sse").write_bytes(body)
    (out_dir / f"{name}.json").write_text(json.dumps(manifest.as_dict(events, len(body)), indent=1))
    return len(body)


def generate(size, out_dir):
    """Writes every stream of `size` into `out_dir`; returns {name: bytes}."""
    openai_n, anthropic_n, conc_n = SIZES[size]
    out_dir.mkdir(parents=True, exist_ok=True)
    return {
        f"openai_{size}": write(out_dir, f"openai_{size}", openai_stream(openai_n, 1)),
        f"anthropic_{size}": write(out_dir, f"anthropic_{size}", anthropic_stream(anthropic_n, 2)),
        "openai_ttft": write(out_dir, "openai_ttft", openai_stream(24, 3, tool_calls=False)),
        "openai_conc": write(out_dir, "openai_conc", openai_stream(conc_n, 4)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "streams")
    args = parser.parse_args()
    for name, size in generate(args.size, args.out).items():
        print(f"{args.out / name}.sse: {size:,} bytes")


if __name__ == "__main__":
    main()
