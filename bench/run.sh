#!/usr/bin/env bash
# The Switchyard benchmark, one command (bench/README.md):
#
#   bench/run.sh [--size full|tiny] [--rounds N] [--release|--debug]
#   bench/run.sh --gateway [--peers] [--rounds N] [--scale X]   (bench/gateway/run.sh)
#
# Builds Switchyard (release for `full`, the dev profile for the `tiny` smoke run unless
# --release), installs the official SDKs into git-ignored folders (bench/clients/node/node_modules
# from package-lock.json, bench/.venv from clients/python/requirements.txt), then runs
# bench/run.py: throughput against the Node and Python SDKs and curl, time to first token,
# N concurrent streams, and the SSE decoder micro-benchmark. The tables are written to
# bench/out/results-SIZE.md. Fails if any client saw different content; asserts no timing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ "${1:-}" == --gateway ]]; then
  shift
  exec bench/gateway/run.sh "$@"
fi

size=full
rounds=()
profile=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --size) size="$2"; shift 2 ;;
    --size=*) size="${1#--size=}"; shift ;;
    --rounds) rounds=(--rounds "$2"); shift 2 ;;
    --release) profile=release; shift ;;
    --debug) profile=dev; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench/run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$size" in full|tiny) ;; *) echo "bench/run.sh: --size is full or tiny" >&2; exit 2 ;; esac
[[ -n "$profile" ]] || { [[ "$size" == full ]] && profile=release || profile=dev; }

for tool in cargo python3 node npm curl; do
  command -v "$tool" >/dev/null || { echo "bench/run.sh needs $tool on PATH" >&2; exit 1; }
done

echo "== building switchyard and switchyard-bench ($profile profile)"
if [[ "$profile" == dev ]]; then
  # The flags of scripts/test.sh, so that after the tests (as in CI) only this package builds.
  cargo build --workspace --all-targets
else
  cargo build --profile "$profile" -p switchyard-cli -p switchyard-bench
fi
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
out_dir="$target_dir/$([[ "$profile" == dev ]] && echo debug || echo "$profile")"

echo "== installing the Node SDKs (bench/clients/node)"
if ! cmp -s bench/clients/node/package-lock.json bench/clients/node/node_modules/.bench-installed 2>/dev/null; then
  (cd bench/clients/node && npm ci --no-audit --no-fund --loglevel=error)
  cp bench/clients/node/package-lock.json bench/clients/node/node_modules/.bench-installed
fi

echo "== installing the Python SDKs (bench/.venv)"
if [[ ! -x bench/.venv/bin/python ]]; then
  python3 -m venv bench/.venv
fi
if ! cmp -s bench/clients/python/requirements.txt bench/.venv/.requirements.txt; then
  bench/.venv/bin/pip install --quiet --disable-pip-version-check -r bench/clients/python/requirements.txt
  cp bench/clients/python/requirements.txt bench/.venv/.requirements.txt
fi

# Two processes of ~1,000 sockets each for the concurrency run.
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

echo "== running"
exec python3 bench/run.py --size "$size" --profile "$profile" "${rounds[@]}" \
  --bench-bin "$out_dir/switchyard-bench" --cli "$out_dir/switchyard" \
  --python bench/.venv/bin/python --command "bench/run.sh --size $size${rounds:+ ${rounds[*]}}"
