// The World's own cost per stepped agent (issue 13): the same agents of the same tree, frame after
// frame, once ticked directly by the caller (a std::vector<ebt::Agent>, Agent::tick in a loop) and
// once stepped by a World on one thread (World::step). The difference per agent-frame is what the
// World adds: finding the awake agents, its slots, the tick's time and number, the frame metrics,
// putting agents to sleep (docs/benchmarks.md, "The World's own cost").
//
//   world_cost/guard_a/direct/agents:N   N agents of the guard tree, Patrol Running every frame
//   world_cost/guard_a/world/agents:N    the same N agents spawned into a World
//
// N is 10,000, 100,000 and 1,000,000 (EBT_WORLD_COST_MAX_AGENTS=N leaves out the bigger). Each
// pair runs side by side. Counter ns_per_agent_frame: CPU time per frame / N.
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"

#include <benchmark/benchmark.h>
#include <ebt/ebt.hpp>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace sc = ebt::scenarios;
using namespace std::chrono_literals;

constexpr ebt::Duration kFrame = 50ms;

/// The guard tree's registry and tree, shared by both ways of running it.
struct GuardTree {
    ebt::Registry registry;
    ebt::Tree tree;
    GuardTree() {
        sc::register_guard_actions(registry);
        tree = sc::guard_tree(registry);
    }
};

GuardTree& guard_tree() {
    static GuardTree g;
    return g;
}

void set_counters(benchmark::State& state, std::size_t n) {
    state.counters["ns_per_agent_frame"] =
        benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(n) * 1e-9,
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void direct(benchmark::State& state, std::size_t n) {
    std::vector<ebt::Agent> agents;
    agents.reserve(n);
    for (std::size_t i = 0; i < n; ++i) agents.emplace_back(guard_tree().tree, ebt::AgentOptions{.seed = i});
    for (int warm = 0; warm < 2; ++warm)
        for (ebt::Agent& a : agents) a.tick(kFrame);
    for (auto _ : state)
        for (ebt::Agent& a : agents) a.tick(kFrame);
    set_counters(state, n);
}

void world(benchmark::State& state, std::size_t n) {
    ebt::World w;
    for (std::size_t i = 0; i < n; ++i) w.spawn(guard_tree().tree, {.seed = i});
    for (int warm = 0; warm < 2; ++warm) w.step(kFrame);
    for (auto _ : state) benchmark::DoNotOptimize(w.step(kFrame));
    set_counters(state, n);
}

std::size_t max_agents() {
    const char* v = std::getenv("EBT_WORLD_COST_MAX_AGENTS");
    return v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : 1'000'000;
}

const bool registered = [] {
    for (const std::size_t n : {std::size_t{10'000}, std::size_t{100'000}, std::size_t{1'000'000}}) {
        if (n > max_agents()) continue;
        const std::string size = "/agents:" + std::to_string(n);
        benchmark::RegisterBenchmark(("world_cost/guard_a/direct" + size).c_str(), [n](benchmark::State& s) { direct(s, n); })
            ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("world_cost/guard_a/world" + size).c_str(), [n](benchmark::State& s) { world(s, n); })
            ->Unit(benchmark::kMillisecond);
    }
    return true;
}();

}  // namespace
