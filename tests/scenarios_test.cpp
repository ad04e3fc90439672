// The benchmark scenarios of scenarios/bench_scenarios.hpp (shared with bench/sweep_bench.cpp): the
// wide and deep guard trees (shape, traces in both modes, guard evaluations of quiet frames), guard
// tree (b) with Patrol a latent move resumed by a MovementSystem, the waiting tree (timers and a
// suspended action that leave an event-mode agent with no work), the ChurnWriter's change rate, and
// the property the benchmark relies on: under the same ChurnWriter both modes do the same game work.
#include "bench_scenarios.hpp"
#include "guard_scenario.hpp"
#include "support/trace_recorder.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

constexpr Duration kFrame = 50ms;

/// How many lifecycle events of `rec` render as `what` ("10:T(Success)"), over all ticks.
std::size_t count_events(const test::TraceRecorder& rec, const std::string& what) {
    std::size_t n = 0;
    for (const auto& e : rec.entries)
        if (e.event.is_lifecycle() && test::TraceRecorder::render(e.event) == what) ++n;
    return n;
}

/// The guard tree's Attack and Patrol node indices inside a tree that embeds it last (guard tree,
/// wide tree, deep tree): the guard tree's 11 nodes are the last 11 in pre-order.
NodeIndex attack_node(const Tree& tree) { return static_cast<NodeIndex>(tree.size() - 11 + 9); }
NodeIndex patrol_node(const Tree& tree) { return static_cast<NodeIndex>(tree.size() - 11 + 10); }

}  // namespace

// ---- wide tree ------------------------------------------------------------------------------------

TEST_CASE("scenarios: wide guard tree (K = 4) shape") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::wide_guard_tree(registry, 4);
    CHECK(tree.size() == 1 + 3 * 4 + 11);
    CHECK(tree.name() == "wide_4");
    CHECK(tree.describe() ==
          "0 ActiveSelector [children abort LowerPriority]\n"
          "  1 Sequence [guard, abort LowerPriority]\n"
          "    2 Condition threat_0\n"
          "    3 Action Attack\n"
          "  4 Sequence [guard, abort LowerPriority]\n"
          "    5 Condition threat_1\n"
          "    6 Action Attack\n"
          "  7 Sequence [guard, abort LowerPriority]\n"
          "    8 Condition threat_2\n"
          "    9 Action Attack\n"
          "  10 Sequence [guard, abort LowerPriority]\n"
          "    11 Condition threat_3\n"
          "    12 Action Attack\n"
          "  13 ActiveSelector guard [children abort LowerPriority]\n"  // the subtree's root, labelled with its tree's name
          "    14 Sequence [guard, abort LowerPriority]\n"
          "      15 Condition enemy_seen\n"
          "      16 ActiveSelector [children abort LowerPriority]\n"
          "        17 Sequence [guard, abort LowerPriority]\n"
          "          18 Condition health_low\n"
          "          19 Action Runaway\n"
          "        20 Monitor [guard, abort Both]\n"
          "          21 Condition !enemy_dead\n"
          "          22 Action Attack\n"
          "    23 Action Patrol\n");
    CHECK(attack_node(tree) == 22);
    CHECK(patrol_node(tree) == 23);
    // The sizes the benchmark reports: 1 + 3K + 11.
    CHECK(scenarios::wide_guard_tree(registry, 0).size() == 12);
    CHECK(scenarios::wide_guard_tree(registry, 1).size() == 15);
    CHECK(scenarios::wide_guard_tree(registry, 16).size() == 1 + 3 * 16 + 11);
}

TEST_CASE("scenarios: wide guard tree (K = 4) patrols, and threat_2 preempts Patrol, in both modes") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::wide_guard_tree(registry, 4);
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        test::TraceRecorder rec;
        Agent agent(tree, {.mode = mode, .listener = &rec});
        for (int frame = 0; frame < 6; ++frame) {
            if (frame == 3) agent.blackboard().set("threat_2", true);
            agent.tick(kFrame);
        }
        CHECK(rec.tick(0) == "0:I 13:I 23:I 23:U");
        CHECK(rec.tick(1) == "23:U");
        CHECK(rec.tick(2) == "23:U");
        // threat_2's guard (node 7, LowerPriority) fires at the root's position: the guard tree's
        // running branch ends Aborted, leaves first, then branch 2 runs its Attack in the same tick.
        CHECK(rec.tick(3) == "23:T(Aborted) 13:T(Aborted) 7:I 9:I 9:U");
        CHECK(rec.tick(4) == "9:U");
        CHECK(rec.tick(5) == "9:U");
        CHECK(agent.status(9) == Status::Running);
        CHECK(agent.status(23) == Status::Aborted);
        CHECK(agent.status(13) == Status::Aborted);
        CHECK(agent.stats().updates == 6);  // one leaf update per frame: Patrol 3, Attack 3
    }
}

