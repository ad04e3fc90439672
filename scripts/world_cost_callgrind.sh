#!/usr/bin/env bash
# Instructions and simulated cache misses per agent-frame of the World's loop against the same agents
# ticked directly (docs/benchmarks.md, "The World's own cost"). Repeatable whatever else runs.
#
#   bash scripts/world_cost_callgrind.sh [BUILD_DIR] [AGENTS]
#
# BUILD_DIR (build/rel) must hold a Release libebt.a and scenarios/libebt_scenarios.a (build the
# target ebt_bench_world_cost there first). Builds bench/callgrind/world_cost_driver.cpp against it,
# then prints, for the World and for direct ticks:
#   callgrind: instructions per agent-frame of 50 measured frames (AGENTS agents, 10,000 by default);
#   cachegrind: instructions, L1 data misses and last-level misses per agent-frame, as the difference
#   between a run with 20 frames and one with none (so that creating the agents does not count).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build="${1:-build/rel}"
agents="${2:-10000}"
out="$(mktemp -d)"
driver="$out/world_cost_driver"
# The library's link dependencies (as CMakeLists.txt links them).
g++ -std=c++20 -O2 -DNDEBUG -Iinclude -I"$build/include" -Iscenarios bench/callgrind/world_cost_driver.cpp -o "$driver" \
  "$build/scenarios/libebt_scenarios.a" "$build/libebt.a" -ltbb -lpugixml -lpthread
for mode in world direct; do
  valgrind --tool=callgrind --callgrind-out-file="$out/$mode.cg" --toggle-collect="*measured_$mode*" \
    "$driver" "$mode" "$agents" 50 >/dev/null 2>&1
  ir=$(awk '/^totals:/ {print $2}' "$out/$mode.cg")
  echo "callgrind  $mode: $(echo "scale=1; $ir / (50 * $agents)" | bc) instructions per agent-frame"
done
for mode in world direct; do
  for frames in 0 20; do
    valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$out/$mode.$frames.cachegrind" \
      "$driver" "$mode" "$agents" "$frames" >/dev/null 2>&1
  done
  python3 - "$out/$mode.0.cachegrind" "$out/$mode.20.cachegrind" "$mode" "$agents" <<'PY'
import sys
def summary(path):
    events = None
    for line in open(path):
        if line.startswith("events:"): events = line.split()[1:]
        if line.startswith("summary:"): return dict(zip(events, map(int, line.split()[1:])))
none, some, mode, n = summary(sys.argv[1]), summary(sys.argv[2]), sys.argv[3], int(sys.argv[4])
per = {k: (some[k] - none[k]) / (20 * n) for k in none}
print(f"cachegrind {mode}: {per['Ir']:.1f} instructions, {per['D1mr'] + per['D1mw']:.2f} L1 data misses, "
      f"{per['DLmr'] + per['DLmw']:.2f} last-level misses per agent-frame")
PY
done
rm -rf "$out"
