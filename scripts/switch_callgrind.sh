#!/usr/bin/env bash
# Instructions and simulated data-cache misses of the sweep's 1 % frame of guard_a, split into the
# ChurnWriter's writes and the World's step, and per switch against a quiet frame
# (docs/benchmarks.md, "The switch on a cold agent"). Repeatable whatever else runs.
#
#   bash scripts/switch_callgrind.sh [BUILD_DIR] [AGENTS] [FRAMES]
#
# BUILD_DIR (build/rel) must hold a Release libebt.a and scenarios/libebt_scenarios.a. Builds
# bench/callgrind/world_cost_driver.cpp against them and runs, each under callgrind with the same
# cache simulation (32 KB L1 data, 1 MiB last level: one core's L2, as "Where the time goes"):
#   world: FRAMES (10) quiet frames of AGENTS (100,000) patrolling agents, World::step collected;
#   sweep: the sweep's own population (half the agents attacking) with AGENTS / 100 switches a
#          frame, the writes and the step collected apart.
# Prints per switch: the writes' instructions and misses, and what the step costs beyond the quiet
# frame (both frames step every agent once), then each part's functions by instructions.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/callgrind_driver.sh
source scripts/callgrind_driver.sh
build="${1:-build/rel}"
agents="${2:-100000}"
frames="${3:-10}"
out="$(mktemp -d)"
driver="$out/world_cost_driver"
ebt_build_callgrind_driver bench/callgrind/world_cost_driver.cpp "$build" "$driver"
cache=(--cache-sim=yes --D1=32768,8,64 --LL=1048576,16,64)
valgrind --tool=callgrind "${cache[@]}" --callgrind-out-file="$out/quiet.cg" --toggle-collect="*measured_world*" \
  "$driver" world "$agents" "$frames" >/dev/null 2>&1
for part in writes step; do
  valgrind --tool=callgrind "${cache[@]}" --callgrind-out-file="$out/$part.cg" --toggle-collect="*measured_churn_$part*" \
    "$driver" sweep "$agents" "$frames" >/dev/null 2>&1
done
python3 - "$out" "$agents" "$frames" <<'PY'
import sys
out, n, frames = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def totals(path):
    events = None
    for line in open(path):
        if line.startswith("events:"): events = line.split()[1:]
        if line.startswith("totals:"):  # (callgrind leaves out trailing zero counts)
            counts = list(map(int, line.split()[1:]))
            return dict(zip(events, counts + [0] * (len(events) - len(counts))))
q, w, s = (totals(f"{out}/{p}.cg") for p in ("quiet", "writes", "step"))
switches = frames * (n // 100)
def l1(t): return t["D1mr"] + t["D1mw"]
def ll(t): return t["DLmr"] + t["DLmw"]
print(f"quiet frame: {q['Ir'] / (frames * n):.1f} instructions, {l1(q) / (frames * n):.2f} L1 data misses per agent-frame")
print(f"writes: {w['Ir'] / switches:.0f} instructions, {l1(w) / switches:.2f} L1 data / {ll(w) / switches:.2f} "
      f"last-level misses per switch")
print(f"step beyond the quiet frame: {(s['Ir'] - q['Ir']) / switches:.0f} instructions, "
      f"{(l1(s) - l1(q)) / switches:.2f} L1 data / {(ll(s) - ll(q)) / switches:.2f} last-level misses per switch")
PY
for part in writes step; do
  echo "-- $part: functions (instructions, L1 data read misses)"
  callgrind_annotate --show=Ir,D1mr "$out/$part.cg" 2>/dev/null | grep -E '^ *[0-9,]+ ' | sed -E 's/\([^)]*%\)//g; s/ \[[^]]*\]$//' | head -16 | cut -c1-150
done
rm -rf "$out"
