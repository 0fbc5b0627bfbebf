#!/usr/bin/env bash
# The OTLP receiver of the telemetry tests and benchmark (scripts/otlp-receiver.py), in a venv of
# its own with the official decoders pinned, from PyPI, into .agent-clients/otlp-venv (git-ignored;
# under $SWITCHYARD_AGENT_CLIENTS_DIR when set, as scripts/image.sh does).
#
#   scripts/otlp-receiver.sh install   # makes the venv once; later runs keep it
#   scripts/otlp-receiver.sh python    # prints the venv's python, for the tests
#   scripts/otlp-receiver.sh run ARGS  # runs the receiver (see its --help)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir="${SWITCHYARD_AGENT_CLIENTS_DIR:-.agent-clients}"
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
venv="$dir/otlp-venv"
python="$venv/bin/python"
# opentelemetry-proto 1.45.x decodes OTLP 1.x; grpcio serves the gRPC services; protobuf as the
# two need it. Bumped together, by hand.
packages=(opentelemetry-proto==1.45.2 grpcio==1.85.4 protobuf==7.36.2)

install() {
  local stamp="$venv/.installed"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${packages[*]}" ]; then
    return 0
  fi
  rm -rf "$venv"
  mkdir -p "$dir"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}"
  "$python" -c 'import grpc, opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc'
  echo "${packages[*]}" >"$stamp"
}

case "${1:-}" in
  install) install ;;
  python) echo "$python" ;;
  run) shift; exec "$python" scripts/otlp-receiver.py "$@" ;;
  *) echo "usage: scripts/otlp-receiver.sh install|python|run ARGS" >&2; exit 2 ;;
esac
