#!/usr/bin/env bash
# Fuzz every libFuzzer target in fuzz/ for a bounded time: the XML loader (and saver), the trace
# log reader, the recording reader, the snapshot reader and the arena's save-file reader.
#
#   bash fuzz/run.sh [SECONDS]        # default 60, split evenly between the targets (at least 1 s each)
#
# Builds each fuzz/<name>_fuzzer.cpp (target ebt_fuzz_<name>) with clang, libFuzzer, AddressSanitizer
# and UndefinedBehaviorSanitizer in its own build directory, then runs each on a copy of its seed
# corpus (fuzz/corpus/ for xml, fuzz/corpus_<name>/ for the others; never modified), with
# fuzz/<name>.dict when there is one. Exits non-zero on any crash, sanitizer report, leak, timeout
# (> 10 s for one input), out-of-memory, or failed check of a target (the XML save/load round trip,
# the trace log reader's records); the input that caused it is written to <build>/artifacts/<name>/
# and printed. Every target runs even when an earlier one failed.
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
  -DEBT_BUILD_TOOLS=OFF \
  -DEBT_BUILD_BENCH=OFF \
  -DEBT_INSTALL=OFF \
  -DEBT_WARNINGS_AS_ERRORS=OFF >&2

targets=()
for source in fuzz/*_fuzzer.cpp; do
  name="$(basename "$source" _fuzzer.cpp)"
  targets+=("$name")
done
per_target=$((seconds / ${#targets[@]}))
((per_target >= 1)) || per_target=1

ebt_log "building ${targets[*]/#/ebt_fuzz_} with $jobs jobs"
cmake --build "$build_dir" --target "${targets[@]/#/ebt_fuzz_}" --parallel "$jobs" >&2

failed=()
for name in "${targets[@]}"; do
  seeds="fuzz/corpus_$name"
  [[ "$name" == xml ]] && seeds="fuzz/corpus"
  work="$build_dir/corpus/$name"
  artifacts="$build_dir/artifacts/$name"
  rm -rf "$work"
  mkdir -p "$work" "$artifacts"
  cp "$seeds"/* "$work"/
  dict=()
  [[ -f "fuzz/$name.dict" ]] && dict=(-dict="fuzz/$name.dict")

  ebt_log "fuzzing ebt_fuzz_$name for ${per_target}s (corpus: $(ls "$seeds" | wc -l) seeds)"
  # libFuzzer's progress lines (thousands in a minute) go to a log file; its tail is printed at the
  # end, and the whole log when something failed.
  log="$build_dir/fuzz_$name.log"
  rc=0
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}" \
    "$build_dir/bin/ebt_fuzz_$name" \
      -max_total_time="$per_target" \
      -timeout=10 \
      -rss_limit_mb=2048 \
      -max_len=16384 \
      "${dict[@]}" \
      -artifact_prefix="$artifacts/" \
      -print_final_stats=1 \
      "$work" >"$log" 2>&1 || rc=$?

  if ((rc != 0)); then
    cat "$log" >&2
    ebt_log "FUZZING ebt_fuzz_$name FAILED (exit $rc); inputs that failed:"
    for f in "$artifacts"/*; do
      [[ -e "$f" ]] || continue
      echo "--- $f" >&2
      if [[ "$name" == xml ]]; then head -c 4000 "$f" >&2 || true; echo >&2
      else head -c 1000 "$f" | od -A d -t x1 >&2 || true; fi
    done
    failed+=("$name")
    continue
  fi
  tail -n 15 "$log" >&2
  ebt_log "ebt_fuzz_$name passed: no crash, sanitizer report or failed check in ${per_target}s (full log: $log)"
done

if ((${#failed[@]} > 0)); then
  ebt_log "FUZZING FAILED: ${failed[*]}"
  exit 1
fi
ebt_log "fuzzing passed: ${targets[*]}"
