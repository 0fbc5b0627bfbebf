#!/usr/bin/env bash
# The telemetry benchmark (SPEC R14.13; issue 45): what exporting spans costs a request, and
# what a dead or hung collector costs it.
#
#   bench/telemetry/run.sh [--debug] [--requests N] [--rounds N]
#
# Builds `switchyard` (release unless --debug), installs the OTLP receiver's venv
# (scripts/otlp-receiver.sh), then runs bench/telemetry/run.py: a local upstream answering a
# short Anthropic stream at once, and `switchyard serve` four ways in interleaved rounds —
# telemetry off, exporting to a live receiver, to a dead collector (nothing listens), and to a
# hung one (it takes exports and never answers). Prints p50/p90/p99 of sequential requests per
# way and writes bench/out/telemetry-results.md. Asserts no timing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

profile=release
pass=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --debug) profile=debug; shift ;;
    --requests|--rounds) pass+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench/telemetry/run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [[ "$profile" == release ]]; then
  cargo build --release -p switchyard-cli
else
  cargo build -p switchyard-cli
fi
scripts/otlp-receiver.sh install
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
exec python3 bench/telemetry/run.py --cli "$target_dir/$profile/switchyard" \
  --receiver-python "$(scripts/otlp-receiver.sh python)" "${pass[@]}"
