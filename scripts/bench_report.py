#!/usr/bin/python3
"""Charts and a markdown summary from ebt_bench_sweep's JSON output (bench/sweep_bench.cpp).

    /usr/bin/python3 scripts/bench_report.py RESULTS.json [MORE.json ...] [--out-dir DIR]

Reads one or more Google Benchmark JSON files (--benchmark_out=F --benchmark_out_format=json);
their "benchmarks" arrays are merged (a benchmark in several files: the last file wins). With
repetitions, the median aggregate is used (or the median of the repetitions when the file has no
aggregates); otherwise the single iteration entry. Writes into DIR (default: the first file's
directory):

    ns_per_agent_frame_vs_agents.png   ns per agent-frame vs agents, change 0% and 1%
    event_poll_ratio_vs_change.png     polling time / event time vs change rate, 10,000 agents
    cost_vs_tree_size.png              ns per agent-frame vs tree nodes, 10,000 agents, change 0%
    waiting_world.png                  time per frame vs agents, the waiting world
    summary.md                         the tables (and the run's context)

and prints the key figures and the files written. Benchmarks missing from the input (a filtered
run) are skipped; a chart with no data is not written. Needs Python 3 and matplotlib only (Debian:
python3-matplotlib, run with /usr/bin/python3); without matplotlib only summary.md is written.
"""

import argparse
import json
import math
import os
import re
import statistics
import sys

TREE_SCENARIOS = ["guard_a", "guard_b", "wide_4", "wide_16", "wide_64", "deep_4", "deep_16", "deep_32"]
MAIN_SCENARIOS = ["guard_a", "guard_b", "wide_64", "deep_32"]
SIZE_SCENARIOS = ["guard_a", "wide_4", "wide_16", "wide_64", "deep_4", "deep_16", "deep_32"]
MODES = ["polling", "event"]
REF_AGENTS = 10_000
# One colour per scenario, the same in every chart (matplotlib's tab10).
COLOURS = {
    "guard_a": "#1f77b4", "guard_b": "#ff7f0e", "wide_4": "#2ca02c", "wide_16": "#d62728",
    "wide_64": "#9467bd", "deep_4": "#8c564b", "deep_16": "#e377c2", "deep_32": "#17becf",
    "waiting": "#7f7f7f", "arena": "#bcbd22",
}
MODE_STYLE = {"polling": "--", "event": "-"}
MODE_COLOURS = {"polling": "#d62728", "event": "#1f77b4"}  # charts that colour by mode

NAME_RE = re.compile(r"^(?P<scenario>[A-Za-z0-9_]+)/(?P<mode>polling|event)/agents:(?P<agents>\d+)"
                     r"/change:(?P<change>[0-9.]+%|sim)$")
# The paired rows (BM_Paired): both modes in one benchmark, in alternating blocks of frames.
PAIRED_RE = re.compile(r"^(?P<scenario>[A-Za-z0-9_]+)/paired/agents:(?P<agents>\d+)/change:(?P<change>[0-9.]+%)$")


# ---------------------------------------------------------------------------------------------
# Formatting

def _sig(x, digits=3):
    """x with `digits` significant digits, without exponent or trailing zeros."""
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    s = f"{x:,.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def fmt_time(seconds):
    """26.5 ns, 1.35 µs, 7.65 ms, 0.12 s; '–' for a missing value."""
    if seconds is None:
        return "–"
    if seconds == 0:
        return "0 ns"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale:
            return f"{_sig(seconds / scale)} {unit}"
    return f"{_sig(seconds / 1e-12)} ps"


def fmt_ns(seconds):
    """Always in ns (for columns that compare per agent-frame costs)."""
    if seconds is None:
        return "–"
    return f"{_sig(seconds * 1e9)} ns"


def fmt_ratio(r):
    if r is None:
        return "–"
    if r >= 10:
        return f"{r:,.0f}×"
    if r >= 1:
        return f"{r:.1f}×"
    return f"{r:.2f}×"


def fmt_paired_ratio(r):
    """A paired row's ratio with one decimal (the targets are judged on them: 18.4× is not 18×)."""
    return "–" if r is None else f"{r:,.1f}×"


def fmt_num(x):
    if x is None:
        return "–"
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return _sig(x, 3)


def fmt_bytes(x):
    if x is None:
        return "–"
    return f"{x:,.0f} B"


