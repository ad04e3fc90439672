#!/usr/bin/env python3
"""Summarises a task-probe dump (engine/world/task_probe.hpp, a build with -DEBT_TASK_PROBE):
per phase of the parallel tick, each thread's busy time (sum of its tasks), its wait before its
first task and after its last one, its tasks and agents; printed as medians over the phases.
Usage: task_probe.py DUMP [--skip N] (N: phases to leave out at the start, e.g. other worlds')."""
import statistics
import sys


def main():
    path = sys.argv[1]
    skip = int(sys.argv[sys.argv.index("--skip") + 1]) if "--skip" in sys.argv else 0
    phases, tasks, standbys = [], [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "P":
                phases.append(tuple(int(x) for x in parts[1:]))
            elif parts[0] == "S":
                standbys.append(tuple(int(x) for x in parts[1:]))
            else:
                tasks.append(tuple(int(x) for x in parts[1:]))
    phases.sort()
    tasks.sort()
    phases = phases[skip:]
    min_awake = int(sys.argv[sys.argv.index("--min-awake") + 1]) if "--min-awake" in sys.argv else 0
    phases = [p for p in phases if p[4] >= min_awake]
    rows = []
    ti = 0
    for (start, end, grain, slots, awake) in phases:
        while ti < len(tasks) and tasks[ti][0] < start:
            ti += 1
        per = {}
        j = ti
        while j < len(tasks) and tasks[j][0] <= end:
            t = tasks[j]
            d = per.setdefault(t[2], {"busy": 0, "first": None, "last": None, "n": 0, "ticked": 0, "sizes": []})
            d["busy"] += t[1] - t[0]
            d["first"] = t[0] if d["first"] is None else min(d["first"], t[0])
            d["last"] = t[1] if d["last"] is None else max(d["last"], t[1])
            d["n"] += 1
            d["ticked"] += t[5]
            d["sizes"].append(t[1] - t[0])
            j += 1
        rows.append((end - start, grain, per, start, end))
    if not rows:
        print("no phases")
        return
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    print(f"phases: {len(rows)}  phase wall p50 {med([r[0] for r in rows])/1e3:.1f} us  grain p50 {med([r[1] for r in rows])}")
    pct = lambda xs, q: sorted(xs)[int(q * (len(xs) - 1))] if xs else float("nan")
    for thread in sorted({t for r in rows for t in r[2]}):
        busy = [r[2][thread]["busy"] for r in rows if thread in r[2]]
        lead = [r[2][thread]["first"] - r[3] for r in rows if thread in r[2]]
        tail = [r[4] - r[2][thread]["last"] for r in rows if thread in r[2]]
        n = [r[2][thread]["n"] for r in rows if thread in r[2]]
        ticked = [r[2][thread]["ticked"] for r in rows if thread in r[2]]
        gaps = [r[0] - r[2][thread]["busy"] for r in rows if thread in r[2]]
        print(f"thread {thread}: in {len(busy)} phases; busy p50 {med(busy)/1e3:.1f} us; before first task p50 {med(lead)/1e3:.1f} us "
              f"p90 {sorted(lead)[int(0.9*len(lead))]/1e3 if lead else 0:.1f}; after last p50 {med(tail)/1e3:.1f} us "
              f"p90 {sorted(tail)[int(0.9*len(tail))]/1e3 if tail else 0:.1f}; idle in phase p50 {med(gaps)/1e3:.1f} us; "
              f"tasks p50 {med(n)}; agents p50 {med(ticked)}")
        per_agent = [r[2][thread]["busy"] / r[2][thread]["ticked"] for r in rows if thread in r[2] and r[2][thread]["ticked"]]
        print(f"  thread {thread}: ns per agent p50 {med(per_agent):.1f}; before first task p10 / p50 / p90 "
              f"{pct(lead, 0.1)/1e3:.1f} / {med(lead)/1e3:.1f} / {pct(lead, 0.9)/1e3:.1f} us; "
              f"phases without it {len(rows) - len(busy)}")
    total_busy = [sum(d["busy"] for d in r[2].values()) for r in rows]
    ticked = [sum(d["ticked"] for d in r[2].values()) for r in rows]
    print(f"both: busy sum p50 {med(total_busy)/1e3:.1f} us, agents p50 {med(ticked)}, ns per agent (busy) "
          f"{med([b / a for b, a in zip(total_busy, ticked) if a])}")
    # The worker standbys (World::ParallelState::call_workers): per phase, the last one called before it.
    if standbys:
        standbys.sort()
        wake, lead, waiting, expired = [], [], 0, 0
        for (_, _, _, _, start, end) in [(r[0], r[1], r[2], r[3], r[3], r[4]) for r in rows]:
            before = [sb for sb in standbys if sb[0] <= start]
            if not before:
                continue
            called, sb_start, sb_end = before[-1]
            wake.append(sb_start - called)
            lead.append(start - called)
            if sb_start <= start <= sb_end + 20_000:
                waiting += 1
            elif sb_end < start:
                expired += 1
        print(f"standbys: {len(standbys)}; per phase: worker started it p10 / p50 / p90 {pct(wake, 0.1)/1e3:.1f} / {med(wake)/1e3:.1f} / "
              f"{pct(wake, 0.9)/1e3:.1f} us after the call; the phase {med(lead)/1e3:.1f} us after the call (p50); "
              f"standby waiting at the phase's start in {waiting} of {len(lead)} phases, ended before it in {expired}")
    last_sizes = []
    for r in rows:
        for d in r[2].values():
            last_sizes.append(max(d["sizes"]))
    print(f"largest task p50 {med(last_sizes)/1e3:.1f} us")


if __name__ == "__main__":
    main()
