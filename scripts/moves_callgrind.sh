#!/usr/bin/env bash
# Instructions per completed latent move in the sweep's guard_b world, split into the parts of a
# move (docs/benchmarks.md, "Where the time goes" and the passes after it).
# Repeatable whatever else runs.
#
#   bash scripts/moves_callgrind.sh [BUILD_DIR] [AGENTS] [MODE]
#
# BUILD_DIR (build/rel) must hold a Release libebt.a and scenarios/libebt_scenarios.a (build the
# target ebt_bench_transitions there first). Builds bench/callgrind/moves_driver.cpp against it,
# runs 100 measured frames of AGENTS (10,000) agents in MODE (event) after 200 warm-up frames under
# callgrind, and prints per completed move:
#   the inclusive instructions of the frame's three calls: MovementSystem::step less the
#   World::resume_all it calls, World::resume_all, and World::step (the agents' ticks included, with
#   Patrol's start and the MovementSystem::request it makes: since the lean World tick, h-lane,
#   Runtime::world_tick is inline in the World's loop, so the ticks are not counted apart);
#   then the self cost of every function, grouped into the parts of a move of docs/benchmarks.md
#   ("A move through a World, fourth pass"; the restart tick as a part of its own since the seventh
#   pass, h-restart).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/callgrind_driver.sh
source scripts/callgrind_driver.sh
build="${1:-build/rel}"
agents="${2:-10000}"
mode="${3:-event}"
out="$(mktemp -d)"
driver="$out/moves_driver"
ebt_build_callgrind_driver bench/callgrind/moves_driver.cpp "$build" "$driver"
valgrind --tool=callgrind --callgrind-out-file="$out/moves.cg" --toggle-collect="*measured_frames*" \
  "$driver" "$mode" "$agents" 200 100 >"$out/driver.txt" 2>/dev/null
cat "$out/driver.txt"
callgrind_annotate --inclusive=yes --threshold=100 "$out/moves.cg" >"$out/inclusive.txt"
python3 - "$out/inclusive.txt" "$out/driver.txt" <<'PY'
import re, sys
moves = int(re.search(r"moves completed (\d+)", open(sys.argv[2]).read()).group(1))
incl = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+[^:\s]*:(.*)$", line)
    if not m: continue
    name = m.group(2).split(" [")[0].strip()
    incl.setdefault(name, int(m.group(1).replace(",", "")))
def get(part):
    # the first (largest) inclusive count of a function whose name contains `part`
    for name, ir in incl.items():
        if part in name: return ir
    return 0
total = get("measured_frames")
resume_all = get("ebt::World::resume_all(")
movement = get("ebt::scenarios::MovementSystem::step(") - resume_all
world_step = get("ebt::World::step(std")
print(f"moves completed: {moves}")
for label, ir in [("MovementSystem::step, less World::resume_all", movement), ("World::resume_all", resume_all),
                  ("World::step (the ticks, Patrol's start and MovementSystem::request included)", world_step),
                  ("all (measured_frames)", total)]:
    print(f"{label:80s} {ir / moves:8.1f} instructions per move")
PY
# The same run by self cost (each function's own instructions, inlined code included in the function
# it is inlined into), grouped into the parts of a move that docs/benchmarks.md's tables name ("A
# move through a World, fourth pass"); the largest functions of each part follow. Every function
# counted in measured_frames falls in one part ("other" when no pattern names it).
callgrind_annotate --inclusive=no --threshold=100 "$out/moves.cg" >"$out/self.txt"
python3 - "$out/self.txt" "$out/driver.txt" <<'PY'
import re, sys
moves = int(re.search(r"moves completed (\d+)", open(sys.argv[2]).read()).group(1))
parts = [  # (part, patterns of the function names it holds), first match wins
    ("the MovementSystem and Patrol's start (user code)", [r"scenarios::", r"vector<ebt::ResumeHandle", r"_M_realloc_insert"]),
    ("the resume (resume_all, the agent's resume, the wake)",
     [r"World::resume_all", r"resume_suspended", r"place_resumed", r"resume_run", r"Agent::resume\(", r"World::resume\(",
      r"World::set_awake", r"on_agent_resume", r"on_agent_wake", r"place_in_queue", r"place_in_order",
      r"Runtime::enqueue"]),
    ("the restart tick (restart_tick_checked with restart_on_plan inline; its uncommon ends; restart_root_plainly, handle_of)",
     [r"restart_tick_checked", r"restart_tick_went_on", r"restart_on_plan", r"restart_after_plan", r"report_start_error",
      r"after_latent_start", r"restart_root_plainly", r"handle_of"]),
    ("the short paths (single_entry_work, end_resumed_run)",
     [r"single_entry_work", r"end_resumed_run"]),
    ("the next move's start through enter (enter, the latent start, suspend)",
     [r"Runtime::enter", r"ActionContext::suspend", r"LatentStart", r"_Function_handler",
      r"mark_lower_guards_live", r"selector_advance", r"begin_pending", r"next_run_id", r"suspension_handle"]),
    ("the tick entries (single_work_tick or checked_tick, event_tick, finish_tick)",
     [r"single_work_tick", r"checked_tick", r"event_tick", r"single_entry_tick", r"finish_tick", r"tick_numbered",
      r"world_tick", r"tick_in_world", r"event_loop"]),
    ("the World's steps of the woken agents and their sleep (step_serial with tick_agent and world_tick's tests inline)",
     [r"World::step_serial", r"World::step_slot", r"World::tick_agent", r"fall_asleep", r"schedule_after_step",
      r"clear_awake", r"next_awake", r"World::run_frame", r"World::step\(", r"sleep_due", r"World::"]),
]
totals = {name: 0 for name, _ in parts}
totals["other"] = 0
members = {name: [] for name in totals}
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+[^:\s]*:(.*)$", line)
    if not m: continue
    ir = int(m.group(1).replace(",", ""))
    name = m.group(2).split(" [")[0].strip()
    part = next((p for p, pats in parts if any(re.search(x, name) for x in pats)), "other")
    totals[part] += ir
    members[part].append((ir, name))
print(f"\nself cost per completed move, by part ({moves} moves):")
for part, ir in totals.items():
    print(f"{ir / moves:8.1f}  {part}")
    for f_ir, f_name in sorted(members[part], reverse=True)[:6]:
        if f_ir / moves >= 1: print(f"{'':12s}{f_ir / moves:7.1f}  {f_name[:110]}")
print(f"{sum(totals.values()) / moves:8.1f}  all")
PY
rm -rf "$out"
