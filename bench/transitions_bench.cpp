// What a change costs one agent (issue 13): the three costs of an agent-frame measured directly on
// Agents (no World around them), per agent, beside the machine's floor.
//
//   floor      one indirect call that reads and writes one 64-byte line per "agent": the least any
//              per-agent frame can cost (no engine)
//   quiet      one tick of a guard-tree agent whose Patrol runs and nothing changed (guard_a's frame)
//   move       a completed latent move and the restart after it: Agent::resume(Success), the tick
//              that ends Patrol and the root, and the tick that restarts the root, evaluates the
//              guard and starts the next move (guard_b's cost, two ticks as the semantics say)
//   switch     a guard edge that aborts a branch and starts another: the ChurnWriter's two writes
//              (patrolling <-> attacking) and the tick that acts on them, in the 11-node guard tree
//              and in wide_64 (the guard tree under 64 more guarded branches)
//
// Benchmark names are "<case>/<mode>/agents:<N>". One iteration does the case once for every one of
// the N agents, in order; the counter ns_per_agent is CPU time / (N x iterations): per agent-frame
// (quiet), per completed move (move), per switch (switch).
//
// Instructions and simulated cache misses: each case's measured loop is its own non-inlined function
// (quiet_round, move_round, switch_round, floor_round), so that callgrind can count it alone:
//   EBT_TRANSITIONS_ITERATIONS=20 valgrind --tool=callgrind --cache-sim=yes --dump-instr=no
//     --toggle-collect='*move_round*' build/rel/bin/ebt_bench_transitions
//     --benchmark_filter='^move/event/agents:1000/'    (one command line; with a fixed iteration
//     count the name ends in /iterations:20, so no '$' after the agents)
// then the inclusive Ir / D1 and LL misses of move_round / (20 x 1000) are per move. With
// EBT_TRANSITIONS_ITERATIONS set, every benchmark runs exactly that many iterations once.
// Results: docs/benchmarks.md, "Where the time goes".
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"

#include <benchmark/benchmark.h>
#include <ebt/ebt.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using ebt::Mode;
namespace sc = ebt::scenarios;

constexpr ebt::Duration kFrame = 50ms;

/// N agents of one tree in one mode, ticked directly; kept between Google Benchmark's runs of the
/// same benchmark (rebuilt when the benchmark changes).
struct Population {
    std::string name;
    ebt::Registry registry;
    std::vector<ebt::ResumeHandle> moves;  // the latest move of agent i (latent Patrol), by seed
    ebt::Tree tree;
    std::vector<ebt::Agent> agents;
    ebt::Key<bool> enemy_seen, enemy_dead;

    Population(std::string key, bool latent, int wide, std::size_t n, Mode mode) : name(std::move(key)) {
        if (latent) {
            sc::register_fight_actions(registry);
            moves.resize(n);
            registry.add_latent_action("Patrol", [this](ebt::ActionContext& ctx, const ebt::ResumeHandle& move) {
                moves[ctx.agent().seed()] = move;
            });
        } else {
            sc::register_guard_actions(registry);
        }
        tree = wide > 0 ? sc::wide_guard_tree(registry, wide) : sc::guard_tree(registry);
        enemy_seen = tree.key<bool>(sc::kEnemySeen);
        enemy_dead = tree.key<bool>(sc::kEnemyDead);
        agents.reserve(n);
        for (std::size_t i = 0; i < n; ++i) agents.emplace_back(tree, ebt::AgentOptions{.mode = mode, .seed = i});
        // Two frames outside the measurement: the first enters the branches, the second is quiet.
        for (int f = 0; f < 2; ++f)
            for (ebt::Agent& a : agents) a.tick(kFrame);
    }
};

std::unique_ptr<Population> g_population;

Population& population(const std::string& key, bool latent, int wide, std::size_t n, Mode mode) {
    if (!g_population || g_population->name != key) {
        g_population.reset();
        g_population = std::make_unique<Population>(key, latent, wide, n, mode);
    }
    return *g_population;
}

[[gnu::noinline]] void quiet_round(Population& p) {
    for (ebt::Agent& a : p.agents) a.tick(kFrame);
}

