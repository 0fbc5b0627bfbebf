#!/usr/bin/env bash
# Installs what the dashboard's browser test (crates/switchyard-cli/tests/ui_dashboard.rs, SPEC
# R14.11) drives: Debian's Chromium (/usr/bin/chromium, from apt-get when absent) and
# Playwright's driver library `playwright-core` at a pinned version from the npm registry, into
# .browser-test/ (git-ignored). Playwright's own browser download (`npx playwright install`) is
# never used: the test launches /usr/bin/chromium through `executablePath`. Idempotent: does
# nothing when both are there (the install is stamped with its version).
#
#   scripts/browser.sh          install (or check) them
#
# The test finds the library at .browser-test/node_modules/playwright-core (or under
# SWITCHYARD_BROWSER_DIR, an absolute path, when set). Needs node and npm on PATH.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PLAYWRIGHT_CORE_VERSION=1.65.1
DIR="${SWITCHYARD_BROWSER_DIR:-.browser-test}"
case "$DIR" in /*) ;; *) DIR="$PWD/$DIR" ;; esac

if [ ! -x /usr/bin/chromium ]; then
  echo "installing Debian's chromium for the browser test" >&2
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
fi

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "scripts/browser.sh needs $tool on PATH" >&2; exit 1; }
done

stamp="$DIR/installed-playwright-core-$PLAYWRIGHT_CORE_VERSION"
if [ -f "$stamp" ] && [ -f "$DIR/node_modules/playwright-core/package.json" ]; then
  echo "browser test: chromium and playwright-core $PLAYWRIGHT_CORE_VERSION already installed in $DIR"
  exit 0
fi

mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name":"switchyard-browser-test","private":true}' > "$DIR/package.json"
# PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: playwright-core downloads nothing itself, but say so.
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$DIR" --no-audit --no-fund --save-exact \
  "playwright-core@$PLAYWRIGHT_CORE_VERSION"
rm -f "$DIR"/installed-playwright-core-*
touch "$stamp"
echo "browser test: playwright-core $PLAYWRIGHT_CORE_VERSION installed in $DIR"
