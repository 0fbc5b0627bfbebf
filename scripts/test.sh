#!/usr/bin/env bash
# Runs every test of the workspace: unit and property tests, fixture replays, the CLI tests,
# and the end-to-end test of the built `switchyard` binary against two real local model
# servers (llama-cpp-python's and llama.cpp's native `llama-server`, both serving
# SmolLM2-135M on 127.0.0.1; see scripts/local-model.sh).
#
# The first run builds both servers (about 3 + 4 minutes on 2 cores); later runs reuse them,
# and servers already running are left as they are. Extra arguments go to `cargo test`.
# SWITCHYARD_E2E_NATIVE=0 skips the native server (the python one is always used).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The real MCP servers the MCP tests run (pinned, from the npm registry, into .mcp-servers/).
if command -v npm >/dev/null; then
  scripts/mcp-servers.sh
else
  echo "npm not found: the MCP tests against real servers will say SKIPPED" >&2
fi

scripts/local-model.sh start --python
urls="python=$(scripts/local-model.sh url --python)"
if [ "${SWITCHYARD_E2E_NATIVE:-1}" != 0 ]; then
  scripts/local-model.sh start --native
  urls="$urls,native=$(scripts/local-model.sh url --native)"
fi
echo "end-to-end servers: $urls"

SWITCHYARD_E2E_BASE_URLS="$urls" cargo test --workspace --features switchyard-cli/e2e "$@"
