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

ebt_ensure_deps

# The same configure as scripts/test.sh (scripts/deps.sh), so both can share build/release.
ebt_configure "$build_dir" Release >&2

ebt_log "building ebt_arena"
cmake --build "$build_dir" --target ebt_arena --parallel "$jobs" >&2

exe="$build_dir/bin/ebt_arena"
ebt_log "running $exe $*"
exec "$exe" "$@"
