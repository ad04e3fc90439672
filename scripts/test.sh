#!/usr/bin/env bash
# Build everything and run the test suite (the README's test command).
#
#   bash scripts/test.sh
#
# Environment (all optional):
#   EBT_BUILD_DIR    build directory           (default: build/release)
#   EBT_BUILD_TYPE   CMAKE_BUILD_TYPE          (default: Release)
#   EBT_CMAKE_ARGS   extra cmake arguments, whitespace-separated,
#                    e.g. "-DEBT_SANITIZE=address,undefined -DEBT_WARNINGS_AS_ERRORS=ON"
#   EBT_CTEST_ARGS   extra ctest arguments, e.g. "-L unit" or "-LE install"
#   EBT_JOBS         parallel build/test jobs  (default: nproc)
#
# Every run configures the ebt options explicitly (defaults first, then
# EBT_CMAKE_ARGS; ebt_configure in scripts/deps.sh), so a build directory never
# keeps options from an earlier run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/deps.sh
source scripts/deps.sh

build_dir="${EBT_BUILD_DIR:-build/release}"
build_type="${EBT_BUILD_TYPE:-Release}"
jobs="${EBT_JOBS:-$(ebt_jobs)}"
read -r -a extra_ctest_args <<<"${EBT_CTEST_ARGS:-}"

ebt_ensure_deps

ebt_configure "$build_dir" "$build_type"

ebt_log "building $build_dir with $jobs jobs"
cmake --build "$build_dir" --parallel "$jobs"

ebt_log "testing $build_dir ${EBT_CTEST_ARGS:-}"
ctest --test-dir "$build_dir" --output-on-failure --parallel "$jobs" "${extra_ctest_args[@]}"

ebt_log "all tests passed ($build_dir)"
