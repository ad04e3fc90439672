// A fixed-length run of the sweep's guard_b world (latent moves resumed by a MovementSystem), for
// valgrind (scripts/moves_callgrind.sh builds and runs it; docs/benchmarks.md, "Where the time
// goes"). Not a Google Benchmark program, so that the run is the same every time: valgrind counts
// instructions, which the machine's load does not move.
//
//   moves_driver event|polling [AGENTS [WARMUP [FRAMES]]]
//
// Spawns AGENTS (10,000) guard_b agents into a World as bench/sweep_bench.cpp does (seed = index,
// nothing written), runs WARMUP (200) frames so that the moves, which all begin in the first frame,
// spread over the frames, then FRAMES (100) measured frames inside measured_frames(), the function to
// collect (--toggle-collect). Each frame is the sweep's: MovementSystem::step, then World::step.
// Prints the number of moves the measured frames completed and the world's state hash.
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"

#include <ebt/ebt.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr ebt::Duration kFrame = std::chrono::milliseconds(50);

struct Totals {
    std::size_t resumed = 0;
    std::uint64_t stepped = 0;
};

[[gnu::noinline]] Totals measured_frames(ebt::scenarios::MovementSystem& movement, ebt::World& world, int frames) {
    Totals t;
    for (int f = 0; f < frames; ++f) {
        t.resumed += movement.step(world);
        t.stepped += world.step(kFrame).agents_stepped;
    }
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || (std::strcmp(argv[1], "event") != 0 && std::strcmp(argv[1], "polling") != 0)) {
        std::fprintf(stderr, "usage: %s event|polling [AGENTS [WARMUP [FRAMES]]]\n", argv[0]);
        return 2;
    }
    const ebt::Mode mode = std::strcmp(argv[1], "event") == 0 ? ebt::Mode::Event : ebt::Mode::Polling;
    const std::size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10'000;
    const int warmup = argc > 3 ? std::atoi(argv[3]) : 200;
    const int frames = argc > 4 ? std::atoi(argv[4]) : 100;
    ebt::Registry registry;
    ebt::scenarios::MovementSystem movement;
    ebt::scenarios::register_latent_guard_actions(registry, movement);
    const ebt::Tree tree = ebt::scenarios::guard_tree(registry);
    ebt::World world;
    for (std::size_t i = 0; i < n; ++i) world.spawn(tree, {.mode = mode, .seed = i});
    for (int f = 0; f < warmup; ++f) {
        movement.step(world);
        world.step(kFrame);
    }
    const Totals t = measured_frames(movement, world, frames);
    std::printf("moves completed %zu agents stepped %llu state hash %016llx\n", t.resumed,
                static_cast<unsigned long long>(t.stepped), static_cast<unsigned long long>(world.state_hash()));
    return 0;
}
