// The seeds' guard tree scenario, first version: N agents of the guard tree
// (scenarios/guard_scenario.hpp), every agent ticked once per frame with Agent::tick (no World), in
// both modes, side by side (for each N, the polling run is followed by the event run).
//
//   BM_GuardQuiet/{polling,event}/N         quiet world: every agent patrols (Patrol returns Running
//                                           every frame), nothing is written
//   BM_GuardQuietAttack/{polling,event}/N   quiet world: every agent attacks (enemy_seen set before
//                                           the first tick; Attack returns Running every frame)
//   BM_GuardChurn1pct/{polling,event}/N     1% change rate: each frame, 1% of the agents (agent i in
//                                           frames where (i + frame) % 100 == 0, so each agent every
//                                           100 frames) get blackboard writes that toggle enemy_seen:
//                                             patrolling -> enemy_dead=false, enemy_seen=true
//                                                           (a false -> true edge: Attack)
//                                             attacking  -> enemy_seen=false, enemy_dead=true
//                                                           (the Monitor fails: back to Patrol)
//                                           Half the agents start attacking, so the mix stays half
//                                           and half. Toggling enemy_seen alone would not do: once
//                                           attacking, enemy_seen=false changes nothing (guards act
//                                           on edges; docs/semantics.md) and the world would end up
//                                           all attacking.
//
// One iteration is one frame of N agents (plus the frame's writes). Counters:
//   time_per_agent_frame    CPU time per agent per frame (console: "29.4ns"; JSON: in seconds)
//   items_per_second        agent-frames per second
//   guards_per_agent_frame  guard/condition evaluations per agent-frame (AgentStats)
//   updates_per_agent_frame leaf updates per agent-frame
//   writes_per_agent_frame  (churn) blackboard writes per agent-frame: 0.02 (two writes per toggle)
//   attacking_share         (churn) the share of agents attacking after the run (~0.5)
// Results and how to run them: docs/benchmarks.md.
#include "guard_scenario.hpp"

#include <benchmark/benchmark.h>
#include <ebt/ebt.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using ebt::Agent;
using ebt::Mode;

constexpr ebt::Duration kFrame = 50ms;
constexpr ebt::NodeIndex kAttackNode = 9;  // see the tree listing in scenarios/guard_scenario.hpp

enum class World : std::uint8_t { QuietPatrol, QuietAttack, Churn1pct };

struct Population {
    ebt::Registry registry;
    ebt::Tree tree;
    std::vector<Agent> agents;
    ebt::Key<bool> enemy_seen;
    ebt::Key<bool> enemy_dead;

    Population(std::size_t n, Mode mode, World world) {
        ebt::scenarios::register_guard_actions(registry);
        tree = ebt::scenarios::guard_tree(registry);
        enemy_seen = tree.key<bool>(ebt::scenarios::kEnemySeen);
        enemy_dead = tree.key<bool>(ebt::scenarios::kEnemyDead);
        agents.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            ebt::AgentOptions options;
            options.mode = mode;
            options.seed = i;
            Agent& agent = agents.emplace_back(tree, options);
            const bool attacking = world == World::QuietAttack || (world == World::Churn1pct && i % 2 == 1);
            if (attacking) agent.blackboard().set(enemy_seen, true);
            // Two frames outside the measurement: the first enters Patrol (or Attack), the second
            // evaluates (event mode) the guards that became live on the first, once.
            agent.tick(kFrame);
            agent.tick(kFrame);
        }
    }

    std::uint64_t total_guards() const {
        std::uint64_t sum = 0;
        for (const Agent& a : agents) sum += a.stats().guards_evaluated;
        return sum;
    }
    std::uint64_t total_updates() const {
        std::uint64_t sum = 0;
        for (const Agent& a : agents) sum += a.stats().updates;
        return sum;
    }
};

void BM_Guard(benchmark::State& state, Mode mode, World world) {
    const auto n = static_cast<std::size_t>(state.range(0));
    Population pop(n, mode, world);
    const std::uint64_t guards_before = pop.total_guards();
    const std::uint64_t updates_before = pop.total_updates();
    std::uint64_t frame = 0;
    std::uint64_t writes = 0;

    for (auto _ : state) {
        if (world == World::Churn1pct) {
            for (std::size_t i = (100 - frame % 100) % 100; i < n; i += 100) {
                ebt::Blackboard& bb = pop.agents[i].blackboard();
                if (bb.get(pop.enemy_seen)) {  // attacking: the enemy is killed
                    bb.set(pop.enemy_seen, false);
                    bb.set(pop.enemy_dead, true);
                } else {  // patrolling: an enemy appears
                    bb.set(pop.enemy_dead, false);
                    bb.set(pop.enemy_seen, true);
                }
                writes += 2;
            }
        }
        for (Agent& agent : pop.agents) benchmark::DoNotOptimize(agent.tick(kFrame));
        benchmark::ClobberMemory();
        ++frame;
    }

    const double agent_frames = static_cast<double>(n) * static_cast<double>(state.iterations());
    state.SetItemsProcessed(static_cast<std::int64_t>(n) * state.iterations());
    // Agent-frames per second of CPU time, inverted: seconds per agent-frame.
    state.counters["time_per_agent_frame"] =
        benchmark::Counter(agent_frames, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["guards_per_agent_frame"] = static_cast<double>(pop.total_guards() - guards_before) / agent_frames;
    state.counters["updates_per_agent_frame"] = static_cast<double>(pop.total_updates() - updates_before) / agent_frames;
    if (world == World::Churn1pct) {
        state.counters["writes_per_agent_frame"] = static_cast<double>(writes) / agent_frames;
        std::size_t attacking = 0;
        for (const Agent& a : pop.agents) attacking += a.status(kAttackNode) == ebt::Status::Running ? 1 : 0;
        state.counters["attacking_share"] = static_cast<double>(attacking) / static_cast<double>(n);
    } else {
        const ebt::Status expected = world == World::QuietAttack ? ebt::Status::Running : ebt::Status::Invalid;
        for (const Agent& a : pop.agents)
            if (a.status(kAttackNode) != expected) {
                state.SkipWithError("an agent of the quiet world is not in its expected branch");
                break;
            }
    }
}

// Registered by hand so that each polling run is followed by the event run of the same world and N.
[[maybe_unused]] const bool registered = [] {
    struct Named {
        const char* name;
        World world;
    };
    const Named worlds[] = {{"BM_GuardQuiet", World::QuietPatrol},
                            {"BM_GuardQuietAttack", World::QuietAttack},
                            {"BM_GuardChurn1pct", World::Churn1pct}};
    for (const Named& w : worlds)
        for (const std::int64_t n : {1, 100, 1000, 10000})
            for (const Mode mode : {Mode::Polling, Mode::Event}) {
                const std::string name = std::string(w.name) + (mode == Mode::Polling ? "/polling" : "/event");
                benchmark::RegisterBenchmark(name.c_str(), BM_Guard, mode, w.world)
                    ->Arg(n)
                    ->Unit(benchmark::kMicrosecond);
            }
    return true;
}();

}  // namespace
