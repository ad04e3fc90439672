#!/usr/bin/env bash
# sample_arena_watch_<case>: ebt_arena --tree FILE --watch while FILE is replaced mid-run
# (docs/hot_reload.md). Run by CTest: arena_watch.sh ARENA SOURCE_XML WORK_DIR good|bad
#   good: the guards' tree gets another shape (Patrol under a Sequence): the run prints
#         "reloaded FILE at frame F: 240 guards restarted" (F at a simulated second) and runs to its end;
#   bad:  the file no longer loads (an unknown node): the run prints the loader's error with
#         FILE:line:column, keeps the old tree and ends in the state hash of a run never touched.
# The arena runs in real time (--realtime) so that the file can be replaced while it runs; the file
# is replaced once the arena has printed its first simulated second, and it looks again at every
# later one. Nothing is timed: a slow machine only makes the reload come at a later second.
set -euo pipefail
arena=$1 source_xml=$2 dir=$3 case=$4
mkdir -p "$dir"
tree="$dir/watch_$case.xml" out="$dir/watch_$case.out"
cp "$source_xml" "$tree"
args=(--agents 240 --seconds 6 --seed 3)
"$arena" "${args[@]}" --realtime --tree "$tree" --watch >"$out" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do  # up to 2 minutes for the world to be set up and its first second to pass
    grep -q '^ *1\.0 ' "$out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
grep -q '^ *1\.0 ' "$out" || { cat "$out"; echo "FAIL: the arena did not print its first second"; exit 1; }
if [ "$case" = good ]; then
    sed 's|<Patrol />|<Sequence><Patrol /></Sequence>|' "$source_xml" >"$tree.new"
else
    sed 's|<Patrol />|<Fly />|' "$source_xml" >"$tree.new"
fi
mv "$tree.new" "$tree"  # replaced at once, as an editor saving the file does
status=0
wait "$pid" || status=$?
cat "$out"
[ "$status" = 0 ] || { echo "FAIL: ebt_arena exited with status $status"; exit 1; }
grep -q '^done: 120 frames' "$out" || { echo "FAIL: the run did not go on to its end"; exit 1; }
if [ "$case" = good ]; then
    grep -Eq "^reloaded $tree at frame [1-9][0-9]*0: 240 guards restarted$" "$out" ||
        { echo "FAIL: no reload line"; exit 1; }
    [ "$(grep -c '^reloaded ' "$out")" = 1 ] || { echo "FAIL: more than one reload"; exit 1; }
else
    grep -Eq "^reload of $tree at frame [1-9][0-9]*0 failed, the old tree is kept: $tree:[0-9]+:[0-9]+: .*Fly" "$out" ||
        { echo "FAIL: no load error with file:line:column"; exit 1; }
    grep -q '^reloaded ' "$out" && { echo "FAIL: a bad file was reloaded"; exit 1; }
    # The run went on unchanged: the final state hash of the same run without --watch.
    expected=$("$arena" "${args[@]}" --tree "$source_xml" | grep 'state hash:')
    [ "$(grep 'state hash:' "$out")" = "$expected" ] ||
        { echo "FAIL: the state hash differs from the untouched run's: $expected"; exit 1; }
fi
echo "PASS"
