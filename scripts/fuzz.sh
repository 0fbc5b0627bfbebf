#!/usr/bin/env bash
# Fuzzing (issue 27): scripts/fuzz.sh [TARGET|all] [SECONDS]
#
# Builds the libFuzzer targets of fuzz/ (nightly, cargo-fuzz), then runs TARGET (default: every
# target, one after another) for SECONDS each (default 60) on its corpus fuzz/corpus/TARGET
# (seeded from tests/fixtures, tests/cases and fuzz/seeds by fuzz/seed.py when empty), with the
# format's dictionary from fuzz/dict, and per input a memory bound (-rss_limit_mb,
# -malloc_limit_mb) and a time bound (-timeout). After the run the corpus is minimised
# (cargo fuzz cmin) and the run's figures (executions, cov, ft, corpus size, seconds, result)
# are appended to fuzz/RUNS.tsv, so each target's total time accumulates across sessions
# (`scripts/fuzz.sh --totals` sums it).
#
# A crash, timeout or memory-limit input is copied to tests/fuzz/TARGET/ (the regression inputs
# `cargo test` replays: crates/*/tests/fuzz_regressions.rs), and the script exits 1 naming it;
# write its expected outcome next to it and fix the parser. Every run (the smoke too) also
# reads tests/fuzz/TARGET/ as a second corpus, so each regression input keeps its name there and
# is replayed through the target's full invariant.
#
# Environment:
#   FUZZ_SMOKE=1       CI's run: every target built, its committed corpus replayed once (no new
#                      inputs, SECONDS ignored), no minimising, nothing recorded in fuzz/RUNS.tsv.
#   FUZZ_SANITIZER=…   none (default: the workspace forbids unsafe code, and the build is ~3x
#                      faster to run without ASan) or address.
#   FUZZ_JOBS=N        cargo's build jobs (default: cargo's own).
#   CARGO_TARGET_DIR   where the fuzz build goes (default: ~/.cache/switchyard/fuzz-target, outside
#                      the checkout like scripts/local-model.sh's build cache, so a fresh clone
#                      reuses the compiled dependencies and rebuilds only Switchyard's crates).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CARGO_FUZZ_VERSION=0.13.1
RSS_MB=2048
MALLOC_MB=1024
TIMEOUT_S=10
RUNS=fuzz/RUNS.tsv
# The committed corpus stays small: after cmin, at most this many KiB per target, smallest
# inputs first (the repo keeps a few MB of corpora in all).
CORPUS_KB=200

if [[ "${1:-}" == "--totals" ]]; then
  # Seconds and executions per target over every recorded run.
  awk -F'\t' 'NR > 1 { s[$2] += $3; e[$2] += $4 } END { for (t in s) printf "%-22s %7d s %12d execs\n", t, s[t], e[t] }' "$RUNS" | sort
  exit 0
fi

target_arg="${1:-all}"
seconds="${2:-60}"
sanitizer="${FUZZ_SANITIZER:-none}"

command -v cargo >/dev/null || { echo "fuzz.sh needs cargo" >&2; exit 1; }
if ! cargo +nightly --version >/dev/null 2>&1; then
  command -v rustup >/dev/null || { echo "fuzz.sh needs the nightly toolchain (rustup)" >&2; exit 1; }
  echo "fuzz.sh: installing the nightly toolchain" >&2
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
  echo "fuzz.sh: installing cargo-fuzz $CARGO_FUZZ_VERSION from crates.io" >&2
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

mapfile -t all_targets < <(sed -n 's/^name = "\([a-z_]*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^switchyard-fuzz$')
if [[ "$target_arg" == all ]]; then
  targets=("${all_targets[@]}")
else
  printf '%s\n' "${all_targets[@]}" | grep -qx "$target_arg" || {
    echo "fuzz.sh: no target $target_arg; the targets: ${all_targets[*]}" >&2
    exit 1
  }
  targets=("$target_arg")
fi