TEST_CASE("scenarios: wide guard tree (K = 4) quiet frames: guard evaluations per mode") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    constexpr int k = 4;
    const Tree tree = scenarios::wide_guard_tree(registry, k);
    Agent poll(tree, {.mode = Mode::Polling});
    Agent event(tree, {.mode = Mode::Event});
    // Two frames to settle (as the benchmark does). Frame 0 enters: the root evaluates the k threat
    // guards (false) and node 13 the enemy_seen guard (false) to choose Patrol, in both modes. That
    // makes these k + 1 guards live (their parents run a lower-priority child); frame 1: polling
    // re-evaluates them, event mode does not (they were just evaluated, nothing they read changed).
    poll.tick(kFrame);
    event.tick(kFrame);
    CHECK(poll.stats().guards_evaluated == k + 1);
    CHECK(event.stats().guards_evaluated == k + 1);
    poll.tick(kFrame);
    event.tick(kFrame);
    CHECK(poll.stats().guards_evaluated == 2 * (k + 1));
    CHECK(event.stats().guards_evaluated == k + 1);
    const auto poll_before = poll.stats().guards_evaluated, event_before = event.stats().guards_evaluated;
    const auto poll_updates = poll.stats().updates, event_updates = event.stats().updates;
    for (int i = 0; i < 10; ++i) {
        poll.tick(kFrame);
        event.tick(kFrame);
    }
    // Polling re-evaluates every live guard each frame: the k LowerPriority guards of the threat
    // branches (live at node 0 while it runs its lowest child, the guard tree) and the enemy_seen
    // guard of node 14 (live at node 13 while it runs Patrol): k + 1 = 5 per frame.
    CHECK(poll.stats().guards_evaluated - poll_before == 10 * (k + 1));
    // Event mode: no key changed, so no guard is evaluated.
    CHECK(event.stats().guards_evaluated - event_before == 0);
    // Both updated Patrol once per frame.
    CHECK(poll.stats().updates - poll_updates == 10);
    CHECK(event.stats().updates - event_updates == 10);
}

// ---- deep tree ------------------------------------------------------------------------------------

TEST_CASE("scenarios: deep guard tree (D = 3) shape") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::deep_guard_tree(registry, 3);
    CHECK(tree.size() == 3 + 11);
    CHECK(tree.name() == "deep_3");
    CHECK(tree.describe() ==
          "0 Sequence [guard, abort Self]\n"
          "  1 Sequence [guard, abort Self]\n"
          "    2 Sequence [guard, abort Self]\n"
          "      3 ActiveSelector guard [children abort LowerPriority]\n"
          "        4 Sequence [guard, abort LowerPriority]\n"
          "          5 Condition enemy_seen\n"
          "          6 ActiveSelector [children abort LowerPriority]\n"
          "            7 Sequence [guard, abort LowerPriority]\n"
          "              8 Condition health_low\n"
          "              9 Action Runaway\n"
          "            10 Monitor [guard, abort Both]\n"
          "              11 Condition !enemy_dead\n"
          "              12 Action Attack\n"
          "        13 Action Patrol\n");
    CHECK(patrol_node(tree) == 13);
    CHECK(scenarios::deep_guard_tree(registry, 0).size() == 11);
    CHECK(scenarios::deep_guard_tree(registry, 16).size() == 16 + 11);
    // ok_i default to true.
    Agent agent(tree);
    for (const char* key : {"ok_0", "ok_1", "ok_2"}) CHECK(agent.blackboard().get<bool>(key));
}

