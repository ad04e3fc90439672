// A fixed-length run of the parallel bench's worlds (bench/parallel_bench.cpp) for valgrind, at a
// given thread count (docs/benchmarks.md, "Seventh pass"): the same frames at 1 and at 2 threads, so
// that the instructions of the two runs compare the serial step with the parallel phase's code.
//
//   parallel_driver guard_a|wide_64|arena THREADS [AGENTS [FRAMES]]
//
// Builds AGENTS (10,000) agents, steps 3 warm-up frames at THREADS threads, then runs FRAMES (20)
// measured frames in measured_frames(). Run under `valgrind --tool=callgrind --separate-threads=yes`:
// World::step on the main thread plus ParallelState::tick_slots on the workers is the frame's work.
// Prints the state hash after the run (the same at every thread count).
#include "arena_scenario.hpp"
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"

#include <ebt/ebt.hpp>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(name)
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace {

constexpr ebt::Duration kFrame = std::chrono::milliseconds(50);

// The counts of every thread are zeroed before the measured frames and dumped after them (a part file
// of its own per thread: the workers' tasks run outside measured_frames' call).
[[gnu::noinline]] void measured_frames(ebt::World& world, int frames) {
    CALLGRIND_ZERO_STATS;
    for (int f = 0; f < frames; ++f) world.step(kFrame);
    CALLGRIND_DUMP_STATS_AT("measured");
}

[[gnu::noinline]] void measured_arena_frames(ebt::scenarios::Arena& arena, int frames) {
    CALLGRIND_ZERO_STATS;
    for (int f = 0; f < frames; ++f) arena.step();
    CALLGRIND_DUMP_STATS_AT("measured");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s guard_a|wide_64|arena THREADS [AGENTS [FRAMES]]\n", argv[0]);
        return 2;
    }
    const std::string world_name = argv[1];
    const auto threads = static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10));
    const std::size_t n = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 10'000;
    const int frames = argc > 4 ? std::atoi(argv[4]) : 20;
    if (world_name == "arena") {
        ebt::scenarios::ArenaConfig config;
        config.agents = static_cast<int>(n);
        ebt::scenarios::Arena arena(config);
        arena.world().set_threads(threads);
        for (int warm = 0; warm < 3; ++warm) arena.step();
        measured_arena_frames(arena, frames);
        std::printf("state hash %016llx\n", static_cast<unsigned long long>(arena.world().state_hash()));
        return 0;
    }
    ebt::Registry registry;
    ebt::scenarios::register_guard_actions(registry);
    const ebt::Tree tree =
        world_name == "wide_64" ? ebt::scenarios::wide_guard_tree(registry, 64) : ebt::scenarios::guard_tree(registry);
    ebt::World world;
    for (std::size_t i = 0; i < n; ++i) world.spawn(tree, {.seed = i});
    world.set_threads(threads);
    for (int warm = 0; warm < 3; ++warm) world.step(kFrame);
    measured_frames(world, frames);
    std::printf("state hash %016llx\n", static_cast<unsigned long long>(world.state_hash()));
    return 0;
}
