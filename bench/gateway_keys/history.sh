#!/usr/bin/env bash
# bench/gateway_keys/history.sh: what a keyed request (its key's budget, its team's budget and an
# RPM limit) adds to `switchyard serve` when the store already holds 0 and 1,000,000 earlier
# requests of that key and team this month (issue 41 "Measure"; SPEC R14.14, R14.17): on SQLite,
# and on PostgreSQL when scripts/postgres.sh's server is up; admitted from leased slices (the
# default) and with one store hold per request (`[serve] admission = "per_request"`).
# N sequential requests (default 2000) on one keep-alive connection, upstream answering at once;
# prints p50/p99 of the whole request and of the direct baseline. No timing is asserted.
# Usage: bench/gateway_keys/history.sh [ROWS...]   (default: 0 1000000)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/gateway_keys
FIX=$ROOT/tests/fixtures/anthropic_text.http
N=${N:-2000}
ROWS=$(IFS=,; echo "${*:-0,1000000}")
cargo build --release -q -p switchyard-cli -p switchyard-store-bench
BIN=$ROOT/target/release/switchyard
WORK=$(mktemp -d)
trap 'kill $UP 2>/dev/null; rm -rf "$WORK"' EXIT
python3 "$HERE/upstream.py" 54402 "$FIX" & UP=$!
sleep 1
PG=()
if pg_isready -q -h 127.0.0.1 -p 54329 2>/dev/null; then
  PG=(--postgres postgres://postgres@127.0.0.1:54329/postgres)
fi
"$ROOT/target/release/switchyard-store-bench" --seed-only --rows "$ROWS" --dir "$WORK" \
  --connections 0 "${PG[@]}" > "$WORK/places"
echo "direct (no gateway):                  $(python3 "$HERE/bench.py" 127.0.0.1:54402 - "$N")"
while read -r rows store; do
  for mode in leased per_request; do
    home=$(mktemp -d "$WORK/h.XXXX")
    printf '[serve]\nadmission = "%s"\n[serve.routes.sonnet]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\nbase_url = "http://127.0.0.1:54402"\n' \
      "$mode" > "$home/c.toml"
    env -i PATH="$PATH" SWITCHYARD_HOME="$home" SWITCHYARD_STORE="$store" \
      ANTHROPIC_API_KEY=sk-ant-bench-0000000000000 \
      "$BIN" --config "$home/c.toml" serve --listen 127.0.0.1:0 2> "$home/err" & S=$!
    for _ in $(seq 100); do grep -q listening "$home/err" && break; sleep 0.1; done
    addr=$(grep -o '127.0.0.1:[0-9]*' "$home/err" | head -1)
    kind=${store%%:*}; [[ $kind == sqlite ]] || kind=postgres
    printf '%-8s %8s rows, %-11s: %s\n' "$kind" "$rows" "$mode" \
      "$(python3 "$HERE/bench.py" "$addr" key_0 "$N")"
    kill "$S"; wait "$S" 2>/dev/null || true
  done
done < "$WORK/places"