TEST_CASE("scenarios: deep guard tree (D = 3) patrols, and ok_1 = false aborts the levels below, in both modes") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree tree = scenarios::deep_guard_tree(registry, 3);
    std::vector<std::vector<std::string>> traces;
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        test::TraceRecorder rec;
        Agent agent(tree, {.mode = mode, .listener = &rec});
        for (int frame = 0; frame < 6; ++frame) {
            if (frame == 3) agent.blackboard().set("ok_1", false);
            agent.tick(kFrame);
        }
        CHECK(rec.tick(0) == "0:I 1:I 2:I 3:I 13:I 13:U");
        CHECK(rec.tick(1) == "13:U");
        CHECK(rec.tick(2) == "13:U");
        // Node 1's Self guard turns false (checked at node 1's own position): its running descendants end
        // Aborted, leaves first, node 1 ends Failure, and so does the root Sequence.
        CHECK(rec.tick(3) == "13:T(Aborted) 3:T(Aborted) 2:T(Aborted) 1:T(Failure) 0:T(Failure)");
        // From then on the root restarts each tick and fails at once: node 1 is skipped.
        CHECK(rec.tick(4) == "0:I 0:T(Failure)");
        CHECK(rec.tick(5) == "0:I 0:T(Failure)");
        CHECK(agent.status() == Status::Failure);
        CHECK(agent.status(1) == Status::Failure);
        CHECK(agent.status(13) == Status::Aborted);
        traces.push_back(rec.lifecycle());
    }
    REQUIRE(traces.size() == 2);
    CHECK(traces[0] == traces[1]);
}

TEST_CASE("scenarios: deep guard tree (D = 3) quiet frames: guard evaluations per mode") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    constexpr int d = 3;
    const Tree tree = scenarios::deep_guard_tree(registry, d);
    Agent poll(tree, {.mode = Mode::Polling});
    Agent event(tree, {.mode = Mode::Event});
    // Frame 0 enters, evaluating the d ok_i guards (true) and enemy_seen (false). Frame 1: event mode
    // re-evaluates none of them: the Self guards and enemy_seen's LowerPriority guard (live since
    // node 3 chose Patrol) were evaluated on entry, and nothing they read has changed since.
    poll.tick(kFrame);
    event.tick(kFrame);
    CHECK(poll.stats().guards_evaluated == d + 1);
    CHECK(event.stats().guards_evaluated == d + 1);
    poll.tick(kFrame);
    event.tick(kFrame);
    CHECK(poll.stats().guards_evaluated == 2 * (d + 1));
    CHECK(event.stats().guards_evaluated == d + 1);
    const auto poll_before = poll.stats().guards_evaluated, event_before = event.stats().guards_evaluated;
    for (int i = 0; i < 10; ++i) {
        poll.tick(kFrame);
        event.tick(kFrame);
    }
    // Polling: the Self guards ok_0, ok_1, ok_2 (each at its own node: 0, 1, 2) and enemy_seen (at
    // node 3): d + 1 = 4 per frame.
    CHECK(poll.stats().guards_evaluated - poll_before == 10 * (d + 1));
    CHECK(event.stats().guards_evaluated - event_before == 0);
    CHECK(event.stats().updates == poll.stats().updates);
    CHECK(event.stats().updates == 12);  // Patrol, every frame
}

// ---- guard tree (b): Patrol is a latent move ---------------------------------------------------------

