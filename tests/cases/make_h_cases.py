#!/usr/bin/env python3
"""Writes the H cases of CASES.md ("Cases found by the team (H01–)") into this folder.

Each case is a public bug report turned into the wire bytes the report describes:

* ``Hxx.http``           the raw HTTP response (status line, CRLF headers, blank line, body);
* ``Hxx.meta.json``      replay directives, only where the case needs a sequence;
* ``Hxx.expected.json``  what Switchyard must do, in the schema of README.md ("H cases").

Shared success replies for the request after a retry: ``C02c.http`` (OpenAI Chat "OK"),
``C03ok.http`` (Anthropic "Done."), ``Hok_gemini.http`` and ``Hok_bedrock.http`` (written here).

Run it again after editing a case (``python3 tests/cases/make_h_cases.py``): it rewrites every
H file and computes Content-Length. It borrows the chunk builders of
``tests/fixtures/make_fixtures.py`` and the AWS event-stream encoder of
``tests/fixtures/make_bedrock_fixture.py`` (both CRCs; each stream is decoded again as a
self-check) without running those scripts.
Ids, keys, organisations and signatures are placeholders; provider wordings are verbatim.
"""
import ast
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DATE = "Thu, 01 Jan 2026 00:00:00 GMT"
FIXTURES = os.path.join(os.path.dirname(HERE), "fixtures")


def borrow(script, *names):
    """The named top-level functions and constants of a generator script in tests/fixtures,
    without running the script (its module-level code writes the fixtures)."""
    path = os.path.join(FIXTURES, script)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)

    def wanted(node):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return True
        if isinstance(node, ast.FunctionDef):
            return node.name in names
        return isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in names for t in node.targets)

    ns = {"__file__": path}
    exec(compile(ast.Module(body=[n for n in tree.body if wanted(n)], type_ignores=[]), path, "exec"), ns)
    return [ns[n] for n in names]


# The fixtures' own chunk builders and SSE writer (tests/fixtures/README.md shapes) …
fixture_sse, text, reasoning, tool_call, usage = borrow("make_fixtures.py", "sse", "T", "R", "TC", "U")
# … and the AWS event-stream encoder with its self-check decoder (both CRCs).
bedrock_event, decode_all = borrow("make_bedrock_fixture.py", "PAD", "crc32", "enc_header", "enc_message",
                                   "event", "decode_all")[4:]