# The dictionary of each target's format.
dict_of() {
  case "$1" in
    sse) echo sse ;;
    ndjson) echo ndjson ;;
    eventstream | eventstream_raw | map_bedrock) echo eventstream ;;
    fast_json) echo json ;;
    map_*) echo mapper ;;
    retry_after) echo retry_after ;;
    error_body) echo error_body ;;
    ingress_*) echo ingress ;;
    config_toml | models_toml) echo toml ;;
    mcp_settings) echo mcp ;;
    task_import) echo task_import ;;
    signin_file) echo signin ;;
    serve_headers) echo headers ;;
    websocket_messages) echo ingress ;;
  esac
}

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${SWITCHYARD_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}/fuzz-target}"
build=(cargo +nightly fuzz build --release --debug-assertions --sanitizer "$sanitizer")
[[ -n "${FUZZ_JOBS:-}" ]] && export CARGO_BUILD_JOBS="$FUZZ_JOBS" # cargo fuzz build has no --jobs
echo "fuzz.sh: building the targets (${build[*]})" >&2
if [[ "$target_arg" == all ]]; then "${build[@]}"; else "${build[@]}" "$target_arg"; fi

[[ -f "$RUNS" ]] || printf 'date\ttarget\tseconds\texecs\tcov\tft\tcorpus_files\tcorpus_bytes\tresult\tsanitizer\n' >"$RUNS"
failed=()
for t in "${targets[@]}"; do
  corpus="fuzz/corpus/$t"
  mkdir -p "$corpus" "fuzz/artifacts/$t"
  [[ -n "$(ls -A "$corpus")" ]] || python3 fuzz/seed.py "$t" >&2
  log="$(mktemp)"
  before="$(ls "fuzz/artifacts/$t" | wc -l)"
  start=$(date +%s)
  set +e
  # The smoke replays the committed corpus and stops (-runs=0: no new inputs), so CI is the same
  # on every run; finding new inputs is the long runs' job.
  if [[ -n "${FUZZ_SMOKE:-}" ]]; then length=(-runs=0); else length=(-max_total_time="$seconds"); fi
  # The regression inputs of tests/fuzz/TARGET are read too, every run: the corpus is
  # minimised (cmin renames and drops inputs), so a named input is kept there, not here.
  corpora=("$corpus")
  [[ -d "tests/fuzz/$t" ]] && corpora+=("tests/fuzz/$t")
  cargo +nightly fuzz run --release --debug-assertions --sanitizer "$sanitizer" "$t" "${corpora[@]}" -- \
    "${length[@]}" -rss_limit_mb="$RSS_MB" -malloc_limit_mb="$MALLOC_MB" \
    -timeout="$TIMEOUT_S" -dict="fuzz/dict/$(dict_of "$t").dict" -print_final_stats=1 \
    -artifact_prefix="fuzz/artifacts/$t/" >"$log" 2>&1
  rc=$?
  set -e
  took=$(($(date +%s) - start))
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  final="$(grep -E '^#[0-9]+' "$log" | tail -1)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$final")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$final")"
  result=ok
  if ((rc != 0)) || (($(ls "fuzz/artifacts/$t" | wc -l) > before)); then
    result=failed
    failed+=("$t")
    mkdir -p "tests/fuzz/$t"
    for a in fuzz/artifacts/"$t"/*; do
      [[ -f "$a" ]] && cp -n "$a" "tests/fuzz/$t/"
    done
    grep -E 'panicked|ERROR: libFuzzer|SUMMARY' "$log" | head -5 >&2 || true
    echo "fuzz.sh: $t failed; its input is in tests/fuzz/$t/ (log: $log)" >&2
  fi
  if [[ -z "${FUZZ_SMOKE:-}" ]]; then
    if [[ "$result" == ok ]]; then
      cargo +nightly fuzz cmin --release --debug-assertions --sanitizer "$sanitizer" "$t" "$corpus" \
        -- -rss_limit_mb="$RSS_MB" -timeout="$TIMEOUT_S" >/dev/null 2>&1 ||
        echo "fuzz.sh: cmin of $t failed; the corpus is left as it was" >&2
    fi
    python3 - "$corpus" "$CORPUS_KB" <<'PY'
import os, sys
d, budget = sys.argv[1], int(sys.argv[2]) * 1024
files = sorted((os.path.getsize(os.path.join(d, f)), f) for f in os.listdir(d))
used = 0
for size, f in files:
    used += size
    if used > budget:
        os.remove(os.path.join(d, f))
PY
    files="$(ls "$corpus" | wc -l)"
    bytes="$(find "$corpus" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$took" \
      "${execs:-0}" "${cov:-0}" "${ft:-0}" "$files" "$bytes" "$result" "$sanitizer" >>"$RUNS"
  fi
  echo "fuzz.sh: $t: ${took}s, ${execs:-0} execs, cov ${cov:-?}, ft ${ft:-?}, $result" >&2
  [[ "$result" == ok ]] && rm -f "$log"
done

if ((${#failed[@]})); then
  echo "fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