def fmt_size(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def fmt_percent_label(change):
    """0.001 -> '0.1%'."""
    p = change * 100
    return f"{p:g}%"


def fmt_agents(n):
    return f"{n:,}"


# ---------------------------------------------------------------------------------------------
# Loading

class Results:
    """The sweep's benchmarks: (scenario, mode, agents, change) -> counters. change: a fraction, or
    the string 'sim' (arena)."""

    def __init__(self):
        self.context = None
        self.contexts = []
        self.runs = {}  # key -> dict of numbers (counters, cpu_time, iterations...)
        self.paired = {}  # (scenario, agents, change) -> dict of numbers, for the paired rows
        self.repetitions = 1
        self.repetition_counts = set()  # distinct repetition counts of the runs used
        self.skipped = []  # names that are not sweep benchmarks
        self.errors = []  # benchmarks that reported an error

    def load(self, paths):
        for path in paths:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            ctx = data.get("context", {})
            self.contexts.append((path, ctx))
            if self.context is None:
                self.context = ctx
            self._add_benchmarks(data.get("benchmarks", []))

    def _add_benchmarks(self, entries):
        iterations = {}  # run name -> [entries]
        medians = {}
        for e in entries:
            run_name = e.get("run_name") or e.get("name", "")
            if e.get("error_occurred"):
                self.errors.append(f"{run_name}: {e.get('error_message', 'error')}")
                continue
            run_type = e.get("run_type", "iteration")
            if run_type == "aggregate":
                if e.get("aggregate_name") == "median":
                    medians[run_name] = e
                    self.repetitions = max(self.repetitions, int(e.get("repetitions", 1)))
            else:
                iterations.setdefault(run_name, []).append(e)
        for run_name in list(iterations) + [n for n in medians if n not in iterations]:
            m = NAME_RE.match(run_name)
            paired = PAIRED_RE.match(run_name) if not m else None
            if not m and not paired:
                self.skipped.append(run_name)
                continue
            if run_name in medians:
                values = _numbers(medians[run_name])
                self.repetition_counts.add(int(medians[run_name].get("repetitions", 1)))
            else:
                reps = iterations[run_name]
                self.repetitions = max(self.repetitions, len(reps))
                self.repetition_counts.add(len(reps))
                values = _median_numbers(reps)
            if paired:
                change = float(paired.group("change")[:-1]) / 100
                self.paired[(paired.group("scenario"), int(paired.group("agents")), _change_key(change))] = values
                continue
            change = m.group("change")
            change = "sim" if change == "sim" else float(change[:-1]) / 100
            key = (m.group("scenario"), m.group("mode"), int(m.group("agents")), _change_key(change))
            self.runs[key] = values

    # Queries -------------------------------------------------------------------------------

    def get(self, scenario, mode, agents, change, counter):
        run = self.runs.get((scenario, mode, agents, _change_key(change)))
        if run is None:
            return None
        return run.get(counter)

    def scenarios(self):
        return sorted({k[0] for k in self.runs}, key=_scenario_order)

    def agent_counts(self, scenario, change=None):
        return sorted({k[2] for k in self.runs
                       if k[0] == scenario and (change is None or k[3] == _change_key(change))})

    def changes(self, scenario, agents):
        return sorted({k[3] for k in self.runs if k[0] == scenario and k[2] == agents and k[3] != "sim"})

    def ratio(self, scenario, agents, change, counter="time_per_agent_frame"):
        p = self.get(scenario, "polling", agents, change, counter)
        e = self.get(scenario, "event", agents, change, counter)
        if p is None or e is None or e <= 0:
            return None
        return p / e


def _change_key(change):
    if change == "sim":
        return "sim"
    return round(float(change), 9)


def _scenario_order(name):
    order = TREE_SCENARIOS + ["waiting", "arena"]
    return (order.index(name) if name in order else len(order), name)


def _numbers(entry):
    return {k: float(v) for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _median_numbers(entries):
    if len(entries) == 1:
        return _numbers(entries[0])
    per = [_numbers(e) for e in entries]
    keys = set().union(*per)
    return {k: statistics.median([p[k] for p in per if k in p]) for k in keys}


# ---------------------------------------------------------------------------------------------
# Summary (markdown + text)

def context_line(ctx):
    if not ctx:
        return "(no context in the results)"
    parts = []
    if "date" in ctx:
        parts.append(f"date {ctx['date']}")
    if "host_name" in ctx:
        parts.append(f"host {ctx['host_name']}")
    if "num_cpus" in ctx:
        mhz = f" @ {ctx['mhz_per_cpu']} MHz" if "mhz_per_cpu" in ctx else ""
        parts.append(f"{ctx['num_cpus']} CPUs{mhz}")
    caches = ctx.get("caches") or []
    if caches:
        names = []
        for c in caches:
            t = {"Data": "d", "Instruction": "i"}.get(c.get("type"), "")
            shared = f" ×{c['num_sharing']}" if c.get("num_sharing", 1) > 1 else ""
            names.append(f"L{c.get('level')}{t} {fmt_size(int(c.get('size', 0)))}{shared}")
        parts.append("caches " + ", ".join(names))
    if "load_avg" in ctx:
        parts.append("load avg " + " ".join(f"{x:.2f}" for x in ctx["load_avg"]))
    if "library_build_type" in ctx:
        parts.append(f"Google Benchmark library build: {ctx['library_build_type']}")
    return "; ".join(parts)


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def both(r, scenario, agents, change, counter, fmt):
    """'polling / event' for a counter, or one value when both modes agree."""
    p = r.get(scenario, "polling", agents, change, counter)
    e = r.get(scenario, "event", agents, change, counter)
    if p is not None and e is not None and abs(p - e) <= 1e-9 * max(abs(p), abs(e), 1):
        return fmt(p)
    return f"{fmt(p)} / {fmt(e)}"


def crossover(r, scenario, agents):
    changes = r.changes(scenario, agents)
    measured = [c for c in changes if r.ratio(scenario, agents, c) is not None]
    if not measured:
        return None
    for c in measured:
        if r.ratio(scenario, agents, c) < 1:
            return fmt_percent_label(c)
    return f"none up to {fmt_percent_label(max(measured))}"


def summary(r, inputs):
    md = []  # markdown lines
    text = []  # stdout lines
    md.append("# ebt polling vs event sweep")
    md.append("")
    md.append(f"Context: {context_line(r.context)}.")
    md.append("")
    rep = (f"medians of {_repetitions_text(r)} repetitions" if r.repetitions > 1 else "one run per benchmark")
    if r.repetitions > 1 and 1 in r.repetition_counts:
        rep += "; some benchmarks: one run"
    md.append(f"Input: {', '.join('`' + os.path.basename(p) + '`' for p in inputs)} "
              f"({len(r.runs) + len(r.paired)} benchmarks, {rep}). Times are CPU time; "
              "ns/agent-frame = CPU time / (agents × frames), one frame = World::step(50 ms) plus the "
              "frame's blackboard writes. Ratio = polling time / event time (> 1: event mode is faster). "
              "“P / E” = polling / event when the two differ.")
    md.append("")
    if r.context and r.context.get("library_build_type") == "debug":
        md.append("(“Google Benchmark library build: debug” describes Debian's libbenchmark, not ebt; "
                  "ebt itself is built in Release by scripts/bench.sh.)")
        md.append("")
    text.append(f"context: {context_line(r.context)}")
    text.append(f"{len(r.runs) + len(r.paired)} benchmarks ({rep})")

    # (a) -----------------------------------------------------------------------------------
    rows = []
    for s in TREE_SCENARIOS:
        if (s, "polling", REF_AGENTS, 0.0) not in r.runs and (s, "event", REF_AGENTS, 0.0) not in r.runs:
            continue
        g = lambda mode, counter, s=s: r.get(s, mode, REF_AGENTS, 0, counter)
        rows.append([
            s, fmt_num(g("event", "nodes") or g("polling", "nodes")),
            fmt_ns(g("polling", "time_per_agent_frame")), fmt_ns(g("event", "time_per_agent_frame")),
            fmt_ratio(r.ratio(s, REF_AGENTS, 0)),
            f"{fmt_num(g('polling', 'guards_per_frame'))} / {fmt_num(g('event', 'guards_per_frame'))}",
            f"{fmt_num(g('polling', 'updates_per_frame'))} / {fmt_num(g('event', 'updates_per_frame'))}",
            both(r, s, REF_AGENTS, 0, "bytes_per_agent", fmt_bytes),
            both(r, s, REF_AGENTS, 0, "heap_bytes_per_agent", fmt_bytes),
            both(r, s, REF_AGENTS, 0, "allocs_per_agent", lambda x: f"{x:.3f}"),
            f"{fmt_ns(g('polling', 'create_time_per_agent'))} / {fmt_ns(g('event', 'create_time_per_agent'))}",
        ])
    md.append(f"## (a) Tree scenarios at {fmt_agents(REF_AGENTS)} agents, change 0%")
    md.append("")
    if rows:
        md.append(md_table(["scenario", "nodes", "polling ns/agent-frame", "event ns/agent-frame",
                            "polling/event", "guards/frame P / E", "updates/frame P / E",
                            "bytes/agent", "heap bytes/agent (spawn)", "allocs/agent (spawn)",
                            "create/agent P / E"], rows))
        md.append("")
        md.append("bytes/agent: Agent::memory_bytes() (the Agent and its state block); heap bytes and "
                  "allocations: requested while spawning all the agents, divided by their number "
                  "(amortized World storage growth included); create: wall time to spawn, per agent.")
        text.append("")
        text.append(f"(a) {fmt_agents(REF_AGENTS)} agents, change 0%: polling vs event per agent-frame")
        for row in rows:
            text.append(f"  {row[0]:<8} {row[1]:>4} nodes  polling {row[2]:>10}  event {row[3]:>10}  "
                        f"ratio {row[4]:>6}  guards/frame {row[5]}")
    else:
        md.append("(no data)")
        text.append(f"(a) no tree scenario at {fmt_agents(REF_AGENTS)} agents, change 0%")
    md.append("")

    # (b) -----------------------------------------------------------------------------------
    all_changes = sorted({k[3] for k in r.runs if k[2] == REF_AGENTS and k[0] in TREE_SCENARIOS})
    rows = []
    text_rows = []
    for s in TREE_SCENARIOS:
        if not any(r.ratio(s, REF_AGENTS, c) is not None for c in all_changes):
            continue
        cross = crossover(r, s, REF_AGENTS)
        rows.append([s] + [fmt_ratio(r.ratio(s, REF_AGENTS, c)) for c in all_changes] + [cross])
        text_rows.append(f"  {s:<8} " + "  ".join(f"{fmt_ratio(r.ratio(s, REF_AGENTS, c)):>6}" for c in all_changes)
                         + f"   crossover: {cross}")
    md.append(f"## (b) polling/event time ratio by change rate, {fmt_agents(REF_AGENTS)} agents")
    md.append("")
    if rows:
        md.append(md_table(["scenario"] + [fmt_percent_label(c) for c in all_changes] + ["crossover"], rows))
        md.append("")
        md.append("Change rate: the share of agents whose blackboard changes each frame. Crossover: the "
                  "lowest measured change rate where polling is faster than event mode (ratio < 1).")
        text.append("")
        text.append(f"(b) polling/event ratio at {fmt_agents(REF_AGENTS)} agents, change "
                    + " / ".join(fmt_percent_label(c) for c in all_changes))
        text += text_rows
    else:
        md.append("(no data)")
    md.append("")

    # (c) -----------------------------------------------------------------------------------
    rows = []
    for n in r.agent_counts("waiting"):
        p = r.get("waiting", "polling", n, 0, "time_per_frame")
        e = r.get("waiting", "event", n, 0, "time_per_frame")
        rows.append([fmt_agents(n), fmt_time(p), fmt_time(e),
                     fmt_ratio(p / e if p is not None and e else None),
                     fmt_num(r.get("waiting", "polling", n, 0, "stepped_per_frame")),
                     fmt_num(r.get("waiting", "event", n, 0, "stepped_per_frame"))])
    md.append("## (c) Waiting world: time per frame")
    md.append("")
    if rows:
        md.append(md_table(["agents", "polling / frame", "event / frame", "polling/event",
                            "stepped/frame P", "stepped/frame E"], rows))
        md.append("")
        md.append("Every agent waits (a 1000-hour Wait, or a suspended action nobody resumes); nothing "
                  "changes, no deadline falls due during a run. Polling walks every agent every frame; "
                  "event mode steps none.")
        text.append("")
        text.append("(c) waiting world, time per frame (polling / event):")
        for row in rows:
            text.append(f"  {row[0]:>9} agents  {row[1]:>9} / {row[2]:>9}  ({row[3]})")
    else:
        md.append("(no data)")
    md.append("")

    # (d) -----------------------------------------------------------------------------------
    rows = []
    for n in r.agent_counts("arena"):
        g = lambda mode, counter, n=n: r.get("arena", mode, n, "sim", counter)
        tp, te = g("polling", "time_per_agent_frame"), g("event", "time_per_agent_frame")
        ap, ae = g("polling", "ai_time_per_agent_frame"), g("event", "ai_time_per_agent_frame")
        share = lambda ai, t: f"{100 * ai / t:.0f}%" if ai is not None and t else "–"
        rows.append([fmt_agents(n), fmt_ns(tp), fmt_ns(te), fmt_ratio(tp / te if tp and te else None),
                     fmt_ns(ap), fmt_ns(ae), fmt_ratio(ap / ae if ap and ae else None),
                     f"{share(ap, tp)} / {share(ae, te)}",
                     f"{fmt_num(g('polling', 'guards_per_frame'))} / {fmt_num(g('event', 'guards_per_frame'))}"])
    md.append("## (d) Arena (the sample's world: perception, intruders, squads)")
    md.append("")
    if rows:
        md.append(md_table(["agents", "polling ns/agent-frame", "event ns/agent-frame", "polling/event",
                            "AI-only polling", "AI-only event", "AI polling/event", "AI share P / E",
                            "guards/frame P / E"], rows))
        md.append("")
        md.append("AI-only: World::step's wall time per agent-frame; the rest of the frame is perception "
                  "and simulation (the total is CPU time, so the share is approximate).")
        text.append("")
        text.append("(d) arena per agent-frame (polling / event), AI-only, AI share:")
        for row in rows:
            text.append(f"  {row[0]:>9} agents  {row[1]} / {row[2]} ({row[3]}); AI {row[4]} / {row[5]}; "
                        f"share {row[7]}")
    else:
        md.append("(no data)")
    md.append("")

    # (e) -----------------------------------------------------------------------------------
    rows = []
    for (s, n, c), v in sorted(r.paired.items(), key=lambda kv: (_scenario_order(kv[0][0]), kv[0][1], kv[0][2])):
        rows.append([s, fmt_agents(n), fmt_percent_label(c), fmt_ns(v.get("polling_time_per_agent_frame")),
                     fmt_ns(v.get("event_time_per_agent_frame")), fmt_paired_ratio(v.get("polling_over_event"))])
    if rows:
        md.append("## (e) Paired: both modes in alternating blocks of frames")
        md.append("")
        md.append(md_table(["scenario", "agents", "change", "polling ns/agent-frame", "event ns/agent-frame",
                            "polling/event"], rows))
        md.append("")
        md.append("Each row steps a polling world and an event world of the same configuration in "
                  "alternating blocks (at least 20 ms and 20 frames of one mode's frames each, the order swapped every "
                  "pair), so that a host whose speed changes for seconds at a time slows both alike. "
                  "Times: each mode's median block; polling/event: the median over the pairs of blocks.")
        md.append("")
        text.append("")
        text.append("(e) paired (both modes in alternating blocks), per agent-frame polling / event:")
        for row in rows:
            text.append(f"  {row[0]:<8} {row[1]:>9} agents {row[2]:>5}  {row[3]} / {row[4]}  ({row[5]})")

    if r.errors:
        md.append("## Benchmarks that failed")
        md.append("")
        md += [f"- {e}" for e in r.errors]
        md.append("")
        text.append("")
        text.append(f"{len(r.errors)} benchmarks reported errors (see summary.md)")
    return "\n".join(md), text


# ---------------------------------------------------------------------------------------------
# Charts

def load_matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.ticker import FuncFormatter
        return plt, Line2D, FuncFormatter
    except ImportError as exc:
        print(f"bench_report: matplotlib is not available ({exc}): charts skipped. On Debian: "
              "apt-get install python3-matplotlib, and run this script with /usr/bin/python3.",
              file=sys.stderr)
        return None


def _time_formatter(FuncFormatter):
    def fmt(v, _pos):
        return fmt_time(v) if v > 0 else ""
    return FuncFormatter(fmt)


def _agents_formatter(FuncFormatter):
    def fmt(v, _pos):
        if v <= 0:
            return ""
        for suffix, scale in (("M", 1e6), ("k", 1e3)):
            if v >= scale:
                return f"{_sig(v / scale)}{suffix}"
        return _sig(v)
    return FuncFormatter(fmt)


def _repetitions_text(r):
    """'3' or '3-5' when the merged inputs used different repetition counts."""
    counts = sorted(c for c in r.repetition_counts if c > 1) or [r.repetitions]
    return str(counts[0]) if counts[0] == counts[-1] else f"{counts[0]}-{counts[-1]}"


def _label_log_axis(axis, FuncFormatter, fmt):
    """Major ticks at powers of ten, labelled minor ticks at 2× and 5× (log axes spanning little)."""
    from matplotlib.ticker import LogLocator
    axis.set_major_formatter(FuncFormatter(lambda v, _p: fmt(v) if v > 0 else ""))
    axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    axis.set_minor_formatter(FuncFormatter(lambda v, _p: fmt(v) if v > 0 else ""))
    axis.set_tick_params(which="minor", labelsize=8, labelcolor="#555555")


def _context_note(r):
    ctx = r.context or {}
    parts = [ctx.get("date", "")[:16].replace("T", " "), ctx.get("host_name", "")]
    if "num_cpus" in ctx:
        parts.append(f"{ctx['num_cpus']} CPUs @ {ctx.get('mhz_per_cpu', '?')} MHz")
    if r.repetitions > 1:
        parts.append(f"median of {_repetitions_text(r)}")
    return "  ·  ".join(p for p in parts if p)


def _finish(fig, r, path, written):
    fig.text(0.995, 0.005, _context_note(r), ha="right", va="bottom", fontsize=7, color="#666666")
    fig.savefig(path, dpi=130)
    written.append(path)


def chart_agents(r, out_dir, mpl, written, notes):
    plt, Line2D, FuncFormatter = mpl
    changes = [0.0, 0.01]
    scenarios = [s for s in TREE_SCENARIOS
                 if any(len(r.agent_counts(s, c)) >= 2 for c in changes)]
    if not scenarios:
        notes.append("ns_per_agent_frame_vs_agents.png not written: no tree scenario at two or more agent "
                     "counts with change 0% or 1%")
        return
    fig, axes = plt.subplots(1, len(changes), figsize=(13, 5.6), sharey=True)
    for ax, change in zip(axes, changes):
        drawn = False
        for s in scenarios:
            for mode in MODES:
                pts = [(n, r.get(s, mode, n, change, "time_per_agent_frame")) for n in r.agent_counts(s, change)]
                pts = [(n, t * 1e9) for n, t in pts if t is not None and t > 0]
                if not pts:
                    continue
                xs, ys = zip(*pts)
                ax.plot(xs, ys, MODE_STYLE[mode], marker="o" if mode == "event" else "s", markersize=4,
                        color=COLOURS.get(s), linewidth=1.6 if mode == "event" else 1.3)
                drawn = True
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"change {fmt_percent_label(change)} of agents' blackboards per frame", fontsize=11)
        ax.set_xlabel("agents")
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", alpha=0.12)
        ax.xaxis.set_major_formatter(_agents_formatter(FuncFormatter))
        _label_log_axis(ax.yaxis, FuncFormatter, _sig)
        if not drawn:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", color="#888888")
    axes[0].set_ylabel("CPU time per agent-frame (ns, log)")
    handles = [Line2D([], [], color=COLOURS.get(s), linewidth=2.5, label=s) for s in scenarios]
    handles += [Line2D([], [], color="black", linestyle="--", marker="s", markersize=4, label="polling"),
                Line2D([], [], color="black", linestyle="-", marker="o", markersize=4, label="event")]
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), frameon=False, fontsize=9,
               bbox_to_anchor=(0.5, 0.995))
    fig.suptitle("Cost per agent per frame vs number of agents (polling dashed, event solid)",
                 y=0.94, fontsize=12)
    fig.tight_layout(rect=(0, 0.02, 1, 0.93))
    _finish(fig, r, os.path.join(out_dir, "ns_per_agent_frame_vs_agents.png"), written)
    plt.close(fig)