TEST_CASE("scenarios: guard tree (b): moves resumed by the MovementSystem, in both modes") {
    using scenarios::MovementSystem;
    constexpr std::size_t kAgents = 6;
    constexpr std::size_t kAttacker = kAgents - 1;  // sees an enemy in frame 5, while its move is pending
    constexpr int kFrames = 120;
    // Move lengths are drawn from the agents' seeds and the request count: both modes' populations
    // get the same moves, so their whole lifecycle traces must be equal.
    std::vector<std::vector<std::string>> windows;
    std::vector<std::vector<std::vector<std::string>>> lifecycles;  // [mode][agent]
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        MovementSystem movement;
        Registry registry;
        scenarios::register_latent_guard_actions(registry, movement);
        const Tree tree = scenarios::guard_tree(registry);
        std::vector<test::TraceRecorder> recs(kAgents);
        World world;  // the system resumes through it: it keeps handles, not agents
        std::vector<AgentHandle> handles;
        for (std::size_t i = 0; i < kAgents; ++i)
            handles.push_back(world.spawn(tree, SpawnOptions{.mode = mode, .seed = i, .listener = &recs[i]}));
        const auto agent = [&](std::size_t i) -> Agent& { return world.at(handles[i]); };

        std::size_t stale_resumes = 0;  // moves stepped whose action had already ended
        int stale_frame = -1;
        for (int frame = 0; frame < kFrames; ++frame) {
            CAPTURE(frame);
            if (frame == 5) agent(kAttacker).blackboard().set(scenarios::kEnemySeen, true);
            const std::size_t before = movement.pending();
            const std::size_t resumed = movement.step(world);
            const std::size_t stepped = before - movement.pending();
            CHECK(resumed <= stepped);
            if (stepped != resumed) {
                stale_resumes += stepped - resumed;
                stale_frame = frame;
            }
            world.step(kFrame);
            // Every resume ends one Patrol with Success in this very tick (the walk has not passed it).
            std::size_t ended = 0;
            for (const auto& rec : recs)
                if (rec.tick(static_cast<std::uint64_t>(frame)).starts_with("10:T(Success)")) ++ended;
            CHECK(ended == resumed);
            // One pending move per patrolling agent, plus the attacker's stale move until it is stepped.
            std::size_t patrolling = 0;
            for (std::size_t i = 0; i < kAgents; ++i) patrolling += agent(i).status(10) == Status::Running ? 1 : 0;
            const bool stale_pending = frame >= 5 && stale_resumes == 0;
            CHECK(movement.pending() == patrolling + (stale_pending ? 1 : 0));
            if (frame < 5) CHECK(patrolling == kAgents);
        }
        CHECK(movement.frame() == static_cast<std::uint64_t>(kFrames));

        // Agent 0: Patrol suspends in onInitialize (no update at all) and the move ends in frame L,
        // L in [kShortestMove, kLongestMove] (requested at the system's frame 1, resumed at its frame
        // 1 + L, which is loop frame L): Patrol ends Success without an update, so does the root, and
        // the agent starts afresh on the next tick with a new move, L' + 1 frames later.
        const test::TraceRecorder& rec = recs[0];
        CHECK(rec.tick(0) == "0:I 10:I");
        std::vector<std::uint64_t> resume_ticks;
        for (std::uint64_t t = 1; t < static_cast<std::uint64_t>(kFrames); ++t) {
            const std::string s = rec.tick(t);
            if (s.empty()) continue;
            if (s == "10:T(Success) 0:T(Success)") {
                resume_ticks.push_back(t);
            } else {
                CHECK(s == "0:I 10:I");  // the restart, the tick after a resume
                CHECK(rec.tick(t - 1) == "10:T(Success) 0:T(Success)");
            }
        }
        REQUIRE(resume_ticks.size() >= 2);
        const std::uint64_t first = resume_ticks[0];
        CHECK(first >= MovementSystem::kShortestMove);
        CHECK(first <= MovementSystem::kLongestMove);
        CHECK(rec.tick(first - 1) == "");
        CHECK(rec.tick(first) == "10:T(Success) 0:T(Success)");
        CHECK(rec.tick(first + 1) == "0:I 10:I");
        CHECK(rec.tick(first + 2) == "");
        windows.push_back({rec.tick(0), rec.tick(first - 1), rec.tick(first), rec.tick(first + 1), rec.tick(first + 2)});
        for (std::size_t i = 1; i < resume_ticks.size(); ++i) {
            CHECK(resume_ticks[i] - resume_ticks[i - 1] >= MovementSystem::kShortestMove + 1);
            CHECK(resume_ticks[i] - resume_ticks[i - 1] <= MovementSystem::kLongestMove + 1);
        }
        CHECK(count_events(rec, "10:I") == resume_ticks.size() + 1);

        // No Patrol is ever updated: its leaf update count stays at zero.
        for (std::size_t i = 0; i + 1 < kAgents; ++i) {
            CHECK(agent(i).stats().updates == 0);
            CHECK(count_events(recs[i], "10:U") == 0);
        }

        // The attacker: Patrol aborted in frame 5, Attack from then on; its move, stepped later (in
        // its frame L), was stale: resume() returned false and changed nothing.
        const test::TraceRecorder& att = recs[kAttacker];
        CHECK(att.tick(5) == "10:T(Aborted) 1:I 3:I 7:I 9:I 9:U");
        CHECK(stale_resumes == 1);
        CHECK(stale_frame >= static_cast<int>(MovementSystem::kShortestMove));
        CHECK(stale_frame <= static_cast<int>(MovementSystem::kLongestMove));
        if (stale_frame >= 0) CHECK(att.tick(static_cast<std::uint64_t>(stale_frame)) == "9:U");
        CHECK(count_events(att, "10:T(Success)") == 0);
        CHECK(count_events(att, "10:I") == 1);
        CHECK(agent(kAttacker).status(9) == Status::Running);
        CHECK(agent(kAttacker).status(10) == Status::Aborted);
        CHECK(agent(kAttacker).stats().updates == static_cast<std::uint32_t>(kFrames - 5));
        lifecycles.emplace_back();
        for (const auto& r : recs) lifecycles.back().push_back(r.lifecycle());
    }
    REQUIRE(windows.size() == 2);
    CHECK(windows[0] == windows[1]);
    REQUIRE(lifecycles.size() == 2);
    for (std::size_t i = 0; i < kAgents; ++i) {
        CAPTURE(i);
        CHECK(lifecycles[0][i] == lifecycles[1][i]);
    }
}

