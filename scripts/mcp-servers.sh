#!/usr/bin/env bash
# Installs the real MCP servers the MCP tests run (pinned versions, from the npm registry) into
# .mcp-servers/ (git-ignored). Idempotent: does nothing when the pinned versions are installed.
#
#   scripts/mcp-servers.sh          install (or check) them
#
# The tests find them at .mcp-servers/node_modules/.bin/ (or under SWITCHYARD_MCP_SERVERS_DIR,
# an absolute path, when set). Needs node and npm on PATH.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

EVERYTHING_VERSION=2026.8.31
FILESYSTEM_VERSION=2026.8.31
DIR="${SWITCHYARD_MCP_SERVERS_DIR:-.mcp-servers}"
case "$DIR" in /*) ;; *) DIR="$PWD/$DIR" ;; esac

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "scripts/mcp-servers.sh needs $tool on PATH" >&2; exit 1; }
done

installed() {
  node -e "const p=require(process.argv[1]); process.exit(p.version===process.argv[2]?0:1)" \
    "$DIR/node_modules/$1/package.json" "$2" 2>/dev/null
}

if installed @modelcontextprotocol/server-everything "$EVERYTHING_VERSION" \
  && installed @modelcontextprotocol/server-filesystem "$FILESYSTEM_VERSION"; then
  echo "MCP test servers already installed in $DIR"
  exit 0
fi

mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name":"switchyard-mcp-test-servers","private":true}' > "$DIR/package.json"
npm install --prefix "$DIR" --no-audit --no-fund --save-exact \
  "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
  "@modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION"
echo "MCP test servers installed in $DIR"