def chart_ratio(r, out_dir, mpl, written, notes):
    plt, Line2D, FuncFormatter = mpl
    changes = sorted({k[3] for k in r.runs if k[2] == REF_AGENTS and k[0] in TREE_SCENARIOS})
    series = []
    for s in TREE_SCENARIOS:
        pts = [(c, r.ratio(s, REF_AGENTS, c)) for c in changes]
        pts = [(c, v) for c, v in pts if v is not None and v > 0]
        if pts:
            series.append((s, pts))
    if not series or len(changes) < 2:
        notes.append(f"event_poll_ratio_vs_change.png not written: fewer than two change rates with both "
                     f"modes at {fmt_agents(REF_AGENTS)} agents")
        return
    # Categorical x: 0% on its own at the left, then the (logarithmically spaced) positive rates.
    positions = {}
    x = 0.0
    for c in changes:
        positions[c] = x
        x += 1.6 if c == 0 else 1.0
    fig, ax = plt.subplots(figsize=(9, 5.8))
    for s, pts in series:
        xs = [positions[c] for c, _ in pts]
        ys = [v for _, v in pts]
        ax.plot(xs, ys, "-", marker="o", markersize=5, color=COLOURS.get(s), label=s, linewidth=1.7)
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=1.2, linestyle=":")
    ax.text(positions[changes[0]] - 0.45, 1.0, " crossover (polling = event)", va="bottom", ha="left",
            fontsize=9)
    if 0.0 in positions and len(changes) > 1:
        ax.axvline((positions[0.0] + positions[changes[1]]) / 2, color="#bbbbbb", linewidth=1)
    ax.set_xticks([positions[c] for c in changes])
    ax.set_xticklabels([fmt_percent_label(c) for c in changes])
    ax.set_xlim(positions[changes[0]] - 0.5, positions[changes[-1]] + 0.5)
    lo, hi = ax.get_ylim()
    ax.set_ylim(min(lo, 0.5), max(hi, 2.0))
    _label_log_axis(ax.yaxis, FuncFormatter, lambda v: f"{_sig(v)}×")
    ax.set_xlabel("change rate: share of agents whose blackboard changes each frame")
    ax.set_ylabel("polling time / event time (log; > 1: event faster)")
    ax.set_title(f"Event mode's advantage vs change rate, {fmt_agents(REF_AGENTS)} agents", fontsize=12)
    ax.grid(True, which="major", alpha=0.35)
    ax.legend(loc="upper right", fontsize=9, ncol=2)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    _finish(fig, r, os.path.join(out_dir, "event_poll_ratio_vs_change.png"), written)
    plt.close(fig)


