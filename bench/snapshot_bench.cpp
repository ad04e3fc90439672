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
//
// Time per agent: the reported time divided by 100,000 (items_per_second is agents per second).
#include "guard_scenario.hpp"

#include <ebt/snapshot.hpp>

#include <benchmark/benchmark.h>

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

}  // namespace