// ---- waiting tree -----------------------------------------------------------------------------------

TEST_CASE("scenarios: waiting tree: sleepers wait, nappers sit in a suspended action") {
    Registry registry;
    scenarios::register_waiting_actions(registry);
    const Tree tree = scenarios::waiting_tree(registry);
    REQUIRE(tree.size() == 5);
    CHECK(tree.describe() ==
          "0 Selector\n"
          "  1 Sequence [guard, abort None]\n"
          "    2 Condition is_sleeper\n"
          "    3 Wait\n"
          "  4 Action Nap\n");
    constexpr TimePoint kNever = std::numeric_limits<TimePoint>::max();
    constexpr std::size_t kAgents = 4;  // even: sleepers, odd: nappers
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        std::vector<test::TraceRecorder> recs(kAgents);
        std::vector<Agent> agents;
        agents.reserve(kAgents);
        for (std::size_t i = 0; i < kAgents; ++i) {
            agents.emplace_back(tree, AgentOptions{.mode = mode, .listener = &recs[i]});
            agents.back().blackboard().set(scenarios::kIsSleeper, i % 2 == 0);
        }
        for (Agent& a : agents) a.tick(kFrame);
        for (std::size_t i = 0; i < kAgents; ++i) {
            CAPTURE(i);
            const bool sleeper = i % 2 == 0;
            const Agent& a = agents[i];
            CHECK(recs[i].tick(0) == (sleeper ? "0:I 1:I 3:I" : "0:I 4:I"));
            CHECK(a.status(3) == (sleeper ? Status::Running : Status::Invalid));
            CHECK(a.status(4) == (sleeper ? Status::Invalid : Status::Running));
            CHECK(a.now() == 50'000);
            if (mode == Mode::Event) {
                CHECK_FALSE(a.has_pending_work());
                CHECK(a.next_deadline() == (sleeper ? a.now() + scenarios::kLongWait.count() : kNever));
            } else {
                CHECK(a.has_pending_work());
            }
        }

        // 100 quiet frames: nothing happens (no event, no update, no status change) in either mode;
        // event mode evaluates no guard either.
        std::vector<AgentStats> before;
        for (const Agent& a : agents) before.push_back(a.stats());
        for (int frame = 0; frame < 100; ++frame)
            for (Agent& a : agents) a.tick(kFrame);
        for (std::size_t i = 0; i < kAgents; ++i) {
            CAPTURE(i);
            const bool sleeper = i % 2 == 0;
            const Agent& a = agents[i];
            CHECK(recs[i].lifecycle().size() == (sleeper ? 3u : 2u));
            CHECK(a.stats().updates == 0);
            CHECK(a.status() == Status::Running);
            CHECK(a.status(3) == (sleeper ? Status::Running : Status::Invalid));
            CHECK(a.status(4) == (sleeper ? Status::Invalid : Status::Running));
            CHECK(a.now() == 101 * 50'000);
            if (mode == Mode::Event) {
                CHECK(a.stats().guards_evaluated == before[i].guards_evaluated);
                CHECK(a.stats().timers_fired == 0);
                CHECK_FALSE(a.has_pending_work());
            }
        }

        // The Wait is due at 50 ms + 1 h (agent clock): not a microsecond before, then on the first
        // tick whose clock reaches it.
        const TimePoint due = 50'000 + scenarios::kLongWait.count();
        for (Agent& a : agents) a.tick(Duration(due - 1 - a.now()));
        for (std::size_t i = 0; i < kAgents; ++i) CHECK(recs[i].tick(101) == "");
        for (Agent& a : agents) a.tick(1us);
        for (std::size_t i = 0; i < kAgents; ++i) {
            CAPTURE(i);
            const bool sleeper = i % 2 == 0;
            CHECK(agents[i].now() == due);
            CHECK(recs[i].tick(102) == (sleeper ? "3:T(Success) 1:T(Success) 0:T(Success)" : ""));
            CHECK(agents[i].stats().timers_fired == (sleeper ? 1u : 0u));
        }
        // Sleepers start afresh and wait another hour; nappers still nap.
        for (Agent& a : agents) a.tick(kFrame);
        for (std::size_t i = 0; i < kAgents; ++i) {
            CAPTURE(i);
            const bool sleeper = i % 2 == 0;
            CHECK(recs[i].tick(103) == (sleeper ? "0:I 1:I 3:I" : ""));
            if (mode == Mode::Event) {
                CHECK_FALSE(agents[i].has_pending_work());
                CHECK(agents[i].next_deadline() == (sleeper ? agents[i].now() + scenarios::kLongWait.count() : kNever));
            }
        }
    }
}

// ---- ChurnWriter ------------------------------------------------------------------------------------

namespace {

struct GuardPopulation {
    Registry registry;
    Tree tree;
    std::vector<Agent> agents;
    GuardPopulation(std::size_t n, Mode mode = Mode::Event) {
        scenarios::register_guard_actions(registry);
        tree = scenarios::guard_tree(registry);
        agents.reserve(n);
        for (std::size_t i = 0; i < n; ++i) agents.emplace_back(tree, AgentOptions{.mode = mode});
    }
};

}  // namespace

TEST_CASE("scenarios: ChurnWriter share 0 writes nothing") {
    GuardPopulation pop(10);
    scenarios::ChurnWriter churn(pop.tree, pop.agents.size(), 0.0);
    std::size_t calls = 0;
    for (int frame = 0; frame < 50; ++frame) {
        CHECK(churn.write_frame([&](std::size_t i) -> Agent& {
            ++calls;
            return pop.agents[i];
        }) == 0);
        for (Agent& a : pop.agents) a.tick(kFrame);
    }
    CHECK(calls == 0);
    for (const Agent& a : pop.agents) {
        CHECK(a.status(10) == Status::Running);
        CHECK(a.status(9) == Status::Invalid);
    }
}

TEST_CASE("scenarios: ChurnWriter share 1 writes every agent each frame, in turn") {
    // Attack (9) / Patrol (10) of every agent after each frame, per mode.
    std::vector<std::vector<std::pair<Status, Status>>> statuses;
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        GuardPopulation pop(10, mode);
        const auto seen = pop.tree.key<bool>(scenarios::kEnemySeen);
        const auto dead = pop.tree.key<bool>(scenarios::kEnemyDead);
        scenarios::ChurnWriter churn(pop.tree, pop.agents.size(), 1.0);
        for (Agent& a : pop.agents) a.tick(kFrame);  // all patrol
        statuses.emplace_back();
        for (int frame = 0; frame < 8; ++frame) {
            CAPTURE(frame);
            std::vector<std::size_t> order;
            CHECK(churn.write_frame([&](std::size_t i) -> Agent& {
                order.push_back(i);
                return pop.agents[i];
            }) == 20);
            CHECK(order == std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
            for (Agent& a : pop.agents) a.tick(kFrame);
            // The blackboard toggles every frame: seen/!dead, then !seen/dead.
            const bool enemy = frame % 2 == 0;
            for (const Agent& a : pop.agents) {
                CHECK(a.blackboard().get(seen) == enemy);
                CHECK(a.blackboard().get(dead) == !enemy);
                statuses.back().emplace_back(a.status(9), a.status(10));
            }
            // The first two toggles switch the behaviour: attack, then back to patrol. (The later
            // ones do not all switch it at share 1: see the next test case.)
            if (frame < 2) {
                for (const Agent& a : pop.agents) {
                    CHECK(a.status(9) == (enemy ? Status::Running : Status::Aborted));
                    CHECK(a.status(10) == (enemy ? Status::Aborted : Status::Running));
                }
            }
        }
    }
    REQUIRE(statuses.size() == 2);
    CHECK(statuses[0] == statuses[1]);  // whatever the behaviour, both modes agree on it
}

TEST_CASE("scenarios: ChurnWriter share 0.5 switches each written agent between patrolling and attacking") {
    // Each agent is written every other frame, so a guard that became live when the agent went back to
    // Patrol is evaluated (false) on the frame between: every toggle makes an edge.
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        GuardPopulation pop(10, mode);
        const auto seen = pop.tree.key<bool>(scenarios::kEnemySeen);
        scenarios::ChurnWriter churn(pop.tree, pop.agents.size(), 0.5);
        for (Agent& a : pop.agents) a.tick(kFrame);  // all patrol
        std::size_t attacks = 0;
        for (int frame = 0; frame < 12; ++frame) {
            CAPTURE(frame);
            std::vector<std::size_t> order;
            CHECK(churn.write_frame([&](std::size_t i) -> Agent& {
                order.push_back(i);
                return pop.agents[i];
            }) == 10);
            CHECK(order == (frame % 2 == 0 ? std::vector<std::size_t>{0, 1, 2, 3, 4} : std::vector<std::size_t>{5, 6, 7, 8, 9}));
            for (Agent& a : pop.agents) a.tick(kFrame);
            for (std::size_t i = 0; i < pop.agents.size(); ++i) {
                CAPTURE(i);
                const Agent& a = pop.agents[i];
                const bool enemy = a.blackboard().get(seen);
                // Agents 0-4 are written in even frames, 5-9 in odd ones; each write flips enemy_seen.
                const int writes = i < 5 ? frame / 2 + 1 : (frame + 1) / 2;
                CHECK(enemy == (writes % 2 == 1));
                // The agent attacks exactly while enemy_seen is set.
                CHECK((a.status(9) == Status::Running) == enemy);
                CHECK((a.status(10) == Status::Running) == !enemy);
                attacks += enemy ? 1 : 0;
            }
        }
        CHECK(attacks == 60);  // half the agents attack after each frame
    }
}