# --------------------------------------------------------------------------------- writing
def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def http(name, status, reason, headers, body, framing="close"):
    """Writes ``name``.http. ``framing``: "close" (EOF ends the body, ``Connection: close``)
    or "length" (``Content-Length``)."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    lines = [f"HTTP/1.1 {status} {reason}", f"Date: {DATE}"]
    lines += [f"{k}: {v}" for k, v in headers]
    if framing == "length":
        lines.append(f"Content-Length: {len(body)}")
    else:
        lines.append("Connection: close")
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body
    with open(os.path.join(HERE, name + ".http"), "wb") as f:
        f.write(raw)


def json_error(name, status, reason, obj, headers=(), content_type="application/json"):
    body = obj if isinstance(obj, str) else compact(obj)
    http(name, status, reason, [("Content-Type", content_type), *headers], body, "length")


def sse(events):
    """``events``: (event name or None, payload dict or raw string) pairs; LF line ends."""
    return fixture_sse([(name, data if isinstance(data, str) else compact(data)) for name, data in events])


SSE_HEADERS = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]


def meta(name, **fields):
    with open(os.path.join(HERE, name + ".meta.json"), "w", encoding="utf-8") as f:
        json.dump(fields, f, indent=2, ensure_ascii=False)
        f.write("\n")


def expected(name, **fields):
    doc = {"case": name, **fields}
    with open(os.path.join(HERE, name + ".expected.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")


def error(kind, **opt):
    c = {"type": "error", "kind": kind}
    c.update(opt)
    return c


def fails_at_once(name, kind, status, mention, **fields):
    """The expectation of a response that must fail the task at once: one error of `kind`
    (with HTTP `status`), one request, no retry, an error message naming each of `mention`."""
    expected(name, **fields, stream={"requests": 1, "chunks": [error(kind, status=status)]},
             task=task("failed", 1, error_kind=kind, message_contains=mention), tool_calls=[])


def task(status, requests, waits=(), error_kind=None, text_=None, message_contains=()):
    t = {"status": status, "requests": requests, "waits_s": list(waits), "error_kind": error_kind}
    if text_ is not None:
        t["text"] = text_
    if message_contains:
        t["message_contains"] = list(message_contains)
    return t


# ------------------------------------------------------------------- AWS event-stream frames
def bedrock_stream(name, frames):
    body = b"".join(frames)
    assert len(decode_all(body)) == len(frames)
    http(name, 200, "OK", [("Content-Type", "application/vnd.amazon.eventstream"),
                           ("x-amzn-RequestId", "00000000-0000-4000-8000-00000000bed0")], body, "length")


def bedrock_error(name, status, reason, error_type, message):
    json_error(name, status, reason, {"message": message}, headers=[
        ("x-amzn-RequestId", "00000000-0000-4000-8000-00000000bed0"),
        ("x-amzn-ErrorType", f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
    ])


# ------------------------------------------------------------------ shared success replies
def gemini_chunk(parts, finish=None, usage_md=None, model="gemini-2.5-pro"):
    cand = {"index": 0, "content": {"parts": parts, "role": "model"}}
    if finish:
        cand["finishReason"] = finish
    c = {"candidates": [cand]}
    if usage_md:
        c["usageMetadata"] = usage_md
    c["modelVersion"] = model
    c["responseId"] = "PLACEHOLDER-gemini-response-id"
    return c


def gemini_body(chunks):
    # alt=sse events separated by CRLF CRLF, as tests/fixtures/gemini_stream.http has them.
    return "".join(f"data: {compact(c)}\r\n\r\n" for c in chunks)


GEMINI_HEADERS = [("Content-Type", "text/event-stream"), ("Vary", "Origin"),
                  ("Server", "scaffolding on HTTPServer2")]

http("Hok_gemini", 200, "OK", GEMINI_HEADERS, gemini_body([
    gemini_chunk([{"text": "OK"}], "STOP",
                 {"promptTokenCount": 12, "candidatesTokenCount": 1, "totalTokenCount": 13}),
]))
bedrock_stream("Hok_bedrock", [
    bedrock_event("messageStart", {"role": "assistant"}, 21),
    bedrock_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "OK"}}, 9),
    bedrock_event("contentBlockStop", {"contentBlockIndex": 0}, 30),
    bedrock_event("messageStop", {"stopReason": "end_turn"}, 12),
    bedrock_event("metadata", {"usage": {"inputTokens": 12, "outputTokens": 1, "totalTokens": 13},
                               "metrics": {"latencyMs": 310}}, 5),
])

SONNET = "claude-sonnet-4-5-20250929"


def anth_start(input_tokens, msg_id, model=SONNET):
    return ("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "output_tokens": 1}}})


def anth_block_start(i, block):
    return ("content_block_start", {"type": "content_block_start", "index": i, "content_block": block})


def anth_delta(i, delta):
    return ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})


def anth_block_stop(i):
    return ("content_block_stop", {"type": "content_block_stop", "index": i})


def anth_end(stop_reason, output_tokens):
    return [("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                               "usage": {"output_tokens": output_tokens}}),
            ("message_stop", {"type": "message_stop"})]


# ======================================================================== Anthropic Messages
# H01 — stop_reason model_context_window_exceeded in a 200 stream.
http("H01", 200, "OK", SSE_HEADERS + [("request-id", "req_PLACEHOLDER_H01")], sse([
    anth_start(196500, "msg_PLACEHOLDER_H01"),
    anth_block_start(0, {"type": "text", "text": ""}),
    ("ping", {"type": "ping"}),
    anth_delta(0, {"type": "text_delta", "text": "Here is the summary of the build log:"}),
    anth_delta(0, {"type": "text_delta", "text": " the first failure is at line 4,"}),
    anth_block_stop(0),
    *anth_end("model_context_window_exceeded", 3500),
]))
expected(
    "H01",
    title="Anthropic stop_reason model_context_window_exceeded ends a 200 stream",
    source="https://github.com/turnstonelabs/turnstone/issues/1162",
    also=["https://github.com/laravel/ai/pull/881", "https://github.com/tetsuo-ai/agenc-core/issues/2111",
          "https://github.com/theopenco/llmgateway/pull/3254"],
    family="anthropic", provider="anthropic", model=SONNET, base_path="",
    spec=["R7.2", "R7.5", "R6.5", "R9.3"],
    stream={"requests": 1, "chunks": [
        text("Here is the summary of the build log:"),
        text(" the first failure is at line 4,"),
        usage(196500, 3500, cache_read_tokens=0, cache_write_tokens=0),
        error("context_window_exceeded"),
    ]},
    task=task("failed", 1, error_kind="context_window_exceeded",
              text_="Here is the summary of the build log: the first failure is at line 4,",
              message_contains=["context window"]),
    tool_calls=[],
)

# H02 — a tool without parameters: tool_use input {} and one empty input_json_delta.
http("H02", 200, "OK", SSE_HEADERS + [("request-id", "req_PLACEHOLDER_H02")], sse([
    anth_start(1210, "msg_PLACEHOLDER_H02"),
    anth_block_start(0, {"type": "text", "text": ""}),
    anth_delta(0, {"type": "text_delta", "text": "I'll check the current time."}),
    anth_block_stop(0),
    anth_block_start(1, {"type": "tool_use", "id": "toolu_PLACEHOLDER_H02", "name": "get_current_time", "input": {}}),
    anth_delta(1, {"type": "input_json_delta", "partial_json": ""}),
    anth_block_stop(1),
    *anth_end("tool_use", 38),
]))
expected(
    "H02",
    title="Anthropic tool call without parameters streams no argument bytes",
    source="https://github.com/tghamm/Anthropic.SDK/issues/115",
    also=["https://github.com/deepset-ai/haystack-core-integrations/issues/1947",
          "https://github.com/getomnico/omni/pull/402", "https://github.com/BerriAI/litellm/pull/5064"],
    family="anthropic", provider="anthropic", model=SONNET, base_path="",
    spec=["R1.2"],
    stream={"requests": 1, "chunks": [
        text("I'll check the current time."),
        tool_call("toolu_PLACEHOLDER_H02", "get_current_time", "{}"),
        usage(1210, 38, cache_read_tokens=0, cache_write_tokens=0),
    ]},
    task=task("completed", 1, text_="I'll check the current time."),
    tool_calls=[{"id": "toolu_PLACEHOLDER_H02", "name": "get_current_time", "arguments": {}}],
)

# H03 — MiniMax's Anthropic-compatible endpoint: a thinking block_start without `signature`.
http("H03", 200, "OK", SSE_HEADERS + [("Trace-Id", "PLACEHOLDER-minimax-trace")], sse([
    anth_start(88, "PLACEHOLDER_H03", model="MiniMax-M2"),
    anth_block_start(0, {"type": "thinking", "thinking": ""}),
    anth_delta(0, {"type": "thinking_delta", "thinking": "The user greets me; answer briefly."}),
    anth_delta(0, {"type": "signature_delta", "signature": "UExBQ0VIT0xERVItbWluaW1heC1zaWduYXR1cmUtSDAz"}),
    anth_block_stop(0),
    anth_block_start(1, {"type": "text", "text": ""}),
    anth_delta(1, {"type": "text_delta", "text": "Hello! How can I help?"}),
    anth_block_stop(1),
    *anth_end("end_turn", 21),
]))
expected(
    "H03",
    title="MiniMax (Anthropic-compatible) thinking block starts without a signature field",
    source="https://github.com/decolua/9router/pull/2706",
    also=["https://github.com/NousResearch/hermes-agent/pull/75779"],
    family="anthropic", provider="minimax", model="MiniMax-M2", base_path="",
    spec=["R1.2", "R4.2"],
    stream={"requests": 1, "chunks": [
        reasoning("The user greets me; answer briefly."),
        reasoning("", signature="UExBQ0VIT0xERVItbWluaW1heC1zaWduYXR1cmUtSDAz"),
        text("Hello! How can I help?"),
        usage(88, 21, cache_read_tokens=0, cache_write_tokens=0),
    ]},
    task=task("completed", 1, text_="Hello! How can I help?"),
    tool_calls=[],
)

# ================================================================ OpenAI Chat and compatibles
OPENAI_LIMIT_HEADERS = [
    ("x-request-id", "req_PLACEHOLDER"),
    ("openai-organization", "org-PLACEHOLDER"),
]

def openai_429(name, limit_type, message, rate_headers):
    """An OpenAI 429 `rate_limit_exceeded` error of type `limit_type` (`tokens`, `requests`)."""
    json_error(name, 429, "Too Many Requests", {"error": {
        "message": message, "type": limit_type, "param": None, "code": "rate_limit_exceeded"}},
        headers=OPENAI_LIMIT_HEADERS + rate_headers)


# H04 — a request larger than the per-minute token limit: waiting cannot help (R7.4).
openai_429("H04", "tokens",
           "Request too large for gpt-4o in organization org-PLACEHOLDER on tokens per min (TPM): "
           "Limit 30000, Requested 31538. The input or output tokens must be reduced in order to "
           "run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.",
           [("x-ratelimit-limit-requests", "5000"), ("x-ratelimit-remaining-requests", "4999"),
            ("x-ratelimit-reset-requests", "12ms"), ("x-ratelimit-limit-tokens", "30000"),
            ("x-ratelimit-remaining-tokens", "30000"), ("x-ratelimit-reset-tokens", "0s")])
fails_at_once(
    "H04",
    title="OpenAI 429 'Request too large … TPM: Limit 30000, Requested 31538' is not retried",
    source="https://github.com/TheR1D/shell_gpt/issues/653",
    also=["https://github.com/agent0ai/agent-zero/issues/711", "https://github.com/vanna-ai/vanna-flask/issues/11"],
    family="openai_chat", provider="openai-native", model="gpt-4o", base_path="/v1",
    spec=["R7.4", "R5.1", "R6.7"],
    kind="rate_limited", status=429, mention=["30000", "31538"],
)

# H04b — near miss: "Rate limit reached … Please try again in 3.086s" is a momentary limit.
openai_429("H04b", "tokens",
           "Rate limit reached for gpt-4o in organization org-PLACEHOLDER on tokens per min (TPM): "
           "Limit 30000, Used 28461, Requested 3082. Please try again in 3.086s. Visit "
           "https://platform.openai.com/account/rate-limits to learn more.",
           [("x-ratelimit-limit-tokens", "30000"), ("x-ratelimit-remaining-tokens", "1539"),
            ("x-ratelimit-reset-tokens", "3.086s")])
meta("H04b", sequence=["H04b.http", "C02c.http"],
     notes="near miss of H04: the requested size fits the limit, so waiting 3.086 s helps")
expected(
    "H04b",
    title="Near miss of H04: 'Rate limit reached … Please try again in 3.086s' is retried after 3.086 s",
    source="https://github.com/FoundationAgents/MetaGPT/issues/523",
    also=["https://github.com/coleam00/mcp-crawl4ai-rag/pull/41"],
    family="openai_chat", provider="openai-native", model="gpt-4o", base_path="/v1",
    spec=["R5.1", "R5.2"],
    stream={"requests": 2, "chunks": [text("OK")]},
    task=task("completed", 2, waits=[3.086], text_="OK"),
    tool_calls=[],
)

# H05 — Groq answers the same TPM condition with HTTP 413.
json_error("H05", 413, "Payload Too Large", {"error": {
    "message": "Request too large for model `llama-3.3-70b-versatile` in organization `org_PLACEHOLDER` "
               "service tier `on_demand` on tokens per minute (TPM): Limit 12000, Requested 14137, please "
               "reduce your message size and try again. Need more tokens? Upgrade to Dev Tier today at "
               "https://console.groq.com/settings/billing",
    "type": "tokens", "code": "rate_limit_exceeded"}},
    headers=[("x-request-id", "req_PLACEHOLDER_H05"), ("x-ratelimit-limit-tokens", "12000"),
             ("x-ratelimit-remaining-tokens", "12000"), ("x-ratelimit-reset-tokens", "0s"),
             ("server", "cloudflare")])
fails_at_once(
    "H05",
    title="Groq 413 'Request too large … TPM: Limit 12000, Requested 14137' is not retried",
    source="https://github.com/continuedev/continue/issues/10218",
    also=["https://github.com/assafelovic/gpt-researcher/issues/985", "https://github.com/elizaOS/eliza/issues/4040",
          "https://github.com/zeeyado/koassistant.koplugin/issues/106"],
    family="openai_chat", provider="groq", model="llama-3.3-70b-versatile", base_path="/v1",
    spec=["R7.4", "R7.2"],
    kind="rate_limited", status=413, mention=["12000", "14137"],
)

# H06 — Groq injects `event: error` tool_use_failed into a 200 stream.
http("H06", 200, "OK", SSE_HEADERS + [("x-request-id", "req_PLACEHOLDER_H06")], sse([
    ("error", {"error": {
        "message": "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.",
        "type": "invalid_request_error", "code": "tool_use_failed",
        "failed_generation": "Tool use failed: JSON does not match the expected schema for tool calls",
        "status_code": 400}}),
]))
meta("H06", sequence=["H06.http", "C02c.http"],
     notes="the model's tool call did not parse; sampling again usually works (opencode#1018)")
expected(
    "H06",
    title="Groq in-stream error event tool_use_failed is a malformed tool call: retried",
    source="https://github.com/anomalyco/opencode/issues/1018",
    also=["https://github.com/UKGovernmentBEIS/inspect_ai/pull/5218", "https://github.com/huggingface/smolagents/issues/1119",
          "https://github.com/pipecat-ai/pipecat/issues/1168"],
    family="openai_chat", provider="groq", model="moonshotai/kimi-k2-instruct", base_path="/v1",
    spec=["R7.5", "R6.4", "R6.7"],
    stream={"requests": 1, "chunks": [error("server", reason="tool_use_failed")]},
    task=task("completed", 2, waits=[2], text_="OK"),
    tool_calls=[],
)

AZURE_FILTER_OK = {"hate": {"filtered": False, "severity": "safe"},
                   "jailbreak": {"filtered": False, "detected": False},
                   "self_harm": {"filtered": False, "severity": "safe"},
                   "sexual": {"filtered": False, "severity": "safe"},
                   "violence": {"filtered": False, "severity": "safe"}}


def azure_chunk(delta=None, finish=None, extra=None, usage_=None, choices=True):
    c = {"id": "chatcmpl-PLACEHOLDER", "object": "chat.completion.chunk", "created": 1767225600,
         "model": "gpt-4o-2024-11-20", "system_fingerprint": "fp_PLACEHOLDER"}
    if choices:
        ch = {"index": 0, "finish_reason": finish, "delta": delta if delta is not None else {}}
        if extra:
            ch.update(extra)
        c["choices"] = [ch]
    else:
        c["choices"] = []
    c["usage"] = usage_
    return c


# H07 — Azure's first chunk: choices [] with prompt_filter_results.
http("H07", 200, "OK", SSE_HEADERS + [("apim-request-id", "PLACEHOLDER-H07")], sse([
    (None, {"choices": [], "created": 0, "id": "", "model": "", "object": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": AZURE_FILTER_OK}]}),
    (None, azure_chunk({"role": "assistant", "content": "", "refusal": None})),
    (None, azure_chunk({"content": "Colors"}, extra={"content_filter_results": AZURE_FILTER_OK})),
    (None, azure_chunk({"content": " mix additively."}, extra={"content_filter_results": AZURE_FILTER_OK})),
    (None, azure_chunk({}, "stop")),
    (None, azure_chunk(usage_={"prompt_tokens": 19, "completion_tokens": 5, "total_tokens": 24,
                               "prompt_tokens_details": {"cached_tokens": 0},
                               "completion_tokens_details": {"reasoning_tokens": 0}}, choices=False)),
    (None, "[DONE]"),
]))
expected(
    "H07",
    title="Azure OpenAI first chunk has choices [] and prompt_filter_results",
    source="https://github.com/AbanteAI/archive-old-cli-mentat/issues/429",
    also=["https://github.com/pydantic/pydantic-ai/issues/164", "https://github.com/seratch/ChatGPT-in-Slack/pull/49",
          "https://github.com/openai/openai-python/issues/1677"],
    family="openai_chat", provider="openai", model="gpt-4o", base_path="/v1",
    spec=["R4.1", "R4.2"],
    stream={"requests": 1, "chunks": [
        text("Colors"), text(" mix additively."),
        usage(19, 5, cache_read_tokens=0, reasoning_tokens=0),
    ]},
    task=task("completed", 1, text_="Colors mix additively."),
    tool_calls=[],
)

# H08 — Azure content filter ends the stream: finish_reason content_filter, then EOF, no [DONE].
http("H08", 200, "OK", SSE_HEADERS + [("apim-request-id", "PLACEHOLDER-H08")], sse([
    (None, {"choices": [], "created": 0, "id": "", "model": "", "object": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": AZURE_FILTER_OK}]}),
    (None, azure_chunk({"role": "assistant", "content": ""})),
    (None, azure_chunk({"content": "Sure, here is"}, extra={"content_filter_results": AZURE_FILTER_OK})),
    (None, azure_chunk({"content": " the first part"}, extra={"content_filter_results": AZURE_FILTER_OK})),
    (None, azure_chunk({}, "content_filter", extra={"content_filter_results": {
        "hate": {"filtered": False, "severity": "safe"},
        "self_harm": {"filtered": False, "severity": "safe"},
        "sexual": {"filtered": False, "severity": "safe"},
        "violence": {"filtered": True, "severity": "medium"}}})),
]))
expected(
    "H08",
    title="Azure finish_reason content_filter after partial text is a named block, not a completion",
    source="https://github.com/microsoft/semantic-kernel/issues/5289",
    also=["https://github.com/experientiallabs/experiential/pull/962", "https://github.com/vercel/ai/issues/4220",
          "https://github.com/theopenco/llmgateway/pull/1626"],
    family="openai_chat", provider="openai", model="gpt-4o", base_path="/v1",
    spec=["R7.5"],
    stream={"requests": 1, "chunks": [
        text("Sure, here is"), text(" the first part"),
        error("content_blocked", reason="content_filter"),
    ]},
    task=task("failed", 1, error_kind="content_blocked", text_="Sure, here is the first part",
              message_contains=["content_filter"]),
    tool_calls=[],
)


def oai_chunk(delta=None, finish=None, model="glm-4.7", usage_=None, choices=True):
    c = {"id": "chatcmpl-PLACEHOLDER", "object": "chat.completion.chunk", "created": 1767225600, "model": model}
    c["choices"] = [{"index": 0, "delta": delta if delta is not None else {}, "finish_reason": finish}] if choices else []
    if usage_ is not None:
        c["usage"] = usage_
    return c


# H09 — Z.ai GLM: finish_reason model_context_window_exceeded on an OpenAI-compatible stream.
http("H09", 200, "OK", SSE_HEADERS, sse([
    (None, oai_chunk({"role": "assistant", "reasoning_content": "The file list is long;"})),
    (None, oai_chunk({"reasoning_content": " summarise the modules first."})),
    (None, oai_chunk({"content": "The repository has"})),
    (None, oai_chunk({"content": " four modules:"})),
    (None, oai_chunk({}, "model_context_window_exceeded",
                     usage_={"prompt_tokens": 199880, "completion_tokens": 120, "total_tokens": 200000,
                             "prompt_tokens_details": {"cached_tokens": 0}})),
    (None, "[DONE]"),
]))
expected(
    "H09",
    title="Z.ai GLM finish_reason model_context_window_exceeded on the OpenAI-compatible wire",
    source="https://github.com/mozilla-ai/any-llm/issues/1200",
    also=["https://github.com/earendil-works/pi/issues/1869", "https://github.com/earendil-works/pi/pull/1868"],
    family="openai_chat", provider="zai", model="glm-4.7", base_path="/v1",
    spec=["R7.2", "R7.5", "R6.5"],
    stream={"requests": 1, "chunks": [
        reasoning("The file list is long;"), reasoning(" summarise the modules first."),
        text("The repository has"), text(" four modules:"),
        usage(199880, 120, cache_read_tokens=0),
        error("context_window_exceeded"),
    ]},
    task=task("failed", 1, error_kind="context_window_exceeded", text_="The repository has four modules:",
              message_contains=["context window"]),
    tool_calls=[],
)

# H10 — MiniMax-M2.7 via NVIDIA NIM repeats function.name in every tool-call delta.
NIM = "minimaxai/minimax-m2.7"


def tc(index, args, name=None, id_=None):
    fn = {"arguments": args}
    if name is not None:
        fn["name"] = name
    d = {"index": index, "function": fn}
    if id_ is not None:
        d["id"] = id_
    d["type"] = "function"
    return d


http("H10", 200, "OK", SSE_HEADERS + [("nvcf-reqid", "PLACEHOLDER-H10")], sse([
    (None, oai_chunk({"role": "assistant", "content": ""}, model=NIM)),
    (None, oai_chunk({"tool_calls": [tc(0, "", "read_file", "chatcmpl-tool-PLACEHOLDER10")]}, model=NIM)),
    (None, oai_chunk({"tool_calls": [tc(0, "{\"path\": \"", "read_file")]}, model=NIM)),
    (None, oai_chunk({"tool_calls": [tc(0, "src/main.rs\"}", "read_file")]}, model=NIM)),
    (None, oai_chunk({}, "tool_calls", model=NIM)),
    (None, oai_chunk(model=NIM, choices=False,
                     usage_={"prompt_tokens": 640, "completion_tokens": 24, "total_tokens": 664})),
    (None, "[DONE]"),
]))
expected(
    "H10",
    title="NVIDIA NIM (MiniMax-M2.7) sends the full function name in every tool-call delta",
    source="https://github.com/NousResearch/hermes-agent/issues/8259",
    also=["https://github.com/NousResearch/hermes-agent/pull/12230", "https://github.com/vllm-project/vllm/issues/14951",
          "https://github.com/weicj/vLLM-2080Ti-Definitive/issues/127"],
    family="openai_chat", provider="openai", model=NIM, base_path="/v1",
    spec=["R1.2"],
    stream={"requests": 1, "chunks": [
        tool_call("chatcmpl-tool-PLACEHOLDER10", "read_file", "{\"path\": \"src/main.rs\"}"),
        usage(640, 24),
    ]},
    task=task("completed", 1, text_=""),
    tool_calls=[{"id": "chatcmpl-tool-PLACEHOLDER10", "name": "read_file", "arguments": {"path": "src/main.rs"}}],
)

# H11 — Gemini's OpenAI-compatible endpoint: tool calls without `index`, finish_reason "stop".
G3 = "gemini-3-flash-preview"


def gcompat(delta, finish=None, usage_=None):
    c = {"choices": [{"delta": delta, "index": 0}], "created": 1767225600,
         "id": "PLACEHOLDER-gemini-compat", "model": G3, "object": "chat.completion.chunk"}
    if finish:
        c["choices"][0]["finish_reason"] = finish
    if usage_:
        c["usage"] = usage_
    return c


http("H11", 200, "OK", [("Content-Type", "text/event-stream"), ("Vary", "Origin")], sse([
    (None, gcompat({"role": "assistant", "tool_calls": [{
        "extra_content": {"google": {"thought_signature": "UExBQ0VIT0xERVItZ2VtaW5pLXRob3VnaHQtc2lnbmF0dXJl"}},
        "function": {"arguments": "{\"path\":\"docs/a.md\"}", "name": "read"},
        "id": "call_PLACEHOLDER_11a", "type": "function"}]})),
    (None, gcompat({"role": "assistant", "tool_calls": [{
        "function": {"arguments": "{\"path\":\"docs/b.md\"}", "name": "read"},
        "id": "call_PLACEHOLDER_11b", "type": "function"}]})),
    (None, gcompat({"role": "assistant"}, "stop",
                   {"completion_tokens": 36, "prompt_tokens": 1402, "total_tokens": 1438})),
    (None, "[DONE]"),
]))
expected(
    "H11",
    title="Gemini OpenAI-compatible stream: tool calls without index, ended by finish_reason stop",
    source="https://github.com/THU-MAIC/OpenMAIC/issues/1556",
    also=["https://github.com/googleapis/python-genai/issues/2868", "https://github.com/AstrBotDevs/AstrBot/issues/6661",
          "https://github.com/openai/openai-python/issues/2806"],
    family="openai_chat", provider="openai", model=G3, base_path="/v1",
    spec=["R1.2"],
    stream={"requests": 1, "chunks": [
        tool_call("call_PLACEHOLDER_11a", "read", "{\"path\":\"docs/a.md\"}"),
        tool_call("call_PLACEHOLDER_11b", "read", "{\"path\":\"docs/b.md\"}"),
        usage(1402, 36),
    ]},
    task=task("completed", 1, text_=""),
    tool_calls=[{"id": "call_PLACEHOLDER_11a", "name": "read", "arguments": {"path": "docs/a.md"}},
                {"id": "call_PLACEHOLDER_11b", "name": "read", "arguments": {"path": "docs/b.md"}}],
)

# H12 — Qwen / DashScope (compatible mode) overflow wording.
json_error("H12", 400, "Bad Request", {
    "error": {"code": "invalid_parameter_error", "param": None,
              "message": "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 204800]",
              "type": "invalid_request_error"},
    "id": "chatcmpl-PLACEHOLDER-H12", "request_id": "PLACEHOLDER-H12"},
    headers=[("x-request-id", "PLACEHOLDER-H12")])
fails_at_once(
    "H12",
    title="Qwen/DashScope 'Range of input length should be [1, 204800]' is a context-window overflow",
    source="https://github.com/QwenLM/qwen-code/issues/98",
    also=["https://github.com/QwenLM/qwen-code/issues/2068", "https://github.com/QwenLM/Qwen-Agent/issues/615",
          "https://github.com/infiniflow/ragflow/issues/589"],
    family="openai_chat", provider="qwen", model="qwen3-coder-plus", base_path="/v1",
    spec=["R7.2", "R6.5"],
    kind="context_window_exceeded", status=400, mention=["204800"],
)

# H13 / H13b — LM Studio: `{"error": "<string>"}` bodies with n_keep / n_ctx wordings.
json_error("H13", 400, "Bad Request", {
    "error": "The number of tokens to keep from the initial prompt is greater than the context length "
             "(n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger context length, or "
             "provide a shorter input."}, headers=[("X-Powered-By", "Express")])
fails_at_once(
    "H13",
    title="LM Studio 'tokens to keep … greater than the context length (n_keep >= n_ctx)' is an overflow",
    source="https://github.com/Gitlawb/openclaude/issues/353",
    also=["https://github.com/anomalyco/opencode/issues/2259", "https://github.com/cline/cline/issues/3664",
          "https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/546"],
    family="openai_chat", provider="lmstudio", model="google/gemma-4-26b-a4b", base_path="/v1",
    spec=["R7.2", "R6.5"],
    kind="context_window_exceeded", status=400, mention=["4096"],
)
json_error("H13b", 400, "Bad Request", {
    "error": "Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)"}, headers=[("X-Powered-By", "Express")])
fails_at_once(
    "H13b",
    title="LM Studio 'Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)' is an overflow",
    source="https://github.com/anomalyco/opencode/issues/11141",
    also=["https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/2256"],
    family="openai_chat", provider="lmstudio", model="qwen/qwen3.5-9b", base_path="/v1",
    spec=["R7.2", "R6.5"],
    kind="context_window_exceeded", status=400, mention=["7424"],
)

# H14 / H14b — OpenAI requests-per-day limit: "per day" in the wording, seconds in the hint.
openai_429("H14", "requests",
           "Rate limit reached for gpt-3.5-turbo in organization org-PLACEHOLDER on requests per day (RPD): "
           "Limit 10000, Used 10000, Requested 1. Please try again in 8.64s. Visit "
           "https://platform.openai.com/account/rate-limits to learn more.",
           [("x-ratelimit-limit-requests", "10000"), ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "8.64s"), ("x-ratelimit-limit-tokens", "2000000"),
            ("x-ratelimit-remaining-tokens", "1999990"), ("x-ratelimit-reset-tokens", "0s")])
meta("H14", sequence=["H14.http", "C02c.http"],
     notes="OpenAI's RPD window rolls: one request frees up every 8.64 s (86400 s / 10000)")
expected(
    "H14",
    title="OpenAI 'requests per day (RPD) … Please try again in 8.64s' is a rate limit, not a spent quota",
    source="https://github.com/MSU-AI-Agents/fall-2025-course/issues/76",
    also=["https://github.com/MSU-AI-Agents/fall-2025-course/issues/75", "https://github.com/vectorize-io/hindsight/pull/3508",
          "https://github.com/crmne/ruby_llm/pull/850"],
    family="openai_chat", provider="openai-native", model="gpt-3.5-turbo", base_path="/v1",
    spec=["R5.1", "R5.2", "R7.3"],
    stream={"requests": 2, "chunks": [text("OK")]},
    task=task("completed", 2, waits=[8.64], text_="OK"),
    tool_calls=[],
)
openai_429("H14b", "requests",
           "Rate limit reached for gpt-4o-mini in organization org-PLACEHOLDER on requests per day (RPD): "
           "Limit 200, Used 200, Requested 1. Please try again in 7m12s. Visit "
           "https://platform.openai.com/account/rate-limits to learn more. You can increase your rate "
           "limit by adding a payment method to your account at https://platform.openai.com/account/billing.",
           [("x-ratelimit-limit-requests", "200"), ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "7m12s")])
meta("H14b", sequence=["H14b.http", "C02c.http"],
     notes="the wait (432 s) is past the 60 s cap: surface it, do not hammer the limit in 60 s slices")
expected(
    "H14b",
    title="OpenAI RPD limit 'Please try again in 7m12s': the 432 s wait is named, not waited out",
    source="https://github.com/feder-cr/invisible_playwright_mcp/issues/109",
    also=["https://github.com/feder-cr/invisible_playwright_mcp/issues/145", "https://github.com/crmne/ruby_llm/pull/850"],
    family="openai_chat", provider="openai-native", model="gpt-4o-mini", base_path="/v1",
    spec=["R5.2", "R6.7", "R12.1"],
    stream={"requests": 1, "chunks": [error("rate_limited", status=429, retry_after_s=432)]},
    task=task("failed", 1, error_kind="rate_limited", message_contains=["7 min"]),
    tool_calls=[],
)

# H15 — OpenRouter 404: the chosen model has no endpoint that supports tools.
json_error("H15", 404, "Not Found", {"error": {
    "message": "No endpoints found that support tool use. To learn more about provider routing, visit: "
               "https://openrouter.ai/docs/provider-routing", "code": 404}},
    headers=[("x-request-id", "PLACEHOLDER-H15"), ("server", "cloudflare")])
fails_at_once(
    "H15",
    title="OpenRouter 404 'No endpoints found that support tool use' fails at once",
    source="https://github.com/FoundationAgents/OpenManus/issues/55",
    also=["https://github.com/evalstate/fast-agent/issues/122", "https://github.com/zed-industries/zed/issues/36094",
          "https://github.com/Kilo-Org/kilocode/issues/9006"],
    family="openai_chat", provider="openrouter", model="deepseek/deepseek-r1:free", base_path="/v1",
    spec=["R7.4"],
    kind="invalid_request", status=404, mention=["tool use"],
)

# H16 — Cerebras: per-second limit whose code says "quota" is still a momentary rate limit.
json_error("H16", 429, "Too Many Requests", {
    "message": "Requests per second limit exceeded - too many requests sent.",
    "type": "too_many_requests_error", "param": "quota", "code": "request_quota_exceeded"},
    headers=[("x-ratelimit-limit-requests-day", "14400"), ("x-ratelimit-remaining-requests-day", "14212"),
             ("x-request-id", "PLACEHOLDER-H16")])
meta("H16", sequence=["H16.http", "C02c.http"],
     notes="Cerebras' own retry policy (R5.1): 6 attempts, 5 s first delay")
expected(
    "H16",
    title="Cerebras 429 request_quota_exceeded ('Requests per second limit exceeded') is retried",
    source="https://github.com/explyt/explyt/issues/35",
    also=["https://github.com/continuedev/continue/issues/9800"],
    family="openai_chat", provider="cerebras", model="zai-glm-4.7", base_path="/v1",
    spec=["R5.1", "R7.3"],
    stream={"requests": 2, "chunks": [text("OK")]},
    task=task("completed", 2, waits=[5], text_="OK"),
    tool_calls=[],
)

# H17 — xAI's newer overflow wording ([input_too_large] … exceeds budget).
json_error("H17", 400, "Bad Request", {
    "code": "Client specified an invalid argument",
    "error": "Failed to start sampling: [input_too_large] Current message (1149677 tokens) exceeds budget (975424 tokens)"},
    headers=[("x-request-id", "PLACEHOLDER-H17")])
fails_at_once(
    "H17",
    title="xAI '[input_too_large] Current message (1149677 tokens) exceeds budget (975424 tokens)'",
    source="https://github.com/UKGovernmentBEIS/inspect_ai/pull/5208",
    also=[],
    family="openai_chat", provider="xai", model="grok-4", base_path="/v1",
    spec=["R7.2", "R6.5"],
    kind="context_window_exceeded", status=400, mention=["975424"],
)

# H18 — a base URL that points at a web site: 200 text/html.
HTML = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>OpenAI</title></head>"
        "<body><div id=\"root\"><h1>Welcome</h1><p>Sign in to continue.</p></div>"
        "<script src=\"/static/app.PLACEHOLDER.js\"></script></body></html>\n")
http("H18", 200, "OK", [("Content-Type", "text/html; charset=utf-8"), ("Server", "cloudflare"),
                        ("Cache-Control", "public, max-age=0, must-revalidate")], HTML, "length")
fails_at_once(
    "H18",
    title="A base URL that reaches a web page (200 text/html) fails at once and says so",
    source="https://github.com/JuiceBoxxGames/utsuwa/pull/67",
    also=["https://github.com/beekeeper-studio/beekeeper-studio/issues/4188",
          "https://github.com/2FastLabs/agent-squad/issues/213"],
    family="openai_chat", provider="openai", model="gpt-4o", base_path="/v1",
    spec=["R4.0", "R7.4"],
    kind="decode", status=200, mention=["text/html", "base url"],
)


# ==================================================================== OpenAI Responses API
def resp_obj(status, output=(), usage_=None, **extra):
    r = {"id": "resp_PLACEHOLDER", "object": "response", "created_at": 1767225600, "status": status,
         "model": "gpt-5", "output": list(output), "usage": usage_}
    r.update(extra)
    return r


def resp_events(events):
    out = []
    for seq, (etype, payload) in enumerate(events):
        body = {"type": etype, "sequence_number": seq}
        body.update(payload)
        out.append((etype, body))
    return sse(out)


RESP_USAGE = {"input_tokens": 2310, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 512,
              "output_tokens_details": {"reasoning_tokens": 448}, "total_tokens": 2822}
MSG_ITEM = {"id": "msg_PLACEHOLDER", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}


def resp_text_prefix(parts):
    ev = [("response.created", {"response": resp_obj("in_progress")}),
          ("response.in_progress", {"response": resp_obj("in_progress")}),
          ("response.output_item.added", {"output_index": 0, "item": MSG_ITEM}),
          ("response.content_part.added", {"item_id": "msg_PLACEHOLDER", "output_index": 0, "content_index": 0,
                                           "part": {"type": "output_text", "annotations": [], "text": ""}})]
    for p in parts:
        ev.append(("response.output_text.delta", {"item_id": "msg_PLACEHOLDER", "output_index": 0,
                                                   "content_index": 0, "delta": p, "logprobs": []}))
    return ev


RESP_HEADERS = SSE_HEADERS + [("x-request-id", "req_PLACEHOLDER")]

# H19 — response.incomplete (max_output_tokens): a cut-off answer, not a stream failure.
H19_PARTS = ["The migration has three steps: first", " back up the database, then"]
http("H19", 200, "OK", RESP_HEADERS, resp_events(resp_text_prefix(H19_PARTS) + [
    ("response.incomplete", {"response": resp_obj(
        "incomplete", [dict(MSG_ITEM, status="incomplete",
                            content=[{"type": "output_text", "annotations": [], "text": "".join(H19_PARTS)}])],
        RESP_USAGE, incomplete_details={"reason": "max_output_tokens"})}),
]))
expected(
    "H19",
    title="Responses response.incomplete (max_output_tokens) is a cut-off answer, not a retryable failure",
    source="https://github.com/openai/codex/issues/38831",
    also=["https://github.com/openai/codex/pull/11558", "https://github.com/avala-ai/agent-code/pull/250",
          "https://github.com/NousResearch/hermes-agent/pull/37367"],
    family="openai_responses", provider="openai-native", model="gpt-5.4", base_path="/v1",
    spec=["R5.4", "R9.3"],
    stream={"requests": 1, "chunks": [
        text(H19_PARTS[0]), text(H19_PARTS[1]),
        usage(2310, 512, cache_read_tokens=0, reasoning_tokens=448),
    ]},
    task=task("completed", 1, text_="".join(H19_PARTS)),
    tool_calls=[],
)

# H19b — response.incomplete (content_filter): a block, named and not retried.
H19B_PARTS = ["Here is how the exploit", " works in detail:"]
http("H19b", 200, "OK", RESP_HEADERS, resp_events(resp_text_prefix(H19B_PARTS) + [
    ("response.incomplete", {"response": resp_obj(
        "incomplete", [dict(MSG_ITEM, status="incomplete",
                            content=[{"type": "output_text", "annotations": [], "text": "".join(H19B_PARTS)}])],
        dict(RESP_USAGE, output_tokens=9, output_tokens_details={"reasoning_tokens": 0}, total_tokens=2319),
        incomplete_details={"reason": "content_filter"})}),
]))
expected(
    "H19b",
    title="Responses response.incomplete (content_filter) is a named block, not retried",
    source="https://github.com/tombii/better-ccflare/pull/324",
    also=["https://github.com/NousResearch/hermes-agent/pull/55695"],
    family="openai_responses", provider="openai-native", model="gpt-5.4", base_path="/v1",
    spec=["R7.5"],
    stream={"requests": 1, "chunks": [
        text(H19B_PARTS[0]), text(H19B_PARTS[1]),
        usage(2310, 9, cache_read_tokens=0, reasoning_tokens=0),
        error("content_blocked", reason="content_filter"),
    ]},
    task=task("failed", 1, error_kind="content_blocked", text_="".join(H19B_PARTS),
              message_contains=["content_filter"]),
    tool_calls=[],
)

# H20 — response.failed carrying context_length_exceeded (no HTTP status).
http("H20", 200, "OK", RESP_HEADERS, resp_events([
    ("response.created", {"response": resp_obj("in_progress")}),
    ("response.in_progress", {"response": resp_obj("in_progress")}),
    ("response.failed", {"response": resp_obj("failed", error={
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model. Please adjust your input and try again."})}),
]))
expected(
    "H20",
    title="Responses response.failed with context_length_exceeded is an overflow, not a 5xx to retry",
    source="https://github.com/james-6-23/codex2api/issues/310",
    also=["https://github.com/james-6-23/codex2api/issues/415", "https://github.com/onyx-dot-app/onyx/issues/6051"],
    family="openai_responses", provider="openai-native", model="gpt-5.4", base_path="/v1",
    spec=["R7.2", "R6.5"],
    stream={"requests": 1, "chunks": [error("context_window_exceeded")]},
    task=task("failed", 1, error_kind="context_window_exceeded", message_contains=["context window"]),
    tool_calls=[],
)

# ========================================================================== Gemini (alt=sse)
# H21 — Gemini 3: parallel calls to one tool, each in its own chunk as parts[0], with ids.
G3_SIG = "UExBQ0VIT0xERVItZ2VtaW5pLTMtdGhvdWdodC1zaWduYXR1cmUtSDIx"
http("H21", 200, "OK", GEMINI_HEADERS, gemini_body([
    gemini_chunk([{"functionCall": {"name": "read_file", "args": {"path": "a.md"}, "id": "call_2048146"},
                   "thoughtSignature": G3_SIG}], model=G3),
    gemini_chunk([{"functionCall": {"name": "read_file", "args": {"path": "b.md"}, "id": "call_2048154"}}], model=G3),
    gemini_chunk([{"functionCall": {"name": "read_file", "args": {"path": "c.md"}, "id": "call_2048158"}}], "STOP",
                 {"promptTokenCount": 5120, "candidatesTokenCount": 45, "totalTokenCount": 5251,
                  "thoughtsTokenCount": 86}, model=G3),
]))
expected(
    "H21",
    title="Gemini 3: three parallel calls to one tool, each its own chunk at parts[0], stay three calls",
    source="https://github.com/NousResearch/hermes-agent/issues/101536",
    also=["https://github.com/NousResearch/hermes-agent/issues/57939", "https://github.com/brainlid/langchain/pull/620",
          "https://github.com/NousResearch/hermes-agent/pull/101654"],
    family="gemini", provider="gemini", model=G3, base_path="",
    spec=["R1.2", "R4.7"],
    stream={"requests": 1, "chunks": [
        tool_call("call_2048146", "read_file", "{\"path\":\"a.md\"}"),
        tool_call("call_2048154", "read_file", "{\"path\":\"b.md\"}"),
        tool_call("call_2048158", "read_file", "{\"path\":\"c.md\"}"),
        usage(5120, 45, reasoning_tokens=86),
    ]},
    task=task("completed", 1, text_=""),
    tool_calls=[{"id": "call_2048146", "name": "read_file", "arguments": {"path": "a.md"}},
                {"id": "call_2048154", "name": "read_file", "arguments": {"path": "b.md"}},
                {"id": "call_2048158", "name": "read_file", "arguments": {"path": "c.md"}}],
)

# H22 — Gemini 2.5: two calls to one tool in one chunk, no ids (ids must be made up, distinct).
http("H22", 200, "OK", GEMINI_HEADERS, gemini_body([
    gemini_chunk([{"text": "I'll create both documents."}], model="gemini-2.5-flash"),
    gemini_chunk([{"functionCall": {"name": "create_document", "args": {"title": "Q1 report"}}},
                  {"functionCall": {"name": "create_document", "args": {"title": "Q2 report"}}}], "STOP",
                 {"promptTokenCount": 880, "candidatesTokenCount": 31, "totalTokenCount": 911},
                 model="gemini-2.5-flash"),
]))
expected(
    "H22",
    title="Gemini 2.5: two calls to one tool in one chunk, without ids, are two calls",
    source="https://github.com/omnigent-ai/omnigent/pull/28",
    also=["https://github.com/vertesia/llumiverse/pull/663", "https://github.com/brainlid/langchain/pull/620"],
    family="gemini", provider="gemini", model="gemini-2.5-flash", base_path="",
    spec=["R1.2"],
    stream={"requests": 1, "chunks": [
        text("I'll create both documents."),
        tool_call(None, "create_document", "{\"title\":\"Q1 report\"}"),
        tool_call(None, "create_document", "{\"title\":\"Q2 report\"}"),
        usage(880, 31),
    ]},
    task=task("completed", 1, text_="I'll create both documents."),
    tool_calls=[{"id": None, "name": "create_document", "arguments": {"title": "Q1 report"}},
                {"id": None, "name": "create_document", "arguments": {"title": "Q2 report"}}],
)

# H23 — Gemini finishReason MALFORMED_FUNCTION_CALL with no content: retried (R7.5).
http("H23", 200, "OK", GEMINI_HEADERS, gemini_body([
    {"candidates": [{"content": {}, "finishReason": "MALFORMED_FUNCTION_CALL",
                     "finishMessage": "Malformed function call: print(default_api.write_file(path=\"notes.md\", "
                                      "content=\"line one\nline two\"))", "index": 0}],
     "usageMetadata": {"promptTokenCount": 3911, "totalTokenCount": 3911},
     "modelVersion": "gemini-2.5-pro", "responseId": "PLACEHOLDER-gemini-response-id"},
]))
meta("H23", sequence=["H23.http", "Hok_gemini.http"],
     notes="a malformed function call is sampling noise: retried, unlike SAFETY/RECITATION (R7.5)")
expected(
    "H23",
    title="Gemini finishReason MALFORMED_FUNCTION_CALL is a named, retried error, never an empty success",
    source="https://github.com/NousResearch/hermes-agent/pull/83886",
    also=["https://github.com/lbjlaq/Antigravity-Manager/issues/1045"],
    family="gemini", provider="gemini", model="gemini-2.5-pro", base_path="",
    spec=["R7.5", "R6.7", "R9.4"],
    stream={"requests": 1, "chunks": [usage(3911, 0), error("server", reason="MALFORMED_FUNCTION_CALL")]},
    task=task("completed", 2, waits=[2], text_="OK"),
    tool_calls=[],
)

# H24 — Gemini: the last chunk holds finishReason STOP and a content without parts.
http("H24", 200, "OK", GEMINI_HEADERS, gemini_body([
    gemini_chunk([{"functionCall": {"name": "write_todo", "args": {
        "todos": [{"id": "1", "title": "Write tests", "status": "pending"}], "update_by": "id"}}}],
        model="gemini-2.5-pro"),
    {"candidates": [{"content": {"role": "model"}, "finishReason": "STOP", "index": 0}],
     "usageMetadata": {"promptTokenCount": 2301, "candidatesTokenCount": 40, "totalTokenCount": 2341},
     "modelVersion": "gemini-2.5-pro", "responseId": "PLACEHOLDER-gemini-response-id"},
]))
expected(
    "H24",
    title="Gemini closing chunk 'content: {role: model}' with finishReason STOP after a function call",
    source="https://github.com/pydantic/pydantic-ai/pull/2631",
    also=["https://github.com/BerriAI/litellm/pull/40864", "https://github.com/agentjido/req_llm/issues/638"],
    family="gemini", provider="gemini", model="gemini-2.5-pro", base_path="",
    spec=["R1.2", "R9.4"],
    stream={"requests": 1, "chunks": [
        tool_call(None, "write_todo",
                  "{\"todos\":[{\"id\":\"1\",\"title\":\"Write tests\",\"status\":\"pending\"}],\"update_by\":\"id\"}"),
        usage(2301, 40),
    ]},
    task=task("completed", 1, text_=""),
    tool_calls=[{"id": None, "name": "write_todo", "arguments": {
        "todos": [{"id": "1", "title": "Write tests", "status": "pending"}], "update_by": "id"}}],
)

# ================================================================= Bedrock ConverseStream
B37 = "anthropic.claude-3-7-sonnet-20250219-v1:0"
BEDROCK_ONDEMAND = ("Invocation of model ID anthropic.claude-3-7-sonnet-20250219-v1:0 with on-demand throughput "
                    "isn\u2019t supported. Retry your request with the ID or ARN of an inference profile that "
                    "contains this model.")
bedrock_error("H25", 400, "Bad Request", "ValidationException", BEDROCK_ONDEMAND)
expected(
    "H25",
    title="Bedrock 'on-demand throughput isn’t supported … inference profile' fails at once with the fix",
    source="https://github.com/anomalyco/opencode/issues/396",
    also=["https://github.com/stackblitz-labs/bolt.diy/issues/1102", "https://github.com/FlowiseAI/Flowise/issues/4253",
          "https://github.com/terricain/aioboto3/issues/352"],
    family="bedrock", provider="bedrock", model=B37, base_path="",
    spec=["R7.4", "R2.3", "R4.8"],
    stream={"requests": 1, "chunks": [error("invalid_request", status=400)]},
    task=task("failed", 1, error_kind="invalid_request",
              message_contains=["inference profile", "use_cross_region_inference"]),
    tool_calls=[],
)

bedrock_error("H26", 403, "Forbidden", "AccessDeniedException",
              "You don't have access to the model with the specified model ID.")
fails_at_once(
    "H26",
    title="Bedrock AccessDeniedException 'You don't have access to the model' is entitlement: no retry",
    source="https://github.com/anthropics/claude-code/issues/536",
    also=["https://github.com/langgenius/dify/issues/2829", "https://github.com/dirkpetersen/our-chat/issues/3"],
    family="bedrock", provider="bedrock", model=B37, base_path="",
    spec=["R6.7", "R7.1"],
    kind="entitlement", status=403, mention=["access to the model"],
)

B45 = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
bedrock_stream("H27", [
    bedrock_event("messageStart", {"role": "assistant"}, 33),
    bedrock_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "The log shows"}}, 17),
    bedrock_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": " three failures"}}, 4),
    bedrock_event("contentBlockStop", {"contentBlockIndex": 0}, 26),
    bedrock_event("messageStop", {"stopReason": "model_context_window_exceeded"}, 8),
    bedrock_event("metadata", {"usage": {"inputTokens": 199050, "outputTokens": 950, "totalTokens": 200000},
                               "metrics": {"latencyMs": 48210}}, 14),
])
expected(
    "H27",
    title="Bedrock messageStop stopReason model_context_window_exceeded is an overflow, not a stop",
    source="https://github.com/UKGovernmentBEIS/inspect_ai/issues/2941",
    also=["https://github.com/agentjido/req_llm/pull/1033", "https://github.com/ChatLab/ChatLab/issues/135"],
    family="bedrock", provider="bedrock", model=B45, base_path="",
    spec=["R7.2", "R7.5", "R4.8"],
    stream={"requests": 1, "chunks": [
        text("The log shows"), text(" three failures"),
        usage(199050, 950),
        error("context_window_exceeded"),
    ]},
    task=task("failed", 1, error_kind="context_window_exceeded", text_="The log shows three failures",
              message_contains=["context window"]),
    tool_calls=[],
)

bedrock_stream("H28", [
    bedrock_event("messageStart", {"role": "assistant"}, 40),
    bedrock_event("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {
        "toolUseId": "tooluse_PLACEHOLDER_H28", "name": "write_file"}}}, 11),
    bedrock_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {
        "input": "{\"path\": \"notes.md\", \"content\": \"line one\nline two"}}}, 6),
    bedrock_event("contentBlockStop", {"contentBlockIndex": 0}, 19),
    bedrock_event("messageStop", {"stopReason": "malformed_tool_use"}, 28),
    bedrock_event("metadata", {"usage": {"inputTokens": 4102, "outputTokens": 23, "totalTokens": 4125},
                               "metrics": {"latencyMs": 1880}}, 3),
])
meta("H28", sequence=["H28.http", "Hok_bedrock.http"],
     notes="the tool call's arguments never became JSON: nothing runs, the request is sampled again")
expected(
    "H28",
    title="Bedrock stopReason malformed_tool_use: the call is never handed over, the request is retried",
    source="https://github.com/anomalyco/opencode/pull/46193",
    also=["https://github.com/agentjido/req_llm/pull/1033", "https://github.com/UKGovernmentBEIS/inspect_ai/issues/2941"],
    family="bedrock", provider="bedrock", model=B45, base_path="",
    spec=["R7.5", "R6.4", "R6.7"],
    stream={"requests": 1, "chunks": [
        usage(4102, 23),
        error("server", reason="malformed_tool_use"),
    ]},
    task=task("completed", 2, waits=[2], text_="OK"),
    tool_calls=[],
)

bedrock_stream("H29", [
    bedrock_event("messageStart", {"role": "assistant"}, 25),
])
meta("H29", sequence=["H29.http", "Hok_bedrock.http"],
     notes="the event stream ends after messageStart: no content, no messageStop, no metadata")
expected(
    "H29",
    title="Bedrock stream that ends after messageStart (no messageStop, 0 tokens) is a failure, retried",
    source="https://github.com/earendil-works/pi/issues/4210",
    also=["https://github.com/BerriAI/litellm/issues/32686", "https://github.com/floci-io/floci/pull/3043"],
    family="bedrock", provider="bedrock", model="global.anthropic.claude-opus-4-7", base_path="",
    spec=["R6.4", "R6.7", "R9.4"],
    stream={"requests": 1, "chunks": [error("network")]},
    task=task("completed", 2, waits=[2], text_="OK"),
    tool_calls=[],
)

# ======================================================================= Ollama /api/chat
OLLAMA_JSON = "application/json; charset=utf-8"
json_error("H30", 500, "Internal Server Error",
           {"error": "model requires more system memory (7.5 GiB) than is available (6.0 GiB)"},
           content_type=OLLAMA_JSON)
fails_at_once(
    "H30",
    title="Ollama 500 'model requires more system memory (7.5 GiB) than is available' is not retried",
    source="https://github.com/continuedev/continue/issues/11505",
    also=[],
    family="ollama", provider="ollama", model="deepseek-r1:8b", base_path="",
    spec=["R7.4"],
    kind="server", status=500, mention=["system memory"],
)

json_error("H31", 404, "Not Found", {"error": "model \"llama3\" not found, try pulling it first"},
           content_type=OLLAMA_JSON)
fails_at_once(
    "H31",
    title="Ollama 404 'model \"llama3\" not found, try pulling it first' fails at once",
    source="https://github.com/ollama/ollama-python/issues/149",
    also=["https://github.com/PromptEngineer48/Ollama/issues/9", "https://github.com/techwithtim/AI-Web-Scraper/issues/6"],
    family="ollama", provider="ollama", model="llama3", base_path="",
    spec=["R7.4", "R2.3"],
    kind="invalid_request", status=404, mention=["ollama pull llama3"],
)

OLLAMA_MODEL = "qwen2.5:14b"
ndjson = "".join(compact(line) + "\n" for line in [
    {"model": OLLAMA_MODEL, "created_at": "2026-01-01T00:00:00Z", "message": {
        "role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": "London"}}},
            {"function": {"name": "get_weather", "arguments": {"city": "Brussels"}}}]}, "done": False},
    {"model": OLLAMA_MODEL, "created_at": "2026-01-01T00:00:01Z", "message": {"role": "assistant", "content": ""},
     "done": True, "done_reason": "stop", "total_duration": 2100000000, "load_duration": 30000000,
     "prompt_eval_count": 212, "prompt_eval_duration": 400000000, "eval_count": 41, "eval_duration": 1600000000},
])
http("H32", 200, "OK", [("Content-Type", "application/x-ndjson")], ndjson)
expected(
    "H32",
    title="Ollama /api/chat: two calls to one tool without ids are two calls with distinct ids",
    source="https://github.com/tetsuo-ai/agenc-core/issues/417",
    also=["https://github.com/microsoft/agent-framework/issues/6788", "https://github.com/ollama/ollama/issues/6708",
          "https://github.com/run-llama/llama_index/issues/22464"],
    family="ollama", provider="ollama", model=OLLAMA_MODEL, base_path="",
    spec=["R1.2"],
    stream={"requests": 1, "chunks": [
        tool_call(None, "get_weather", "{\"city\":\"London\"}"),
        tool_call(None, "get_weather", "{\"city\":\"Brussels\"}"),
        usage(212, 41),
    ]},
    task=task("completed", 1, text_=""),
    tool_calls=[{"id": None, "name": "get_weather", "arguments": {"city": "London"}},
                {"id": None, "name": "get_weather", "arguments": {"city": "Brussels"}}],
)

# H33 — DeepSeek (OpenAI-compatible): the finish chunk has no `delta`, the usage chunk has
# `choices: null`, and one chunk is written with spaces after `:` and `,` and escapes in its text.
DS = "deepseek-chat"
DS_HEAD = '"id":"chatcmpl-PLACEHOLDER33","object":"chat.completion.chunk","created":1767225600,' \
          f'"model":"{DS}","system_fingerprint":"fp_PLACEHOLDER"'
http("H33", 200, "OK", SSE_HEADERS, sse([
    (None, "{" + DS_HEAD + ',"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
                           '"logprobs":null,"finish_reason":null}]}'),
    (None, "{" + DS_HEAD + ',"choices":[{"index":0,"delta":{"content":"Use"},"logprobs":null,'
                           '"finish_reason":null}]}'),
    (None, '{"id": "chatcmpl-PLACEHOLDER33", "object": "chat.completion.chunk", "created": 1767225600, '
           f'"model": "{DS}", "choices": [{{"index": 0, "delta": {{"content": " \\"quotes\\"\\n'
           'caf\\u00e9 \\ud83d\\ude00"}, "logprobs": null, "finish_reason": null}]}'),
    (None, "{" + DS_HEAD + ',"choices":[{"index":0,"finish_reason":"stop","logprobs":null}]}'),
    (None, "{" + DS_HEAD + ',"choices":null,"usage":{"prompt_tokens":310,"completion_tokens":9,'
                           '"total_tokens":319}}'),
    (None, "[DONE]"),
]))
expected(
    "H33",
    title="DeepSeek: a finish chunk without delta and a usage chunk with choices null end the stream cleanly",
    source="https://github.com/osaurus-ai/osaurus/pull/2150",
    also=["https://github.com/pydantic/pydantic-ai/issues/5165", "https://github.com/cline/cline/pull/8518",
          "https://github.com/openclaw/openclaw/issues/15488"],
    family="openai_chat", provider="openai", model=DS, base_path="/v1",
    spec=["R1.2", "R1.3"],
    stream={"requests": 1, "chunks": [
        text("Use"), text(" \"quotes\"\ncafé 😀"), usage(310, 9),
    ]},
    task=task("completed", 1, text_="Use \"quotes\"\ncafé 😀"),
    tool_calls=[],
)

# H34 — Bedrock: a toolUse delta after its block's contentBlockStop (found by the map_bedrock
# fuzz target; opencode's Converse parser drops such deltas, anomalyco/opencode#47182).
bedrock_stream("H34", [
    bedrock_event("messageStart", {"role": "assistant"}, 17),
    bedrock_event("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {
        "toolUseId": "tooluse_PLACEHOLDER_H34", "name": "read_file"}}}, 4),
    bedrock_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {
        "input": "{\"path\": "}}}, 9),
    bedrock_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {
        "input": "\"README.md\"}"}}}, 2),
    bedrock_event("contentBlockStop", {"contentBlockIndex": 0}, 13),
    bedrock_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {
        "input": "{\"path\": \"x\"}"}}}, 6),
    bedrock_event("messageStop", {"stopReason": "tool_use"}, 21),
    bedrock_event("metadata", {"usage": {"inputTokens": 1530, "outputTokens": 26, "totalTokens": 1556},
                               "metrics": {"latencyMs": 905}}, 8),
])
expected(
    "H34",
    title="Bedrock: a toolUse delta after its block's contentBlockStop is dropped; the call stays as stopped",
    source="https://github.com/anomalyco/opencode/pull/47182",
    also=["https://github.com/NousResearch/hermes-agent/pull/108209"],
    family="bedrock", provider="bedrock", model=B45, base_path="",
    spec=["R1.2"],
    stream={"requests": 1, "chunks": [
        tool_call("tooluse_PLACEHOLDER_H34", "read_file", "{\"path\": \"README.md\"}"),
        usage(1530, 26),
    ]},
    task=task("completed", 1, text_=""),
    tool_calls=[{"id": "tooluse_PLACEHOLDER_H34", "name": "read_file", "arguments": {"path": "README.md"}}],
)

# H35 — OpenAI Responses: a function_call_arguments.delta after the call's
# function_call_arguments.done (non-conforming proxies; pydantic/pydantic-ai#6079: a stray "}"
# made the arguments invalid JSON).
H35_ITEM = {"id": "fc_PLACEHOLDER_H35", "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": "call_PLACEHOLDER_H35", "name": "read_file"}
H35_ARGS = "{\"path\":\"src/main.rs\"}"
http("H35", 200, "OK", RESP_HEADERS, resp_events([
    ("response.created", {"response": resp_obj("in_progress")}),
    ("response.in_progress", {"response": resp_obj("in_progress")}),
    ("response.output_item.added", {"output_index": 0, "item": H35_ITEM}),
    ("response.function_call_arguments.delta", {"item_id": "fc_PLACEHOLDER_H35", "output_index": 0,
                                                "delta": "{\"path\":"}),
    ("response.function_call_arguments.delta", {"item_id": "fc_PLACEHOLDER_H35", "output_index": 0,
                                                "delta": "\"src/main.rs\"}"}),
    ("response.function_call_arguments.done", {"item_id": "fc_PLACEHOLDER_H35", "output_index": 0,
                                               "name": "read_file", "arguments": H35_ARGS}),
    ("response.function_call_arguments.delta", {"item_id": "fc_PLACEHOLDER_H35", "output_index": 0,
                                                "delta": "}"}),
    ("response.output_item.done", {"output_index": 0, "item": dict(H35_ITEM, status="completed",
                                                                   arguments=H35_ARGS)}),
    ("response.completed", {"response": resp_obj(
        "completed", [dict(H35_ITEM, status="completed", arguments=H35_ARGS)],
        dict(RESP_USAGE, output_tokens=18, output_tokens_details={"reasoning_tokens": 0}, total_tokens=2328))}),
]))
expected(
    "H35",
    title="Responses: an arguments delta after the call's .done is dropped; the call stays as done",
    source="https://github.com/pydantic/pydantic-ai/pull/6079",
    also=["https://github.com/docker/docker-agent/pull/3825"],
    family="openai_responses", provider="openai-native", model="gpt-5.4", base_path="/v1",
    spec=["R1.2"],
    stream={"requests": 1, "chunks": [
        tool_call("call_PLACEHOLDER_H35", "read_file", H35_ARGS),
        usage(2310, 18, cache_read_tokens=0, reasoning_tokens=0),
    ]},
    task=task("completed", 1, text_=""),
    tool_calls=[{"id": "call_PLACEHOLDER_H35", "name": "read_file", "arguments": {"path": "src/main.rs"}}],
)

if __name__ == "__main__":
    names = sorted(n for n in os.listdir(HERE) if n.startswith("H") and n.endswith(".expected.json"))
    print(f"wrote {len(names)} H cases")
