#!/usr/bin/env bash
# scripts/postgres.sh — a real PostgreSQL server for the PostgreSQL task store's tests and for
# trying a shared store (SPEC R13) on one machine. Nothing is mocked: the machine's PostgreSQL
# (Debian's `postgresql` package, installed with apt-get when absent) is initdb'd into a
# scratch folder and listens on 127.0.0.1 only.
#
# Usage: scripts/postgres.sh <command>
#   start     install PostgreSQL if needed, initdb the cluster if needed, start it unless it
#             already answers, wait (<=60 s) until it accepts connections, print its URL
#   stop      stop the server (fast shutdown: clients are disconnected, nothing is lost)
#   restart   stop then start (the tests use it for "a server restart mid-task")
#   status    exit 0 when the server answers, 3 when it does not
#   clean     drop the databases earlier test runs left (named t_*; one in use is left alone)
#   url       print the URL, e.g. postgres://postgres@127.0.0.1:54329/postgres
#
# Environment:
#   SWITCHYARD_PG_PORT  the port (default 54329)
#   SWITCHYARD_PG_DIR   the cluster folder (default ${TMPDIR:-/tmp}/switchyard-postgres-PORT)
#
# The cluster trusts every connection from 127.0.0.1 (no password) and runs with fsync off (a
# machine crash may lose it: delete the folder and start again): it is for tests and local trials
# only. fsync off keeps the tests' many CREATE DATABASEs from flooding the disk that the SQLite
# store's tests fsync on at the same time, and a restart after a crash from syncing every file.
# As root, the server runs as the `postgres` user the package creates (initdb and postgres
# refuse to run as root); as another user, as that user.
set -euo pipefail

port="${SWITCHYARD_PG_PORT:-54329}"
dir="${SWITCHYARD_PG_DIR:-${TMPDIR:-/tmp}/switchyard-postgres-$port}"
url="postgres://postgres@127.0.0.1:$port/postgres"

pg_bin() {
  local found
  for found in /usr/lib/postgresql/*/bin; do
    [ -x "$found/initdb" ] && { echo "$found"; return 0; }
  done
  command -v initdb >/dev/null && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

ensure_installed() {
  pg_bin >/dev/null && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "scripts/postgres.sh: PostgreSQL is not installed; run as root or: sudo apt-get install postgresql" >&2
    exit 1
  fi
  echo "scripts/postgres.sh: installing PostgreSQL from Debian's packages" >&2
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql
  pg_bin >/dev/null || { echo "scripts/postgres.sh: PostgreSQL still not found after apt-get" >&2; exit 1; }
}

# Runs a PostgreSQL program as the server's user.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    # runuser keeps the environment minimal; cd away from folders postgres may not read.
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

answers() {
  local bin
  bin="$(pg_bin)" || return 1
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres
}

start() {
  ensure_installed
  local bin
  bin="$(pg_bin)"
  if answers; then
    echo "$url"
    return 0
  fi
  if [ ! -s "$dir/PG_VERSION" ]; then
    mkdir -p "$dir"
    chmod 700 "$dir"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
    as_owner "$bin/initdb" -D "$dir" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$dir.initdb.log" 2>&1 ||
      { cat "$dir.initdb.log" >&2; exit 1; }
  fi
  as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='$dir' -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >/dev/null ||
    { tail -20 "$dir/server.log" >&2; exit 1; }
  echo "$url"
}

# Drops the test databases (t_LABEL_PID_N, see switchyard_testkit::fresh_postgres_database)
# that earlier runs left; each is a copy of template1 (~7.5 MB), and they add up run after run.
# A database whose test process (PID) is still running belongs to another run in progress and
# is left alone, as is one in use.
clean() {
  local bin name pid
  bin="$(pg_bin)" || return 0
  answers || return 0
  as_owner "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atq \
    -c "SELECT datname FROM pg_database WHERE datname LIKE 't\_%'" |
    while read -r name; do
      pid="${name%_*}"
      pid="${pid##*_}"
      if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
        continue
      fi
      as_owner "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -q \
        -c "DROP DATABASE IF EXISTS \"$name\"" >/dev/null 2>&1 || true
    done
}

stop() {
  local bin
  bin="$(pg_bin)" || return 0
  [ -s "$dir/postmaster.pid" ] || return 0
  as_owner "$bin/pg_ctl" -D "$dir" -m fast -w stop >/dev/null
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  clean) clean ;;
  status) if answers; then echo "$url answers"; else echo "$url does not answer"; exit 3; fi ;;
  url) echo "$url" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
