#!/usr/bin/env python3
"""Generates Switchyard's built-in model catalogue from the reference's model tables.

Reads `tests/reference/cline-v4.0.10-models.json` (every `*Models` table of Cline v4.0.10's
`apps/vscode/src/shared/api.ts`, evaluated to JSON; see tests/reference/README.md) and writes
one TOML file per table to `crates/switchyard-api/models/reference/`, named after the provider
id (and the region, for the providers with one table per region: qwen and zai). Also writes the
reference's fallback model info for the providers whose model list is fetched at run time
(openrouter, requesty, vercel-ai-gateway) as a one-entry table under the reference's default id.

Every field of every entry is kept, renamed to snake_case; an unknown field is an error, so
that a new reference release with new fields is noticed here instead of silently dropped.

Usage: scripts/gen-models.py [--reference FILE] [--out DIR] [--check]
  --check   write nothing; exit 1 when a generated file differs from what is on disk.

The next reference release is one re-run: copy its JSON into tests/reference/, point
--reference at it (or update REFERENCE below), run this script, and review the diff.
"""

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests/reference/cline-v4.0.10-models.json"
OUT = ROOT / "crates/switchyard-api/models/reference"

# The reference's tables that serve one provider id per region, and the region each serves.
# (Cline: QwenHandler reads qwenApiLine, ZAiHandler zaiApiLine; "international" / "china".)
REGIONS = {
    "internationalQwenModels": "international",
    "mainlandQwenModels": "china",
    "internationalZAiModels": "international",
    "mainlandZAiModels": "china",
}

# Tables derived from another table, not read by any handler: left out (their only fact, the
# `supportsGlobalEndpoint` flag, is on the entries of the table they derive from).
DERIVED = {"vertexGlobalModels"}

# Providers whose model list the reference fetches at run time: the reference's default id
# and the model info it falls back to (`default_model_infos`), by provider id.
FALLBACK_TABLES = {
    "openrouter": ("openRouterDefaultModelId", "openRouterDefaultModelInfo"),
    "vercel-ai-gateway": ("openRouterDefaultModelId", "openRouterDefaultModelInfo"),
    "requesty": ("requestyDefaultModelId", "requestyDefaultModelInfo"),
}

# The reference's ApiFormat enum value → Switchyard's `api_format` name.
API_FORMATS = {
    0: "anthropic",
    1: "gemini",
    2: "openai_chat",
    3: "r1",
    4: "responses",
    5: "responses_websocket",
}

# Reference field → Switchyard field, in the order written.
FIELDS = [
    ("name", "name"),
    ("maxTokens", "max_tokens"),
    ("contextWindow", "context_window"),
    ("supportsImages", "supports_images"),
    ("supportsPromptCache", "supports_prompt_cache"),
    ("supportsReasoning", "supports_reasoning"),
    ("supportsReasoningEffort", "supports_reasoning_effort"),
    ("supportsStreaming", "supports_streaming"),
    ("supportsTools", "supports_tools"),
    ("supportsGlobalEndpoint", "supports_global_endpoint"),
    ("systemRole", "system_role"),
    ("inputPrice", "input_price"),
    ("outputPrice", "output_price"),
    ("cacheWritesPrice", "cache_writes_price"),
    ("cacheReadsPrice", "cache_reads_price"),
    ("temperature", "temperature"),
    ("apiFormat", "api_format"),
    ("description", "description"),
    ("thinkingConfig", "thinking_config"),
    ("tiers", "tiers"),
]
THINKING_FIELDS = [
    ("maxBudget", "max_budget"),
    ("outputPrice", "output_price"),
    ("geminiThinkingLevel", "gemini_thinking_level"),
    ("supportsThinkingLevel", "supports_thinking_level"),
]
TIER_FIELDS = [
    ("contextWindow", "context_window"),
    ("inputPrice", "input_price"),
    ("outputPrice", "output_price"),
    ("cacheWritesPrice", "cache_writes_price"),
    ("cacheReadsPrice", "cache_reads_price"),
]
PRICE_FIELDS = {"inputPrice", "outputPrice", "cacheWritesPrice", "cacheReadsPrice", "temperature"}


class GenError(Exception):
    pass


def toml_string(s):
    # JSON string escapes are TOML basic-string escapes (json.dumps never writes `\/`).
    return json.dumps(s, ensure_ascii=False)


def toml_key(s):
    return s if s.replace("_", "").replace("-", "").isalnum() and s.isascii() else toml_string(s)


def toml_number(key, v, where):
    if isinstance(v, bool):
        raise GenError(f"{where}: {key} is a boolean, expected a number")
    if key in PRICE_FIELDS:
        return repr(float(v))
    if isinstance(v, float):
        if not v.is_integer():
            raise GenError(f"{where}: {key} = {v} is not a whole number of tokens")
        v = int(v)
    return str(v)


def value(key, v, where):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return toml_string(v)
    if isinstance(v, (int, float)):
        return toml_number(key, v, where)
    raise GenError(f"{where}: {key} has an unexpected type {type(v).__name__}")