def chart_tree_size(r, out_dir, mpl, written, notes):
    plt, Line2D, FuncFormatter = mpl
    mode_colour = MODE_COLOURS
    families = {"wide": ["guard_a", "wide_4", "wide_16", "wide_64"],
                "deep": ["guard_a", "deep_4", "deep_16", "deep_32"]}
    family_marker = {"wide": "s", "deep": "^"}
    pts = {}
    for s in SIZE_SCENARIOS:
        for mode in MODES:
            nodes = r.get(s, mode, REF_AGENTS, 0, "nodes")
            t = r.get(s, mode, REF_AGENTS, 0, "time_per_agent_frame")
            if nodes and t and t > 0:
                pts[(s, mode)] = (nodes, t * 1e9)
    if len({s for s, _ in pts}) < 2:
        notes.append(f"cost_vs_tree_size.png not written: fewer than two tree sizes at "
                     f"{fmt_agents(REF_AGENTS)} agents, change 0%")
        return
    fig, ax = plt.subplots(figsize=(9, 6))
    for mode in MODES:
        for fam, members in families.items():
            xy = [pts[(s, mode)] for s in members if (s, mode) in pts]
            if len(xy) >= 2:
                xs, ys = zip(*xy)
                ax.plot(xs, ys, MODE_STYLE[mode], color=mode_colour[mode], linewidth=1.2, alpha=0.7)
        for s in SIZE_SCENARIOS:
            if (s, mode) not in pts:
                continue
            x, y = pts[(s, mode)]
            fam = "wide" if s.startswith("wide") else "deep" if s.startswith("deep") else None
            ax.plot([x], [y], marker=family_marker.get(fam, "o"), markersize=7, color=mode_colour[mode],
                    linestyle="none")
            # Labels: wide above-left / deep below-right, so that neighbours do not collide.
            dy = 9 if fam != "deep" else -13
            ax.annotate(s, (x, y), textcoords="offset points", xytext=(4, dy), fontsize=8,
                        color=mode_colour[mode])
    ax.set_xscale("log")
    ax.set_yscale("log")
    _label_log_axis(ax.xaxis, FuncFormatter, _sig)
    _label_log_axis(ax.yaxis, FuncFormatter, _sig)
    ax.set_xlabel("tree size (nodes, log)")
    ax.set_ylabel("CPU time per agent-frame (ns, log)")
    ax.set_title(f"Cost vs tree size, {fmt_agents(REF_AGENTS)} agents, nothing changes (change 0%)",
                 fontsize=12)
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo / 1.3, hi * 1.3)
    lo, hi = ax.get_xlim()
    ax.set_xlim(lo, hi * 1.25)
    handles = [Line2D([], [], color=mode_colour["polling"], linestyle="--", label="polling"),
               Line2D([], [], color=mode_colour["event"], linestyle="-", label="event"),
               Line2D([], [], color="#555555", marker="o", linestyle="none", label="guard_a (base tree)"),
               Line2D([], [], color="#555555", marker="s", linestyle="none", label="wide_K: K extra branches"),
               Line2D([], [], color="#555555", marker="^", linestyle="none", label="deep_D: D nested sequences")]
    ax.legend(handles=handles, loc="center right", fontsize=9)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    _finish(fig, r, os.path.join(out_dir, "cost_vs_tree_size.png"), written)
    plt.close(fig)


