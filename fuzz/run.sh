#!/usr/bin/env bash
# Fuzz the XML loader (and saver) for a bounded time.
#
#   bash fuzz/run.sh [SECONDS]        # default 60
#
# Builds fuzz/xml_fuzzer.cpp with clang, libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer
# in its own build directory, then runs it on a copy of the seed corpus (fuzz/corpus/ is never
# modified) for SECONDS. Exits non-zero on any crash, sanitizer report, leak, timeout (> 10 s for
# one input), out-of-memory, or failed save/load round trip; the input that caused it is written to
# <build>/artifacts/ and printed.
#
# Environment (optional): EBT_FUZZ_BUILD_DIR (default build/fuzz), EBT_JOBS (build jobs).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/deps.sh
source scripts/deps.sh

seconds="${1:-60}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: bash fuzz/run.sh [SECONDS]" >&2
  exit 2
fi
build_dir="${EBT_FUZZ_BUILD_DIR:-build/fuzz}"
jobs="${EBT_JOBS:-$(ebt_jobs)}"

ebt_ensure_deps
# clang and its runtime libraries (libFuzzer, the sanitizers).
ebt_ensure_packages clang libclang-rt-dev

# A build directory configured with another compiler cannot be reused.
if [[ -f "$build_dir/CMakeCache.txt" ]] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' "$build_dir/CMakeCache.txt"; then
  ebt_log "removing $build_dir (configured with another compiler)"
  rm -rf "$build_dir"
fi

ebt_log "configuring $build_dir (clang, libFuzzer, address+undefined sanitizers)"
cmake -S . -B "$build_dir" \
  -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DEBT_BUILD_FUZZ=ON \
  -DEBT_SANITIZE=address,undefined \
  -DEBT_BUILD_TESTS=OFF \
  -DEBT_BUILD_SAMPLES=OFF \
  -DEBT_BUILD_BENCH=OFF \
  -DEBT_INSTALL=OFF \
  -DEBT_WARNINGS_AS_ERRORS=OFF >&2

ebt_log "building ebt_fuzz_xml with $jobs jobs"
cmake --build "$build_dir" --target ebt_fuzz_xml --parallel "$jobs" >&2

work="$build_dir/corpus"
artifacts="$build_dir/artifacts"
rm -rf "$work"
mkdir -p "$work" "$artifacts"
cp fuzz/corpus/* "$work"/

ebt_log "fuzzing for ${seconds}s (corpus: $(ls fuzz/corpus | wc -l) seeds)"
# libFuzzer's progress lines (thousands in a minute) go to a log file; its tail is printed at the
# end, and the whole log when something failed.
log="$build_dir/fuzz.log"
rc=0
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}" \
  "$build_dir/bin/ebt_fuzz_xml" \
    -max_total_time="$seconds" \
    -timeout=10 \
    -rss_limit_mb=2048 \
    -max_len=16384 \
    -dict=fuzz/xml.dict \
    -artifact_prefix="$artifacts/" \
    -print_final_stats=1 \
    "$work" >"$log" 2>&1 || rc=$?

if ((rc != 0)); then
  cat "$log" >&2
  ebt_log "FUZZING FAILED (exit $rc); inputs that failed:"
  for f in "$artifacts"/*; do
    [[ -e "$f" ]] || continue
    echo "--- $f" >&2
    head -c 4000 "$f" >&2 || true
    echo >&2
  done
  exit "$rc"
fi
tail -n 15 "$log" >&2
ebt_log "fuzzing passed: no crash, sanitizer report or failed round trip in ${seconds}s (full log: $log)"
