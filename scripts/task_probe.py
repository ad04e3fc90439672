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
    phases, tasks = [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "P":
                phases.append(tuple(int(x) for x in parts[1:]))
            else:
                tasks.append(tuple(int(x) for x in parts[1:]))
    phases.sort()
    tasks.sort()
    phases = phases[skip:]
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
    for thread in (0, 1):
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
    total_busy = [sum(d["busy"] for d in r[2].values()) for r in rows]
    ticked = [sum(d["ticked"] for d in r[2].values()) for r in rows]
    print(f"both: busy sum p50 {med(total_busy)/1e3:.1f} us, agents p50 {med(ticked)}, ns per agent (busy) "
          f"{med([b / a for b, a in zip(total_busy, ticked) if a])}")
    # Per-task overhead: gaps between consecutive tasks on one thread inside a phase.
    gaps = []
    for r in rows:
        pass
    last_sizes = []
    for r in rows:
        for d in r[2].values():
            last_sizes.append(max(d["sizes"]))
    print(f"largest task p50 {med(last_sizes)/1e3:.1f} us")


if __name__ == "__main__":
    main()