def chart_waiting(r, out_dir, mpl, written, notes):
    plt, Line2D, FuncFormatter = mpl
    mode_colour = MODE_COLOURS
    series = {}
    for mode in MODES:
        pts = [(n, r.get("waiting", mode, n, 0, "time_per_frame")) for n in r.agent_counts("waiting")]
        pts = [(n, t) for n, t in pts if t is not None and t > 0]
        if pts:
            series[mode] = pts
    if not series:
        notes.append("waiting_world.png not written: no waiting-world benchmark in the results")
        return
    fig, ax = plt.subplots(figsize=(8.5, 5.6))
    for mode, pts in series.items():
        xs, ys = zip(*pts)
        ax.plot(xs, ys, MODE_STYLE[mode], marker="o", color=mode_colour[mode], label=mode, linewidth=1.7)
        for x, y in pts:
            ax.annotate(fmt_time(y), (x, y), textcoords="offset points", xytext=(0, 8), ha="center",
                        fontsize=8, color=mode_colour[mode])
    ax.set_xscale("log")
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo / 2, hi * 3)
    lo, hi = ax.get_xlim()
    ax.set_xlim(lo / 1.5, hi * 1.5)
    ax.xaxis.set_major_formatter(_agents_formatter(FuncFormatter))
    ax.yaxis.set_major_formatter(_time_formatter(FuncFormatter))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _p: ""))
    ax.set_xlabel("agents (all waiting: a 1000-hour Wait or an action nobody resumes)")
    ax.set_ylabel("CPU time per frame (log)")
    ax.set_title("Waiting world: cost of a frame in which nothing happens", fontsize=12)
    ax.grid(True, which="major", alpha=0.35)
    ax.legend(loc="upper left", fontsize=10)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    _finish(fig, r, os.path.join(out_dir, "waiting_world.png"), written)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description="Charts and summary.md from ebt_bench_sweep JSON results.")
    ap.add_argument("results", nargs="+", help="Google Benchmark JSON file(s); their benchmarks are merged")
    ap.add_argument("--out-dir", help="where to write the charts and summary.md "
                                      "(default: the first results file's directory)")
    args = ap.parse_args(argv)

    r = Results()
    try:
        r.load(args.results)
    except (OSError, json.JSONDecodeError) as exc:
        print(f"bench_report: cannot read the results: {exc}", file=sys.stderr)
        return 1
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.results[0]))
    os.makedirs(out_dir, exist_ok=True)
    if not r.runs and not r.paired:
        print("bench_report: no ebt_bench_sweep benchmark in the results", file=sys.stderr)
        return 1

    md, text = summary(r, args.results)
    written, notes = [], []
    mpl = load_matplotlib()
    if mpl is not None:
        for chart in (chart_agents, chart_ratio, chart_tree_size, chart_waiting):
            chart(r, out_dir, mpl, written, notes)
    else:
        notes.append("charts not written: matplotlib is missing")
    summary_path = os.path.join(out_dir, "summary.md")
    with open(summary_path, "w", encoding="utf-8") as f:
        f.write(md + "\n")
    written.append(summary_path)

    print("\n".join(text))
    if r.skipped:
        print(f"\n(ignored {len(r.skipped)} benchmarks that are not sweep benchmarks)")
    if notes:
        print()
        for n in notes:
            print(n)
    print("\nwritten:")
    for p in written:
        print(f"  {p}")
    return 0 if mpl is not None else 2


if __name__ == "__main__":
    sys.exit(main())
