// A fixed-length run of the world_cost benchmark's two ways of running guard_a agents, for valgrind
// (scripts/world_cost_callgrind.sh builds and runs it; docs/benchmarks.md, "The World's own cost").
// Not a Google Benchmark program on purpose: valgrind counts instructions, so the run must be the
// same every time (Google Benchmark picks its iteration counts from timings, and re-creates the
// agents, with their costly first ticks, for each of its rounds).
//
//   world_cost_driver world|direct|churn|sweep [AGENTS [FRAMES [TREE]]]
//
// Creates AGENTS (10,000) agents of TREE (guard_a, the guard tree, by default; wide_K is the sweep's
// wide tree with K guarded branches, e.g. wide_64: docs/benchmarks.md, "The wide tree's hot line"),
// ticks them twice (their first tick starts the
// tree; the second is the first quiet one), then runs FRAMES (50) measured frames inside
// measured_world() or measured_direct(), the functions to collect (--toggle-collect).
// `churn` is the sweep's 1 % change through a World: each frame a ChurnWriter toggles 1 % of the
// agents (two writes each, a guard switch from Patrol to Attack; docs/benchmarks.md, "The lines a
// tick touches") in measured_churn_writes(), then the World steps in measured_churn_step().
// `sweep` is the sweep's own 1 % population (bench/sweep_bench.cpp's Population): every second agent
// starts attacking, so that the writer's toggles go both ways (Patrol -> Attack and back) and half the
// quiet agent-frames are Attack's; the same two measured functions (docs/benchmarks.md, "The switch on
// a cold agent").
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"

#include <ebt/ebt.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr ebt::Duration kFrame = std::chrono::milliseconds(50);

[[gnu::noinline]] void measured_world(ebt::World& world, int frames) {
    for (int f = 0; f < frames; ++f) world.step(kFrame);
}

[[gnu::noinline]] void measured_direct(std::vector<ebt::Agent>& agents, int frames) {
    for (int f = 0; f < frames; ++f)
        for (ebt::Agent& a : agents) a.tick(kFrame);
}

[[gnu::noinline]] void measured_churn_writes(ebt::scenarios::ChurnWriter& churn, ebt::World& world,
                                            const std::vector<ebt::AgentHandle>& handles) {
    churn.write_frame([&](std::size_t i) -> ebt::Agent& { return world.at(handles[i]); });
}

[[gnu::noinline]] void measured_churn_step(ebt::World& world) { world.step(kFrame); }

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || (std::strcmp(argv[1], "world") != 0 && std::strcmp(argv[1], "direct") != 0 &&
                     std::strcmp(argv[1], "churn") != 0 && std::strcmp(argv[1], "sweep") != 0)) {
        std::fprintf(stderr, "usage: %s world|direct|churn|sweep [AGENTS [FRAMES [guard_a|wide_K]]]\n", argv[0]);
        return 2;
    }
    const std::size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10'000;
    const int frames = argc > 3 ? std::atoi(argv[3]) : 50;
    ebt::Registry registry;
    ebt::scenarios::register_guard_actions(registry);
    const char* tree_name = argc > 4 ? argv[4] : "guard_a";
    if (std::strcmp(tree_name, "guard_a") != 0 && std::strncmp(tree_name, "wide_", 5) != 0) {
        std::fprintf(stderr, "%s: the tree is guard_a or wide_K (K guarded branches), not %s\n", argv[0], tree_name);
        return 2;
    }
    const ebt::Tree tree = std::strcmp(tree_name, "guard_a") == 0
                               ? ebt::scenarios::guard_tree(registry)
                               : ebt::scenarios::wide_guard_tree(registry, std::atoi(tree_name + 5));
    if (std::strcmp(argv[1], "world") == 0) {
        ebt::World world;
        for (std::size_t i = 0; i < n; ++i) world.spawn(tree, {.seed = i});
        for (int warm = 0; warm < 2; ++warm) world.step(kFrame);
        measured_world(world, frames);
        std::printf("state hash %016llx\n", static_cast<unsigned long long>(world.state_hash()));
    } else if (std::strcmp(argv[1], "churn") == 0 || std::strcmp(argv[1], "sweep") == 0) {
        ebt::World world;
        std::vector<ebt::AgentHandle> handles;
        for (std::size_t i = 0; i < n; ++i) handles.push_back(world.spawn(tree, {.seed = i}));
        if (std::strcmp(argv[1], "sweep") == 0) {  // as the sweep's Population: half the agents attack
            const auto seen = tree.key<bool>(ebt::scenarios::kEnemySeen);
            for (std::size_t i = 1; i < n; i += 2) world.at(handles[i]).blackboard().set(seen, true);
        }
        ebt::scenarios::ChurnWriter churn(tree, n, 0.01);
        // Two warm-up frames; then each measured frame switches 1 % of the agents from Patrol to Attack
        // (the writer takes the agents in turn: their first toggle), and steps the world.
        for (int warm = 0; warm < 2; ++warm) world.step(kFrame);
        for (int f = 0; f < frames; ++f) {
            measured_churn_writes(churn, world, handles);
            measured_churn_step(world);
        }
        std::printf("state hash %016llx\n", static_cast<unsigned long long>(world.state_hash()));
    } else {
        std::vector<ebt::Agent> agents;
        agents.reserve(n);
        for (std::size_t i = 0; i < n; ++i) agents.emplace_back(tree, ebt::AgentOptions{.seed = i});
        for (int warm = 0; warm < 2; ++warm)
            for (ebt::Agent& a : agents) a.tick(kFrame);
        measured_direct(agents, frames);
    }
    return 0;
}
