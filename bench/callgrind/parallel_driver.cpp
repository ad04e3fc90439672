// A fixed-length run of the parallel bench's worlds (bench/parallel_bench.cpp) for valgrind, at a
// given thread count (docs/benchmarks.md, "Seventh pass"): the same frames at 1 and at 2 threads, so
// that the instructions of the two runs compare the serial step with the parallel phase's code.
//
//   parallel_driver guard_a|wide_64|arena|guard_b THREADS [AGENTS [FRAMES [WARMUP]]]
//
// Builds AGENTS (10,000) agents, steps WARMUP (3; guard_b 100) warm-up frames at THREADS threads, then
// runs FRAMES (20) measured frames in measured_frames(). Run under `valgrind --tool=callgrind
// --separate-threads=yes`: World::step on the main thread plus ParallelState::tick_slots on the workers
// is the frame's work. guard_b is the parallel bench's bursty world (latent moves whose lengths take
// three values a frame; the game's scan resumes the moves due before each frame, one World::resume
// each, inside the measured frames: subtract World::resume; its warm-up runs at one thread, so that the
// workers' counts, written at exit, are the measured frames'). Prints the agents stepped in the measured
// frames and the state hash after the run (the same at every thread count).
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
#include <vector>

namespace {

constexpr ebt::Duration kFrame = std::chrono::milliseconds(50);

// The counts of every thread are zeroed before the measured frames and dumped after them (a part file
// of its own per thread: the workers' tasks run outside measured_frames' call).
[[gnu::noinline]] void measured_frames(ebt::World& world, int frames) {
    CALLGRIND_ZERO_STATS;
    for (int f = 0; f < frames; ++f) world.step(kFrame);
    CALLGRIND_DUMP_STATS_AT("measured");
}

/// One agent's pending latent move (guard_b): written only by its own agent's Patrol (as the bench's).
struct Move {
    ebt::ResumeHandle handle;
    std::uint64_t due_frame = 0;
    bool pending = false;
};

/// guard_b's frames: the game's scan resumes the moves due, then World::step. Returns the agents stepped.
[[gnu::noinline]] std::uint64_t guard_b_frames(ebt::World& world, std::vector<Move>& moves, std::uint64_t& frame, int frames,
                                               bool measured) {
    if (measured) CALLGRIND_ZERO_STATS;
    std::uint64_t stepped = 0;
    for (int f = 0; f < frames; ++f, ++frame) {
        for (Move& move : moves) {
            if (move.pending && move.due_frame <= frame) {
                move.pending = false;
                world.resume(move.handle, ebt::Status::Success);
            }
        }
        stepped += world.step(kFrame).agents_stepped;
    }
    if (measured) CALLGRIND_DUMP_STATS_AT("measured");
    return stepped;
}

[[gnu::noinline]] void measured_arena_frames(ebt::scenarios::Arena& arena, int frames) {
    CALLGRIND_ZERO_STATS;
    for (int f = 0; f < frames; ++f) arena.step();
    CALLGRIND_DUMP_STATS_AT("measured");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s guard_a|wide_64|arena|guard_b THREADS [AGENTS [FRAMES [WARMUP]]]\n", argv[0]);
        return 2;
    }
    const std::string world_name = argv[1];
    const auto threads = static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10));
    const std::size_t n = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 10'000;
    const int frames = argc > 4 ? std::atoi(argv[4]) : 20;
    const int warmup = argc > 5 ? std::atoi(argv[5]) : world_name == "guard_b" ? 100 : 3;
    if (world_name == "guard_b") {
        ebt::Registry registry;
        ebt::scenarios::register_fight_actions(registry);
        registry.add_latent_action("Patrol", [](ebt::ActionContext& ctx, const ebt::ResumeHandle& handle) {
            Move& move = ctx.user<Move>();
            move.handle = handle;
            move.due_frame = ctx.tick() + 30 + (ctx.agent_handle().index * 7 + ctx.tick()) % 21;
            move.pending = true;
        });
        const ebt::Tree tree = ebt::scenarios::guard_tree(registry);
        std::vector<Move> moves(n);
        ebt::World world;
        for (std::size_t i = 0; i < n; ++i) world.spawn(tree, {.seed = i, .user = &moves[i]});
        // Warmed up at one thread (the same frames, the same answer): the workers start with the measured
        // frames, so that a worker's part file (written at exit) holds those frames only.
        std::uint64_t frame = 0;
        guard_b_frames(world, moves, frame, warmup, false);
        world.set_threads(threads);
        const std::uint64_t stepped = guard_b_frames(world, moves, frame, frames, true);
        std::printf("agents stepped %llu state hash %016llx\n", static_cast<unsigned long long>(stepped),
                    static_cast<unsigned long long>(world.state_hash()));
        return 0;
    }
    if (world_name == "arena") {
        ebt::scenarios::ArenaConfig config;
        config.agents = static_cast<int>(n);
        ebt::scenarios::Arena arena(config);
        arena.world().set_threads(threads);
        for (int warm = 0; warm < warmup; ++warm) arena.step();
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
    for (int warm = 0; warm < warmup; ++warm) world.step(kFrame);
    measured_frames(world, frames);
    std::printf("state hash %016llx\n", static_cast<unsigned long long>(world.state_hash()));
    return 0;
}
