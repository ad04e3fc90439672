#!/usr/bin/env bash
# Run the polling vs event sweep (bench/sweep_bench.cpp) and turn it into charts and tables.
#
#   bash scripts/bench.sh                 # the short sweep: every configuration once, ~1-2 minutes
#   bash scripts/bench.sh --full          # the published figures: 3 repetitions, longer runs (~7 min)
#   bash scripts/bench.sh --filter REGEX  # only the benchmarks whose name matches REGEX
#   bash scripts/bench.sh --out DIR       # write results there (default: build/bench-results)
#
# Installs missing Debian packages (those of the build, plus python3-matplotlib for the charts),
# configures a Release build in build/bench (EBT_BENCH_BUILD_DIR overrides), builds only
# ebt_bench_sweep, runs it with --benchmark_out, then scripts/bench_report.py writes into the
# output directory: sweep-<UTC time>.json, four PNG charts and summary.md. Timings are CPU time on
# this machine; compare modes only within one run (docs/benchmarks.md).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/deps.sh
source scripts/deps.sh

full=0
filter=""
out_dir="build/bench-results"
while (($#)); do
  case "$1" in
    --full) full=1 ;;
    --filter) filter="${2:?--filter needs a regex}"; shift ;;
    --out) out_dir="${2:?--out needs a directory}"; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) ebt_log "unknown option: $1 (see --help)"; exit 2 ;;
  esac
  shift
done

build_dir="${EBT_BENCH_BUILD_DIR:-build/bench}"
jobs="${EBT_JOBS:-$(ebt_jobs)}"

# One call, so that a fresh machine runs apt-get update once.
mapfile -t packages < <(ebt_required_packages)
ebt_ensure_packages "${packages[@]}" python3-matplotlib

ebt_log "configuring $build_dir (Release)"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DEBT_BUILD_BENCH=ON -DEBT_BUILD_TESTS=OFF \
  -DEBT_BUILD_SAMPLES=OFF -DEBT_SANITIZE= >&2
ebt_log "building ebt_bench_sweep"
cmake --build "$build_dir" --target ebt_bench_sweep --parallel "$jobs" >&2

mkdir -p "$out_dir"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
json="$out_dir/sweep-$stamp.json"
args=(--benchmark_out="$json" --benchmark_out_format=json)
if ((full)); then
  args+=(--benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true)
else
  args+=(--benchmark_min_time=0.05)
fi
[[ -n "$filter" ]] && args+=(--benchmark_filter="$filter")

ebt_log "running $build_dir/bin/ebt_bench_sweep ${args[*]}"
start=$SECONDS
"$build_dir/bin/ebt_bench_sweep" "${args[@]}" >&2
ebt_log "sweep took $((SECONDS - start)) s"

# Debian's python3 has python3-matplotlib; another python3 first on PATH may not.
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3
"$python" scripts/bench_report.py "$json" --out-dir "$out_dir"
ebt_log "results: $json; charts and summary.md in $out_dir"
