// What snapshots cost (docs/snapshots.md, "Cost"): saving and restoring 100,000 agents of the seeds'
// guard tree, mid-fight (a third of them attacking, the others patrolling), in event mode. Run it
// once on a quiet machine; read times as ratios within one run.
//
//   BM_SaveAgents/100000      save_agents() of the whole crowd into one snapshot (the tree identified
//                             once); counters: bytes per agent, the snapshot's size
//   BM_RestoreAgents/100000   restore_agents() of that snapshot (checks included) and destroying the
//                             agents again
//   BM_SaveAgent              save_agent() of one agent: a whole file per agent, its tree's structural
//                             hash computed each time (what a squad snapshot saves)
//   BM_RestoreWorld/100000    restore_world() of a World of 100,000 such agents into a new World (the
//                             agents' state blocks move into the World's pool) and destroying it
//   BM_WorldFrame/spawned, BM_WorldFrame/restored
//                             a frame (World::step) of the saved World, and of the World restored from
//                             it: a restored World steps as fast as the one it was saved from
//
// Time per agent: the reported time divided by 100,000 (items_per_second is agents per second).
#include "guard_scenario.hpp"

#include <ebt/snapshot.hpp>
#include <ebt/world.hpp>

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

namespace {

using namespace ebt;
using namespace std::chrono_literals;

const Tree& guard_tree() {
    static const Registry registry = [] {
        Registry r;
        scenarios::register_guard_actions(r);
        return r;
    }();
    static const Tree tree = scenarios::guard_tree(registry);
    return tree;
}

std::vector<Agent> crowd(std::size_t n) {
    std::vector<Agent> agents;
    agents.reserve(n);
    for (std::size_t i = 0; i < n; ++i) agents.emplace_back(guard_tree(), AgentOptions{.seed = i});
    for (int frame = 0; frame < 4; ++frame)
        for (std::size_t i = 0; i < n; ++i) {
            if (frame == 1 && i % 3 == 0) agents[i].blackboard().set(scenarios::kEnemySeen, true);
            agents[i].tick(50ms);
        }
    return agents;
}

std::vector<const Agent*> pointers(const std::vector<Agent>& agents) {
    std::vector<const Agent*> p;
    p.reserve(agents.size());
    for (const Agent& a : agents) p.push_back(&a);
    return p;
}

void BM_SaveAgents(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const std::vector<Agent> agents = crowd(n);
    const std::vector<const Agent*> squad = pointers(agents);
    std::size_t bytes = 0;
    for (auto _ : state) {
        std::vector<std::byte> snapshot = save_agents(squad);
        bytes = snapshot.size();
        benchmark::DoNotOptimize(snapshot.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
    state.counters["bytes_per_agent"] = static_cast<double>(bytes) / static_cast<double>(n);
    state.counters["snapshot_MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_SaveAgents)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_RestoreAgents(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const std::vector<std::byte> snapshot = save_agents(pointers(crowd(n)));
    const std::vector<Tree> trees{guard_tree()};
    for (auto _ : state) {
        std::vector<Agent> restored = restore_agents(trees, snapshot);
        benchmark::DoNotOptimize(restored.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_RestoreAgents)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_SaveAgent(benchmark::State& state) {
    std::vector<Agent> one = crowd(1);
    std::size_t bytes = 0;
    for (auto _ : state) {
        std::vector<std::byte> snapshot = save_agent(one[0]);
        bytes = snapshot.size();
        benchmark::DoNotOptimize(snapshot.data());
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_SaveAgent);

/// A World of `n` guard agents four frames into the same fight as crowd().
std::unique_ptr<World> crowd_world(std::size_t n) {
    auto world = std::make_unique<World>();
    std::vector<AgentHandle> handles;
    handles.reserve(n);
    for (std::size_t i = 0; i < n; ++i) handles.push_back(world->spawn(guard_tree(), SpawnOptions{.seed = i}));
    for (int frame = 0; frame < 4; ++frame) {
        if (frame == 1)
            for (std::size_t i = 0; i < n; i += 3) world->at(handles[i]).blackboard().set(scenarios::kEnemySeen, true);
        world->step(50ms);
    }
    return world;
}

void BM_RestoreWorld(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const std::vector<std::byte> snapshot = save_world(*crowd_world(n));
    const std::vector<Tree> trees{guard_tree()};
    for (auto _ : state) {
        World restored;
        restore_world(restored, trees, snapshot);
        benchmark::DoNotOptimize(&restored);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
    state.counters["bytes_per_agent"] = static_cast<double>(snapshot.size()) / static_cast<double>(n);
}
BENCHMARK(BM_RestoreWorld)->Arg(100000)->Unit(benchmark::kMillisecond);

/// range(0) 0: the World the agents were spawned into; 1: a World restored from its snapshot.
void BM_WorldFrame(benchmark::State& state) {
    constexpr std::size_t n = 100000;
    std::unique_ptr<World> world = crowd_world(n);
    if (state.range(0) == 1) {
        const std::vector<std::byte> snapshot = save_world(*world);
        world = std::make_unique<World>();  // the saved World is gone first, as in a new process
        const std::vector<Tree> trees{guard_tree()};
        restore_world(*world, trees, snapshot);
    }
    for (auto _ : state) world->step(50ms);
    // Seconds per agent-frame (shown as e.g. "25n": 25 ns).
    state.counters["time_per_agent_frame"] = benchmark::Counter(static_cast<double>(state.iterations() * n),
                                                                benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_WorldFrame)->ArgName("restored")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