// At share 1 every agent is written every frame, but its behaviour switches only on every other
// toggle: back on Patrol, its enemy_seen guard is live again and first evaluated on the next tick,
// when the next toggle has already set enemy_seen=true, the value of its last evaluation (entering
// the attack): no edge (docs/semantics.md, guards act on edges). Agent 0 thus attacks in frames
// 0, 4, 8... and patrols in the others, the same in both modes (ChurnWriter's comment says so).
TEST_CASE("scenarios: ChurnWriter share 1: attack, patrol, patrol, patrol, attack... in both modes") {
    for (Mode mode : test::both_modes()) {
        CAPTURE(std::string(to_string(mode)));
        GuardPopulation pop(10, mode);
        scenarios::ChurnWriter churn(pop.tree, pop.agents.size(), 1.0);
        for (Agent& a : pop.agents) a.tick(kFrame);  // all patrol
        for (int frame = 0; frame < 9; ++frame) {
            CAPTURE(frame);
            churn.write_frame([&](std::size_t i) -> Agent& { return pop.agents[i]; });
            for (Agent& a : pop.agents) a.tick(kFrame);
            const bool attacking = frame % 4 == 0;
            for (const Agent& a : pop.agents) {
                CHECK(a.status(9) == (attacking ? Status::Running : Status::Aborted));
                CHECK(a.status(10) == (attacking ? Status::Aborted : Status::Running));
            }
        }
    }
}

