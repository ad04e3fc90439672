// World::step's FrameMetrics counters (behaviors_updated, guards_evaluated, events_handled,
// timers_fired) are what the stepped agents' own stats (Agent::stats) grew by during the frame: the
// agents count into the world's metrics as they tick (issue 13), and the totals must be those of
// reading each agent's counters before and after its tick, in both modes and at every thread count.
#include "guard_scenario.hpp"

#include <ebt/ebt.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

namespace sc = ebt::scenarios;

/// What an agent's stats add up to over a set of agents.
struct Counts {
    std::uint64_t updates = 0, guards = 0, visited = 0, timers = 0;
    friend Counts operator-(const Counts& a, const Counts& b) {
        return {a.updates - b.updates, a.guards - b.guards, a.visited - b.visited, a.timers - b.timers};
    }
};

Counts sum_stats(const World& world, const std::vector<AgentHandle>& handles) {
    Counts c;
    for (const AgentHandle h : handles) {
        const AgentStats& s = world.agent(h)->stats();
        c.updates += s.updates;
        c.guards += s.guards_evaluated;
        c.visited += s.nodes_visited;
        c.timers += s.timers_fired;
    }
    return c;
}

/// Guard trees whose Scout action writes its own agent's enemy_seen key during its tick (so that the
/// guards reading it are evaluated inside that tick), plus the plain guard tree and a tree that waits.
struct Trees {
    Registry registry;
    Tree guard, scout, waiter;
    Trees() {
        sc::register_fight_actions(registry);
        ActionSpec patrol;
        patrol.update = [](ActionContext&) { return Status::Running; };
        registry.add_action("Patrol", patrol);
        ActionSpec scout_spec;
        scout_spec.update = [](ActionContext& ctx) {
            if (ctx.tick() % 3 == 0) ctx.blackboard().set(sc::kEnemySeen, !ctx.blackboard().get<bool>(sc::kEnemySeen));
            return Status::Running;
        };
        registry.add_action("Scout", scout_spec);
        guard = sc::guard_tree(registry);
        TreeBuilder b("scout", registry);
        b.key<bool>(sc::kEnemySeen).key<bool>(sc::kHealthLow).key<bool>(sc::kEnemyDead).active_selector();
        scout = sc::add_fight_branch(b).action("Scout").back().end();
        waiter = TreeBuilder("waiter", registry).sequence().wait(120ms).action("Patrol").back().end();
    }
};

/// Runs a mixed world for `frames` frames and checks every frame's counters against the agents' stats;
/// returns every frame's metrics (without the wall time) for comparing runs.
std::vector<std::string> run(Mode mode, std::uint32_t threads, int frames) {
    static Trees trees;
    World world(WorldOptions{.threads = threads});
    std::vector<AgentHandle> handles;
    for (std::uint64_t i = 0; i < 900; ++i) {
        const Tree& tree = i % 3 == 0 ? trees.guard : i % 3 == 1 ? trees.scout : trees.waiter;
        handles.push_back(world.spawn(tree, {.mode = mode, .seed = i}));
        if (i % 7 == 0) world.set_tick_interval(handles.back(), 2);
    }
    std::vector<std::string> seen;
    for (int f = 0; f < frames; ++f) {
        // Game code between frames: some guards see an enemy, some lose it.
        for (std::size_t i = 0; i < handles.size(); i += 3) {
            if ((i + static_cast<std::size_t>(f)) % 11 != 0 || i % 3 != 0) continue;
            Blackboard& bb = world.agent(handles[i])->blackboard();
            bb.set(sc::kEnemySeen, !bb.get<bool>(sc::kEnemySeen));
        }
        const Counts before = sum_stats(world, handles);
        const FrameMetrics m = world.step(50ms);
        const Counts grew = sum_stats(world, handles) - before;
        CHECK(m.behaviors_updated == grew.updates);
        CHECK(m.guards_evaluated == grew.guards);
        CHECK(m.events_handled == grew.visited);
        CHECK(m.timers_fired == grew.timers);
        seen.push_back(std::to_string(m.agents_stepped) + " " + std::to_string(m.behaviors_updated) + " " +
                       std::to_string(m.guards_evaluated) + " " + std::to_string(m.events_handled) + " " +
                       std::to_string(m.timers_fired));
    }
    return seen;
}

}  // namespace

TEST_CASE("world metrics: a frame's counters are what its agents' stats grew by, in both modes, at 1 and 2 threads") {
    for (const Mode mode : {Mode::Event, Mode::Polling}) {
        CAPTURE(to_string(mode));
        const std::vector<std::string> one = run(mode, 1, 30);
        const std::vector<std::string> two = run(mode, 2, 30);
        CHECK(one == two);
        // The world did count something of each kind (a test that cannot fail would not).
        std::uint64_t guards = 0, timers = 0;
        for (const std::string& frame : one) {
            unsigned stepped = 0, updates = 0, g = 0, visited = 0, t = 0;
            REQUIRE(std::sscanf(frame.c_str(), "%u %u %u %u %u", &stepped, &updates, &g, &visited, &t) == 5);
            guards += g;
            timers += t;
        }
        CHECK(guards > 0);
        if (mode == Mode::Event) CHECK(timers > 0);
    }
}