def inline_table(d, fields, where):
    unknown = set(d) - {k for k, _ in fields}
    if unknown:
        raise GenError(f"{where}: unknown fields {sorted(unknown)}; teach scripts/gen-models.py")
    parts = []
    for ref, ours in fields:
        if ref not in d:
            continue
        v = d[ref]
        if ref == "contextWindow" and v == "Infinity":
            parts.append(f'{ours} = "Infinity"')
        else:
            parts.append(f"{ours} = {value(ref, v, where)}")
    return "{ " + ", ".join(parts) + " }"


def entry_lines(model_id, info, where):
    unknown = set(info) - {k for k, _ in FIELDS}
    if unknown:
        raise GenError(f"{where}: unknown fields {sorted(unknown)}; teach scripts/gen-models.py")
    lines = [f"[models.{toml_string(model_id)}]"]
    for ref, ours in FIELDS:
        if ref not in info:
            continue
        v = info[ref]
        if ref == "maxTokens" and v == -1:
            # -1: no limit set by the reference; Switchyard's 0 means the same (unknown).
            continue
        if ref == "apiFormat":
            if v not in API_FORMATS:
                raise GenError(f"{where}: apiFormat {v} is not known; teach scripts/gen-models.py")
            lines.append(f'{ours} = "{API_FORMATS[v]}"')
        elif ref == "thinkingConfig":
            lines.append(f"{ours} = {inline_table(v, THINKING_FIELDS, where + ' thinkingConfig')}")
        elif ref == "tiers":
            lines.append(f"{ours} = [")
            for i, tier in enumerate(v):
                lines.append(f"  {inline_table(tier, TIER_FIELDS, f'{where} tiers[{i}]')},")
            lines.append("]")
        else:
            lines.append(f"{ours} = {value(ref, v, where)}")
    return lines


def header(source, lines):
    out = [
        "# GENERATED by scripts/gen-models.py — do not edit. Change the generator, or add models",
        "# in crates/switchyard-api/models/switchyard/ (built in) or in models.toml (your own).",
        f"# From: tests/reference/{REFERENCE_NAME} ({source}).",
        "# Units: max_tokens, context_window and tiers' context_window in tokens; prices in USD per",
        "# million tokens; api_format is the reference's ApiFormat (responses = OPENAI_RESPONSES).",
    ]
    return out + lines


def render_table(provider, region, table_name, default, models):
    lines = [f"provider = {toml_string(provider)}"]
    if region:
        lines.append(f"region = {toml_string(region)}")
    lines.append(f"source = {toml_string(table_name)}")
    lines.append(f"default = {toml_string(default)}")
    for model_id, info in models.items():
        lines.append("")
        lines.extend(entry_lines(model_id, info, f"{table_name} {model_id}"))
    return lines


def generate(reference_path):
    ref = json.loads(reference_path.read_text())
    files = {}
    for table_name, table in ref["tables"].items():
        if table_name in DERIVED:
            continue
        ids = table["provider_ids"]
        if not ids:
            raise GenError(f"{table_name} serves no provider id; list it in DERIVED or map it")
        if table["model_count"] != len(table["models"]):
            raise GenError(f"{table_name}: model_count {table['model_count']} != {len(table['models'])}")
        region = REGIONS.get(table_name)
        for provider in ids:
            name = f"{provider}-{region}.toml" if region else f"{provider}.toml"
            if name in files:
                raise GenError(f"two tables for {name}")
            source = f"apps/vscode/src/shared/api.ts `{table_name}`, default `{table['default_model_constant']}`"
            files[name] = header(
                source,
                render_table(provider, region, table_name, table["default_model"], table["models"]),
            )
    exports = ref["other_exports"]
    infos = ref["default_model_infos"]
    for provider, (id_const, info_const) in FALLBACK_TABLES.items():
        default = exports[id_const]
        source = f"`{info_const}` under `{id_const}`, the model info the reference falls back to"
        files[f"{provider}.toml"] = header(
            source,
            render_table(provider, None, info_const, default, {default: infos[info_const]}),
        )
    return {name: "\n".join(lines) + "\n" for name, lines in files.items()}


def main():
    global REFERENCE_NAME
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=pathlib.Path, default=REFERENCE)
    parser.add_argument("--out", type=pathlib.Path, default=OUT)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    REFERENCE_NAME = args.reference.name
    try:
        files = generate(args.reference)
    except GenError as e:
        print(f"gen-models: {e}", file=sys.stderr)
        return 2
    stale = sorted(
        p.name for p in args.out.glob("*.toml") if p.name not in files
    ) if args.out.exists() else []
    if args.check:
        differ = [n for n, text in files.items() if not (args.out / n).exists() or (args.out / n).read_text() != text]
        for n in differ + stale:
            print(f"gen-models: {args.out / n} is out of date", file=sys.stderr)
        return 1 if differ or stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for n in stale:
        (args.out / n).unlink()
    for n, text in sorted(files.items()):
        (args.out / n).write_text(text)
    count = sum(t.count("\n[models.") for t in files.values())
    print(f"gen-models: wrote {len(files)} files, {count} entries, to {args.out}")
    return 0


REFERENCE_NAME = REFERENCE.name

if __name__ == "__main__":
    sys.exit(main())
