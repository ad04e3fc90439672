#!/usr/bin/env bash
# Instructions per completed latent move in the sweep's guard_b world, split into the
# MovementSystem, the World and the engine (docs/benchmarks.md, "Where the time goes").
# Repeatable whatever else runs.
#
#   bash scripts/moves_callgrind.sh [BUILD_DIR] [AGENTS] [MODE]
#
# BUILD_DIR (build/rel) must hold a Release libebt.a and scenarios/libebt_scenarios.a (build the
# target ebt_bench_transitions there first). Builds bench/callgrind/moves_driver.cpp against it,
# runs 100 measured frames of AGENTS (10,000) agents in MODE (event) after 200 warm-up frames under
# callgrind, and prints the inclusive instructions of the parts of a frame per completed move:
#   MovementSystem  MovementSystem::step and ::request, less the World::resume_all (or, in older
#                   code, World::resume) calls it makes
#   World           World::resume_all's own loop (with the handle's checks, since h-moves2 made
#                   it call Agent::resume itself), World::resume less Agent::resume, the wakes
#                   (World::on_agent_wake), and
#                   World::step less the agents' ticks (its loop and bookkeeping for the woken agents)
#   engine          Agent::resume, or since h-moves3 Agent::resume_in_world (less the wake it tells
#                   the World of, before h-moves3) and the agents' ticks (Agent::tick_in_world, or
#                   in older code Agent::tick_numbered, less MovementSystem::request called from
#                   Patrol's start)
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
ms_step = get("ebt::scenarios::MovementSystem::step(")
# MovementSystem::request, inlined into Patrol's start function (the latent action's lambda)
ms_request = get("ebt::scenarios::MovementSystem::request") or get("register_latent_guard_actions(ebt::Registry&, ebt::scenarios::MovementSystem&)::{lambda")
world_resume = get("ebt::World::resume(")
# Since h-moves3, resume_all resumes through Agent::resume_in_world and sets the awake bit itself.
agent_resume = get("ebt::Agent::resume(") or get("ebt::Agent::resume_in_world(")
wake = get("ebt::World::on_agent_wake(")
world_step = get("ebt::World::step(std")
# Since the lean World tick (h-quiet), a World ticks its agents through Agent::tick_in_world, which
# calls tick_numbered only for a tick it refuses.
ticks = get("ebt::Agent::tick_in_world(") or get("ebt::Agent::tick_numbered(")
# World::resume_all (the MovementSystem's batch since h-moves): its own loop, with the prefetches,
# counts to the World; before it the MovementSystem called World::resume itself.
resume_all = get("ebt::World::resume_all(")
# Since h-moves2, resume_all checks each handle itself and calls Agent::resume directly (no
# World::resume): its own loop then holds the handle's checks too.
inner = world_resume if world_resume else agent_resume
batch = resume_all - inner if resume_all else 0
world_resume_own = world_resume - agent_resume if world_resume else 0
movement = ms_step - (resume_all or world_resume) + ms_request
world = batch + world_resume_own + wake + (world_step - ticks)
engine = (agent_resume - wake) + (ticks - ms_request)
print(f"moves completed: {moves}")
for label, ir in [("MovementSystem", movement), ("World", world), ("  World::resume_all's loop (prefetches; the checks)", batch),
                  ("  World::resume, less Agent::resume", world_resume_own),
                  ("  World::on_agent_wake", wake), ("  World::step, less the ticks", world_step - ticks),
                  ("engine", engine), ("  Agent::resume (or resume_in_world), less the wake", agent_resume - wake),
                  ("  the two ticks (tick_in_world), less MovementSystem::request", ticks - ms_request),
                  ("all (measured_frames)", total)]:
    print(f"{label:55s} {ir / moves:8.1f} instructions per move")
PY
rm -rf "$out"
