#!/usr/bin/env bash
# Build and run the arena sample (the README's main command): 10,000 guards
# running the seeds' guard tree on a 2D arena for 60 simulated seconds.
#
#   bash scripts/run.sh [ARGS...]     # ARGS are passed to ebt_arena
#   bash scripts/run.sh --help        # its options (--agents, --mode, --svg...)
#
# Installs missing Debian packages, configures a Release build in
# build/release (EBT_BUILD_DIR overrides; EBT_CMAKE_ARGS adds cmake
# arguments), builds only ebt_arena and runs it. Progress and build
# output go to stderr; stdout is the sample's own output.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/deps.sh
source scripts/deps.sh

build_dir="${EBT_BUILD_DIR:-build/release}"
jobs="${EBT_JOBS:-$(ebt_jobs)}"
read -r -a extra_cmake_args <<<"${EBT_CMAKE_ARGS:-}"

ebt_ensure_deps

ebt_log "configuring $build_dir (Release)"
# Same option baseline as scripts/test.sh, so both can share build/release.
cmake -S . -B "$build_dir" \
  -DCMAKE_BUILD_TYPE=Release \
  -DEBT_BUILD_TESTS=ON \
  -DEBT_BUILD_SAMPLES=ON \
  -DEBT_BUILD_BENCH=ON \
  -DEBT_WARNINGS_AS_ERRORS=OFF \
  -DEBT_SANITIZE= \
  -DEBT_LARGE_TESTS=OFF \
  "${extra_cmake_args[@]}" >&2

ebt_log "building ebt_arena"
cmake --build "$build_dir" --target ebt_arena --parallel "$jobs" >&2

exe="$build_dir/bin/ebt_arena"
ebt_log "running $exe $*"
exec "$exe" "$@"
