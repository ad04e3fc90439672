#!/usr/bin/env bash
# Writes the snapshot and arena-save fuzzers' seeds again (fuzz/corpus_snapshot/,
# fuzz/corpus_arena_save/) with this build of ebt: after a change of the snapshot format the old
# seeds no longer load (docs/snapshots.md, "Versions"). Builds fuzz/make_seeds.cpp against a Release
# build (BUILD_DIR, default build/rel, with libebt.a and scenarios/libebt_scenarios.a built), then
# runs it: the agent and world seeds are the runs fuzz/make_seeds.cpp describes; each arena save is
# made again from its own configuration and frame, so the arena seeds must be readable by the build
# (an arena save's header and configuration do not depend on the snapshot version, so they are).
#
#   bash fuzz/make_seeds.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build="${1:-build/rel}"
out="$(mktemp -d)"
g++ -std=c++20 -O1 -DNDEBUG -Iinclude -I"$build/include" -Iscenarios -Ifuzz fuzz/make_seeds.cpp -o "$out/make_seeds" \
  "$build/scenarios/libebt_scenarios.a" "$build/libebt.a" -ltbb -lpugixml -lpthread
"$out/make_seeds" fuzz
"$out/make_seeds" fuzz fuzz/corpus_arena_save/*.ebtarena
rm -rf "$out"
