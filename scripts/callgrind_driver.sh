# shellcheck shell=bash
# Sourced by the *_callgrind.sh scripts (not meant to be run directly).
#
# ebt_build_callgrind_driver SOURCE BUILD_DIR OUTPUT: compiles one of bench/callgrind/*.cpp against
# the Release libebt.a and scenarios/libebt_scenarios.a in BUILD_DIR (with the library's own link
# dependencies, as CMakeLists.txt links them) into the program OUTPUT. Run from the repository root.
ebt_build_callgrind_driver() {
  local source="$1" build="$2" output="$3"
  g++ -std=c++20 -O2 -DNDEBUG -Iinclude -I"$build/include" -Iscenarios "$source" -o "$output" \
    "$build/scenarios/libebt_scenarios.a" "$build/libebt.a" -ltbb -lpugixml -lpthread
}