TEST_CASE("scenarios: ChurnWriter share 0.001 of 100 agents: one agent every 10 frames, in turn") {
    GuardPopulation pop(100);
    scenarios::ChurnWriter churn(pop.tree, pop.agents.size(), 0.001);
    std::vector<int> frames;             // the frames (from 1) that wrote
    std::vector<std::size_t> written;    // the agents written, in order
    std::size_t writes = 0;
    for (int frame = 1; frame <= 105; ++frame) {
        const std::size_t before = written.size();
        writes += churn.write_frame([&](std::size_t i) -> Agent& {
            written.push_back(i);
            return pop.agents[i];
        });
        CHECK(written.size() - before <= 1);
        if (written.size() != before) frames.push_back(frame);
    }
    // Ten agents over 105 frames (whatever the phase of the first write; see the next test case).
    CHECK(writes == 20);
    CHECK(written == std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    REQUIRE(frames.size() == 10);
    CHECK(frames[0] <= 11);
    for (std::size_t i = 1; i < frames.size(); ++i) CHECK(frames[i] - frames[i - 1] == 10);
    // The written agents attack after their next tick; the others still patrol.
    for (Agent& a : pop.agents) a.tick(kFrame);
    for (std::size_t i = 0; i < pop.agents.size(); ++i) {
        CAPTURE(i);
        CHECK(pop.agents[i].status(9) == (i < 10 ? Status::Running : Status::Invalid));
    }
}

// "0.1 % of 100 agents is one agent every 10 frames" means frames 10, 20, 30: ten additions of 0.1
// make 0.9999999999999999 in a double, which the writer must not truncate to no write.
TEST_CASE("scenarios: ChurnWriter share 0.001 of 100 agents writes 3 agents in 30 frames") {
    GuardPopulation pop(100);
    scenarios::ChurnWriter churn(pop.tree, pop.agents.size(), 0.001);
    std::vector<std::size_t> written;
    std::size_t writes = 0;
    for (int frame = 1; frame <= 30; ++frame)
        writes += churn.write_frame([&](std::size_t i) -> Agent& {
            written.push_back(i);
            return pop.agents[i];
        });
    CHECK(writes == 6);
    CHECK(written == std::vector<std::size_t>{0, 1, 2});
}

TEST_CASE("scenarios: ChurnWriter rejects a share outside [0, 1]") {
    GuardPopulation pop(1);
    CHECK_THROWS_AS(scenarios::ChurnWriter(pop.tree, 1, -0.01), UsageError);
    CHECK_THROWS_AS(scenarios::ChurnWriter(pop.tree, 1, 1.01), UsageError);
    CHECK_THROWS_AS(scenarios::ChurnWriter(pop.tree, 1, 2.0), UsageError);
    CHECK_NOTHROW(scenarios::ChurnWriter(pop.tree, 1, 0.0));
    CHECK_NOTHROW(scenarios::ChurnWriter(pop.tree, 1, 1.0));
}

// A NaN share is not in [0, 1] either (a plain `share < 0 || share > 1` would let it through).
TEST_CASE("scenarios: ChurnWriter rejects a NaN share") {
    GuardPopulation pop(1);
    CHECK_THROWS_AS(scenarios::ChurnWriter(pop.tree, 1, std::nan("")), UsageError);
}

// ---- both modes do the same game work ---------------------------------------------------------------

namespace {

/// Runs `agents` agents of `tree` in `mode` for `frames` frames under a ChurnWriter of `share`.
std::vector<Agent> churn_run(const Tree& tree, Mode mode, std::size_t agents, double share, int frames,
                             std::vector<test::TraceRecorder>& recs) {
    recs.assign(agents, {});
    std::vector<Agent> pop;
    pop.reserve(agents);
    for (std::size_t i = 0; i < agents; ++i) pop.emplace_back(tree, AgentOptions{.mode = mode, .seed = i, .listener = &recs[i]});
    scenarios::ChurnWriter churn(tree, agents, share);
    std::size_t writes = 0;
    for (int frame = 0; frame < frames; ++frame) {
        writes += churn.write_frame([&](std::size_t i) -> Agent& { return pop[i]; });
        for (Agent& a : pop) a.tick(kFrame);
    }
    CHECK(writes == static_cast<std::size_t>(frames) * 2 * 2);  // 2 agents a frame, 2 writes each
    for (Agent& a : pop) a.set_listener(nullptr);
    return pop;
}

}  // namespace

TEST_CASE("scenarios: under the same ChurnWriter both modes do the same game work") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree guard = scenarios::guard_tree(registry);
    const Tree wide = scenarios::wide_guard_tree(registry, 4);
    const Tree deep = scenarios::deep_guard_tree(registry, 3);
    constexpr std::size_t kAgents = 20;
    constexpr int kFrames = 200;
    for (const Tree* tree : {&guard, &wide, &deep}) {
        CAPTURE(tree->name());
        std::vector<test::TraceRecorder> poll_recs, event_recs;
        const std::vector<Agent> poll = churn_run(*tree, Mode::Polling, kAgents, 0.1, kFrames, poll_recs);
        const std::vector<Agent> event = churn_run(*tree, Mode::Event, kAgents, 0.1, kFrames, event_recs);
        std::uint64_t poll_updates = 0, event_updates = 0, poll_guards = 0, event_guards = 0;
        for (std::size_t i = 0; i < kAgents; ++i) {
            CAPTURE(i);
            for (NodeIndex n = 0; n < tree->size(); ++n) {
                CAPTURE(n);
                CHECK(poll[i].status(n) == event[i].status(n));
            }
            CHECK(poll[i].stats().updates == event[i].stats().updates);
            CHECK(poll_recs[i].lifecycle() == event_recs[i].lifecycle());
            // Each agent is written every 10 frames (2 of 20 a frame): 20 toggles in 200 frames, so
            // 10 attacks, and it ends patrolling.
            CHECK(count_events(event_recs[i], std::to_string(attack_node(*tree)) + ":I") == 10);
            CHECK(event[i].status(patrol_node(*tree)) == Status::Running);
            CHECK(event[i].stats().updates == static_cast<std::uint32_t>(kFrames));  // one leaf a frame
            poll_updates += poll[i].stats().updates;
            event_updates += event[i].stats().updates;
            poll_guards += poll[i].stats().guards_evaluated;
            event_guards += event[i].stats().guards_evaluated;
        }
        CHECK(poll_updates == event_updates);
        CHECK(event_guards < poll_guards);  // what event mode saves
    }
}