[[gnu::noinline]] void move_round(Population& p) {
    for (std::size_t i = 0; i < p.agents.size(); ++i) {
        ebt::Agent& a = p.agents[i];
        a.resume(p.moves[i], ebt::Status::Success);
        a.tick(kFrame);  // Patrol ends with Success, and with it the root
        a.tick(kFrame);  // the root restarts: guard evaluated, the next move begins
    }
}

[[gnu::noinline]] void switch_round(Population& p) {
    for (ebt::Agent& a : p.agents) {
        ebt::Blackboard& bb = a.blackboard();
        if (bb.get(p.enemy_seen)) {  // attacking: the enemy is killed
            bb.set(p.enemy_seen, false);
            bb.set(p.enemy_dead, true);
        } else {  // patrolling: an enemy appears
            bb.set(p.enemy_dead, false);
            bb.set(p.enemy_seen, true);
        }
        a.tick(kFrame);
    }
}

/// The floor: one 64-byte line per agent, read and written through one indirect call.
struct alignas(64) Line {
    std::uint64_t (*step)(Line&);
    std::uint64_t words[7];
};
[[gnu::noinline]] std::uint64_t step_line(Line& l) { return ++l.words[0] + l.words[6]; }

[[gnu::noinline]] std::uint64_t floor_round(std::vector<Line>& lines) {
    std::uint64_t sum = 0;
    for (Line& l : lines) sum += l.step(l);
    return sum;
}

void report(benchmark::State& state, std::size_t n) {
    state.counters["ns_per_agent"] =
        benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()) * 1e-9,
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["agents"] = static_cast<double>(n);
}

void BM_Floor(benchmark::State& state, std::size_t n) {
    std::vector<Line> lines(n);
    for (Line& l : lines) l.step = step_line;
    for (auto _ : state) benchmark::DoNotOptimize(floor_round(lines));
    report(state, n);
}

void BM_Quiet(benchmark::State& state, std::string key, std::size_t n, Mode mode) {
    Population& p = population(key, false, 0, n, mode);
    for (auto _ : state) quiet_round(p);
    report(state, n);
    state.counters["bytes_per_agent"] = static_cast<double>(p.agents.front().memory_bytes());
}

void BM_Move(benchmark::State& state, std::string key, std::size_t n, Mode mode) {
    Population& p = population(key, true, 0, n, mode);
    for (auto _ : state) move_round(p);
    report(state, n);
}

void BM_Switch(benchmark::State& state, std::string key, int wide, std::size_t n, Mode mode) {
    Population& p = population(key, false, wide, n, mode);
    for (auto _ : state) switch_round(p);
    report(state, n);
    state.counters["bytes_per_agent"] = static_cast<double>(p.agents.front().memory_bytes());
}

const char* mode_name(Mode m) { return m == Mode::Polling ? "polling" : "event"; }

[[maybe_unused]] const bool registered = [] {
    const char* fixed = std::getenv("EBT_TRANSITIONS_ITERATIONS");
    const long long iterations = fixed && *fixed ? std::strtoll(fixed, nullptr, 10) : 0;
    const auto setup = [&](benchmark::internal::Benchmark* b) {
        b->Unit(benchmark::kMicrosecond);
        if (iterations > 0) b->Iterations(iterations);
    };
    for (const std::size_t n : {std::size_t{1'000}, std::size_t{10'000}}) {
        const std::string agents = "/agents:" + std::to_string(n);
        setup(benchmark::RegisterBenchmark(("floor" + agents).c_str(), BM_Floor, n));
        for (const Mode m : {Mode::Event, Mode::Polling}) {
            const std::string tail = std::string("/") + mode_name(m) + agents;
            setup(benchmark::RegisterBenchmark(("quiet" + tail).c_str(), BM_Quiet, "quiet" + tail, n, m));
            setup(benchmark::RegisterBenchmark(("move" + tail).c_str(), BM_Move, "move" + tail, n, m));
            setup(benchmark::RegisterBenchmark(("switch" + tail).c_str(), BM_Switch, "switch" + tail, 0, n, m));
            setup(benchmark::RegisterBenchmark(("switch_wide_64" + tail).c_str(), BM_Switch, "switch_wide_64" + tail, 64,
                                               n, m));
        }
    }
    return true;
}();

}  // namespace
