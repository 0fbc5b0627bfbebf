"""Consumes one stream with an official Python SDK and prints its counts as one JSON line.

    python consume.py --sdk openai|anthropic --base-url URL --model ID

Iterates the SDK's own stream object (``client.chat.completions.create(stream=True)``,
``client.messages.create(stream=True)``, synchronous clients) and counts the same logical
content as the Rust client: non-empty text, reasoning and tool-argument deltas with their
lengths in code points, and usage reports. Also reports the stream's time and CPU time
(``time.process_time``, all threads) and the process's peak RSS (``VmHWM``).
"""

import argparse
import json
import os
import sys
import time

MESSAGES = [{"role": "user", "content": "Benchmark request: stream the whole answer."}]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sdk", choices=["openai", "anthropic"], required=True)
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", required=True)
    a = p.parse_args()
    counts = dict(text=0, text_chars=0, reasoning=0, reasoning_chars=0,
                  tool_args=0, tool_args_chars=0, usage=0, output_tokens=0)
    chunks = 0
    first_text_ms = None

    if a.sdk == "openai":
        import openai

        client = openai.OpenAI(api_key=os.environ["OPENAI_API_KEY"], base_url=a.base_url,
                               max_retries=0)
        started, cpu_before = time.perf_counter(), time.process_time()
        stream = client.chat.completions.create(
            model=a.model,
            messages=[{"role": "system", "content": "You are a benchmark peer."}, *MESSAGES],
            stream=True,
            stream_options={"include_usage": True},
        )
        for chunk in stream:
            chunks += 1
            if chunk.usage is not None:
                counts["usage"] += 1
                counts["output_tokens"] = chunk.usage.completion_tokens
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    if first_text_ms is None:
                        first_text_ms = (time.perf_counter() - started) * 1000
                    counts["text"] += 1
                    counts["text_chars"] += len(delta.content)
                if delta.tool_calls:
                    for call in delta.tool_calls:
                        args = call.function.arguments if call.function else None
                        if args:
                            counts["tool_args"] += 1
                            counts["tool_args_chars"] += len(args)
    else:
        import anthropic

        client = anthropic.Anthropic(api_key=os.environ["ANTHROPIC_API_KEY"],
                                     base_url=a.base_url, max_retries=0)
        started, cpu_before = time.perf_counter(), time.process_time()
        stream = client.messages.create(
            model=a.model, max_tokens=64000, system="You are a benchmark peer.",
            messages=MESSAGES, stream=True,
        )
        for event in stream:
            chunks += 1
            if event.type == "content_block_delta":
                d = event.delta
                if d.type == "text_delta" and d.text:
                    if first_text_ms is None:
                        first_text_ms = (time.perf_counter() - started) * 1000
                    counts["text"] += 1
                    counts["text_chars"] += len(d.text)
                elif d.type == "thinking_delta" and d.thinking:
                    counts["reasoning"] += 1
                    counts["reasoning_chars"] += len(d.thinking)
                elif d.type == "input_json_delta" and d.partial_json:
                    counts["tool_args"] += 1
                    counts["tool_args_chars"] += len(d.partial_json)
            elif event.type == "message_delta":
                counts["usage"] += 1
                counts["output_tokens"] = event.usage.output_tokens
    stream_ms = (time.perf_counter() - started) * 1000
    stream_cpu_ms = (time.process_time() - cpu_before) * 1000
    out = dict(client=f"python-{a.sdk}", stream_ms=stream_ms, stream_cpu_ms=stream_cpu_ms,
               peak_rss_kb=peak_rss_kb(), first_text_ms=first_text_ms, chunks=chunks,
               counts=counts)
    sys.stdout.write(json.dumps(out) + "\n")


def peak_rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


if __name__ == "__main__":
    main()
