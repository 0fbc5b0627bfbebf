#!/usr/bin/env bash
# Quickstart: build Switchyard and, at the same time, start the local model server if it is not
# running, then put `switchyard` on the PATH and stream an answer from the local model with
# `switchyard task`. No API key, no configuration. The server's first build on a machine takes
# 3 to 10 minutes on 2 cores and is cached in ~/.cache/switchyard for later clones.
#
#   scripts/quickstart.sh                      # asks a default question
#   scripts/quickstart.sh "Why is the sky blue?"
#
# The binary is copied to the folder `cargo install` uses: $CARGO_INSTALL_ROOT/bin, else
# $CARGO_HOME/bin, else ~/.cargo/bin. SWITCHYARD_BIN_DIR names another folder.
# The local model server is left running for later commands; `scripts/local-model.sh stop`
# stops it. Exits with the task's exit code.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The model server is set up and started in the background while cargo builds; its lines go to
# a log, and each one is shown whole once the build is done.
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

# Prints the log's complete lines after the first $1, whole: a line is never cut, so a figure
# such as "done in 412s" is always read in full. Prints how many lines the log now has.
show_new_lines() {
  local from="$1" total
  total="$(wc -l <"$server_log")"
  if ((total > from)); then
    sed -n "$((from + 1)),${total}p" "$server_log" >&2
  fi
  echo "$total"
}

shown=0
while kill -0 "$server_pid" 2>/dev/null; do
  shown="$(show_new_lines "$shown")"
  sleep 2
done
trap - INT TERM
server_ok=1
wait "$server_pid" || server_ok=0
# The lines written between the last look and the server script's exit.
show_new_lines "$shown" >/dev/null
if ((!server_ok)); then
  echo "quickstart: the local model server did not start (its lines are above; the log stays at $server_log)" >&2
  exit 1
fi
rm -f "$server_log"

# On the PATH, as `cargo install` would put it. The copy is renamed into place, so a
# `switchyard` still running from an earlier quickstart keeps its own file.
bin_dir="${SWITCHYARD_BIN_DIR:-}"
if [ -z "$bin_dir" ]; then
  if [ -n "${CARGO_INSTALL_ROOT:-}" ]; then
    bin_dir="$CARGO_INSTALL_ROOT/bin"
  else
    bin_dir="${CARGO_HOME:-$HOME/.cargo}/bin"
  fi
fi
mkdir -p "$bin_dir"
cp "$bin" "$bin_dir/.switchyard.$$"
chmod 755 "$bin_dir/.switchyard.$$"
mv -f "$bin_dir/.switchyard.$$" "$bin_dir/switchyard"
installed="$bin_dir/switchyard"
echo "quickstart: installed switchyard as $installed" >&2

prompt="${*:-Explain in two sentences what a large language model is.}"
flags=()
# With no configuration file Switchyard's built-in default is this local server. If you have
# a configuration file, point at the local server explicitly instead.
if [ -e "${SWITCHYARD_HOME:-${XDG_CONFIG_HOME:-$HOME/.config}/switchyard}/config.toml" ]; then
  flags=(--provider openai --model smollm2-135m-instruct --base-url "$(scripts/local-model.sh url --python)")
fi
status=0
"$installed" task "${flags[@]}" "$prompt" || status=$?

# What the README's later commands need: `switchyard` found on the PATH, and this copy.
found="$(command -v switchyard || true)"
case ":$PATH:" in
  *":$bin_dir:"* | *":${bin_dir%/}:"*)
    if [ -n "$found" ] && [ "$found" != "$installed" ]; then
      echo "quickstart: note: \`switchyard\` on your PATH is $found, found before $installed" >&2
    fi
    ;;
  *)
    echo "quickstart: $bin_dir is not on your PATH. For this shell:" >&2
    echo "  export PATH=\"$bin_dir:\$PATH\"" >&2
    echo "and to keep it, add that line to ~/.bashrc (or ~/.zshrc, ~/.profile)." >&2
    ;;
esac
exit "$status"
