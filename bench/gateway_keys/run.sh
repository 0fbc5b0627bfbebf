#!/usr/bin/env bash
# bench/gateway_keys/run.sh: what client keys, a budget and an RPM limit add per request to
# `switchyard serve` (SPEC R14.6, R14.7; issue 24 "Measure"), on SQLite and on PostgreSQL (the
# scratch server of scripts/postgres.sh, 127.0.0.1:54329): N sequential requests (default 300)
# on one keep-alive connection to an upstream that answers at once; p50/p99. BIN=... for a
# release build. Results: bench/README.md, "Gateway: client keys, budgets and RPM per request".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/target/debug/switchyard}
HERE=$ROOT/bench/gateway_keys
WORK=$(mktemp -d)
FIX=$ROOT/tests/fixtures/anthropic_text.http
N=${N:-300}
python3 $HERE/upstream.py 54401 $FIX & UP=$!
sleep 1
scenario() { # name store keyargs(or "none")
  local name=$1 store=$2 keyargs=$3
  local home; home=$(mktemp -d $WORK/h.XXXX)
  printf '[serve.routes.sonnet]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\nbase_url = "http://127.0.0.1:54401"\n' > $home/c.toml
  local key=-
  if [ "$keyargs" != none ]; then
    key=$(env -i PATH=$PATH SWITCHYARD_HOME=$home SWITCHYARD_STORE=$store $BIN keys create --name b $keyargs)
  fi
  env -i PATH=$PATH SWITCHYARD_HOME=$home SWITCHYARD_STORE=$store ANTHROPIC_API_KEY=sk-ant-bench-0000000000000 \
    $BIN --config $home/c.toml serve --listen 127.0.0.1:0 2> $home/err & local S=$!
  for i in $(seq 50); do grep -q listening $home/err && break; sleep 0.1; done
  local addr; addr=$(grep -o '127.0.0.1:[0-9]*' $home/err | head -1)
  echo -n "$name: "; python3 $HERE/bench.py $addr "$key" $N
  kill $S; wait $S 2>/dev/null
}
D=$(mktemp -d $WORK/d.XXXX)
scenario "sqlite, no keys          " sqlite:$D/a.db none
scenario "sqlite, key              " sqlite:$D/b.db ""
scenario "sqlite, key+budget+rpm   " sqlite:$D/c.db "--budget 1000/day --rpm 100000"
PG=postgres://postgres@127.0.0.1:54329
for db in teams_bench_a teams_bench_b teams_bench_c; do psql -q -h 127.0.0.1 -p 54329 -U postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null; done
scenario "postgres, no keys        " $PG/teams_bench_a none
scenario "postgres, key            " $PG/teams_bench_b ""
scenario "postgres, key+budget+rpm " $PG/teams_bench_c "--budget 1000/day --rpm 100000"
kill $UP
rm -rf "$WORK"
