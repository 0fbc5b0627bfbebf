#!/usr/bin/env bash
# The gateway benchmark, one command (bench/README.md, "Gateways"; issue 25):
#
#   bench/gateway/run.sh [--peers] [--rounds N] [--scale X] [--only litellm,tensorzero]
#                        [--litellm-workers 1,2] [--lanes 'c=1000,fault']
#
# Builds `switchyard` and `switchyard-bench` (release), with --peers installs LiteLLM 1.108.7
# (`litellm[proxy]`) and TensorZero (the `tensorzero` wheel, which embeds its Rust gateway) into
# the git-ignored bench/.venv-peers, then runs bench/gateway/run.py: the paced upstream,
# `switchyard serve --no-auth`, the peers whose venv exists, and a direct baseline, every lane
# in interleaved rounds; prints the table and writes bench/out/gateway-results.{md,json}.
# Fails only when Switchyard cannot start (a peer that cannot start is a note under the
# tables); an incomplete answer is counted as an error of its kind, not a failure; asserts no
# timing. --litellm-workers picks LiteLLM's runs (1, 2 or 1,2); --lanes runs only the lanes
# whose names contain one of the given parts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

peers=0
pass=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --peers) peers=1; shift ;;
    --rounds|--scale|--only|--litellm-workers|--lanes) pass+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "bench/gateway/run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

echo "== building switchyard and switchyard-bench (release)"
cargo build --release -p switchyard-cli -p switchyard-bench
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"

if [[ "$peers" == 1 ]]; then
  echo "== installing LiteLLM and TensorZero (bench/.venv-peers)"
  [[ -x bench/.venv-peers/bin/python ]] || python3 -m venv bench/.venv-peers
  bench/.venv-peers/bin/pip install --quiet --disable-pip-version-check \
    'litellm[proxy]==1.108.7' 'tensorzero==2026.6.0'
fi

ulimit -n 8192 2>/dev/null || true
echo "== running"
exec python3 bench/gateway/run.py --bench-bin "$target_dir/release/switchyard-bench" \
  --cli "$target_dir/release/switchyard" --peers bench/.venv-peers "${pass[@]}"
