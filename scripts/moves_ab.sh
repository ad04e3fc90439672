#!/usr/bin/env bash
# Time a completed latent move through a World with two builds of the library, in interleaved rounds,
# for a change too small for one run to show on a shared host (docs/benchmarks.md, "The ninth pass
# on a move"). Wall time, so it is not repeatable the way the callgrind scripts are: read the
# summary, not one round.
#
#   bash scripts/moves_ab.sh BUILD_A BUILD_B [ROUNDS [KIND [AGENTS [FRAMES]]]]
#
# BUILD_A and BUILD_B must each hold a Release libebt.a and scenarios/libebt_scenarios.a (build the
# target ebt_bench_transitions there first). Builds bench/callgrind/moves_timing.cpp against each,
# checks that both end in the same state hash, then runs them one after the other ROUNDS (12) times,
# `moves_timing KIND AGENTS FRAMES` (spread 10000 600), and prints per build the nanoseconds per
# agent-frame: the smallest, the mean of the fastest quarter of the rounds, the median; then B / A
# per round (the two runs of a round are seconds apart) and their median.
#
# Why the fastest quarter: on the project's shared VM the same binary measured in two states for
# minutes at a time (2.2-2.4 and 3.2-3.6 ns an agent-frame), and the slow state is the host's, not
# the code's; the rounds each build had in the fast state are the ones to compare.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/callgrind_driver.sh
source scripts/callgrind_driver.sh
if (($# < 2)); then
  sed -n '7,14p' "$0" >&2
  exit 2
fi
build_a="$1"
build_b="$2"
rounds="${3:-12}"
kind="${4:-spread}"
agents="${5:-10000}"
frames="${6:-600}"
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ && "$agents" =~ ^[1-9][0-9]*$ && "$frames" =~ ^[1-9][0-9]*$ ]]; then
  echo "ROUNDS, AGENTS and FRAMES must be positive integers (got $rounds, $agents, $frames)" >&2
  exit 2
fi
case "$kind" in
  spread | phase | split) ;;
  *) echo "KIND must be spread, phase or split (got $kind)" >&2; exit 2 ;;
esac
for build in "$build_a" "$build_b"; do
  if [[ ! -f "$build/libebt.a" || ! -f "$build/scenarios/libebt_scenarios.a" || ! -d "$build/include" ]]; then
    echo "$build: not a Release build directory with libebt.a, scenarios/libebt_scenarios.a and include/" \
      "(cmake --build $build --target ebt_bench_transitions)" >&2
    exit 2
  fi
done
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
ebt_build_callgrind_driver bench/callgrind/moves_timing.cpp "$build_a" "$out/a"
ebt_build_callgrind_driver bench/callgrind/moves_timing.cpp "$build_b" "$out/b"
hash_of() { "$1" "$kind" "$agents" 20 | sed -n 's/.*state hash \([0-9a-f]*\).*/\1/p'; }
hash_a="$(hash_of "$out/a")"
hash_b="$(hash_of "$out/b")"
if [[ -z "$hash_a" || -z "$hash_b" ]]; then
  echo "moves_timing printed no state hash (see its output above)" >&2
  exit 1
fi
if [[ "$hash_a" != "$hash_b" ]]; then
  echo "the two builds end in different states (hash $hash_a against $hash_b): not the same behaviour" >&2
  exit 1
fi
for ((r = 1; r <= rounds; ++r)); do
  for side in a b; do
    printf '%s %s\n' "$side" "$("$out/$side" "$kind" "$agents" "$frames")"
  done
done >"$out/rounds.txt"
python3 - "$out/rounds.txt" "$build_a" "$build_b" <<'PY'
import re, statistics, sys
rounds = {"a": [], "b": []}
for line in open(sys.argv[1]):
    m = re.match(r"([ab]) .*per agent-frame ([\d.]+) ns", line)
    if m: rounds[m.group(1)].append(float(m.group(2)))
for side, build in (("a", sys.argv[2]), ("b", sys.argv[3])):
    v = sorted(rounds[side])
    quarter = v[:max(1, len(v) // 4)]
    print(f"{side} ({build}): ns per agent-frame: smallest {v[0]:.3f}, fastest quarter {statistics.mean(quarter):.3f}, "
          f"median {statistics.median(v):.3f} ({len(v)} rounds)")
ratios = [b / a for a, b in zip(rounds["a"], rounds["b"])]
print("b / a per round: " + " ".join(f"{r:.3f}" for r in ratios) + f"; median {statistics.median(ratios):.3f}")
PY
