#!/usr/bin/env bash
# Instructions and simulated cache misses per agent-frame of the World's loop against the same agents
# ticked directly (docs/benchmarks.md, "The World's own cost"). Repeatable whatever else runs.
#
#   bash scripts/world_cost_callgrind.sh [BUILD_DIR] [AGENTS] [TREE]
#
# TREE is guard_a (the default) or wide_K, the sweep's wide tree with K guarded branches (wide_64:
# docs/benchmarks.md, "The wide tree's hot line"). With EBT_QUIET_ONLY=1 the 1 % change part is left
# out (it is the longest under valgrind).
#
# BUILD_DIR (build/rel) must hold a Release libebt.a and scenarios/libebt_scenarios.a (build the
# target ebt_bench_world_cost there first). Builds bench/callgrind/world_cost_driver.cpp against it,
# then prints, for the World and for direct ticks:
#   callgrind: instructions per agent-frame of 50 measured frames (AGENTS agents, 10,000 by default);
#   cachegrind: instructions, L1 data misses and last-level misses per agent-frame, as the difference
#   between a run with 20 frames and one with none (so that creating the agents does not count);
#   1 % change (the driver's churn mode, AGENTS / 100 guard switches a frame): callgrind with its cache
#   simulation, collecting the writes and the World's step apart over 20 frames; per switch, the
#   writes' cost and what the step costs more than the same frame's quiet agent-frames would.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/callgrind_driver.sh
source scripts/callgrind_driver.sh
build="${1:-build/rel}"
agents="${2:-10000}"
tree="${3:-guard_a}"
out="$(mktemp -d)"
driver="$out/world_cost_driver"
ebt_build_callgrind_driver bench/callgrind/world_cost_driver.cpp "$build" "$driver"
for mode in world direct; do
  valgrind --tool=callgrind --callgrind-out-file="$out/$mode.cg" --toggle-collect="*measured_$mode*" \
    "$driver" "$mode" "$agents" 50 "$tree" >/dev/null 2>&1
  ir=$(awk '/^totals:/ {print $2}' "$out/$mode.cg")
  echo "callgrind  $mode: $(echo "scale=1; $ir / (50 * $agents)" | bc) instructions per agent-frame"
done
for mode in world direct; do
  for frames in 0 20; do
    valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file="$out/$mode.$frames.cachegrind" \
      "$driver" "$mode" "$agents" "$frames" "$tree" >/dev/null 2>&1
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
open(f"{sys.argv[1]}.per_frame", "w").write(f"{per['D1mr'] + per['D1mw']}\n")
print(f"cachegrind {mode}: {per['Ir']:.1f} instructions, {per['D1mr'] + per['D1mw']:.2f} L1 data misses, "
      f"{per['DLmr'] + per['DLmw']:.2f} last-level misses per agent-frame")
PY
done
if [[ "${EBT_QUIET_ONLY:-0}" == 1 ]]; then rm -rf "$out"; exit 0; fi
quiet_ir=$(awk '/^totals:/ {print $2}' "$out/world.cg")
for part in writes step; do
  valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$out/churn.$part.cg" \
    --toggle-collect="*measured_churn_$part*" "$driver" churn "$agents" 20 "$tree" >/dev/null 2>&1
done
python3 - "$out" "$agents" "$quiet_ir" <<'PY'
import sys
out, n, quiet_ir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
quiet_d1 = float(open(f"{out}/world.0.cachegrind.per_frame").read())
def totals(path):
    events = None
    for line in open(path):
        if line.startswith("events:"): events = line.split()[1:]
        if line.startswith("totals:"):  # (callgrind leaves out trailing zero counts)
            counts = list(map(int, line.split()[1:]))
            return dict(zip(events, counts + [0] * (len(events) - len(counts))))
frames, switches = 20, n // 100
w, s = totals(f"{out}/churn.writes.cg"), totals(f"{out}/churn.step.cg")
def misses(t): return t["D1mr"] + t["D1mw"], t["DLmr"] + t["DLmw"]
print(f"churn writes: {w['Ir'] / (frames * switches):.0f} instructions, "
      f"{misses(w)[0] / (frames * switches):.2f} L1 data / {misses(w)[1] / (frames * switches):.2f} last-level misses per switch")
print(f"churn step: {s['Ir'] / (frames * n):.1f} instructions, {misses(s)[0] / (frames * n):.2f} L1 data / "
      f"{misses(s)[1] / (frames * n):.2f} last-level misses per agent-frame")
quiet = quiet_ir / (50 * n)
print(f"churn step beyond {n - switches} quiet agent-frames ({quiet:.1f} instructions each): "
      f"{(s['Ir'] / frames - quiet * (n - switches)) / switches:.0f} instructions, "
      f"{(misses(s)[0] / frames - quiet_d1 * (n - switches)) / switches:.1f} L1 data misses per switch")
PY
rm -rf "$out"
