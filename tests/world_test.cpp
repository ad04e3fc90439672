// World: handles, stepping only agents with work, spawning and despawning during frames, LOD
// intervals, frame budgets, metrics and determinism across modes.
#include "guard_scenario.hpp"
#include "support/trace_recorder.hpp"

#include <algorithm>
#include <random>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

Tree wait_tree(Duration d) {
    return TreeBuilder("waiter").sequence().wait(d).action("Act", test::finishing_action(1, Status::Success)).back().end();
}

Tree running_tree() { return TreeBuilder("runner").action("Run", test::running_action()).end(); }

}  // namespace

TEST_CASE("world: handles are generational; stale handles are reported, never dereferenced") {
    World world;
    const AgentHandle a = world.spawn(running_tree());
    CHECK(world.alive(a));
    REQUIRE(world.agent(a) != nullptr);
    CHECK(world.size() == 1);
    CHECK(world.despawn(a));
    CHECK_FALSE(world.alive(a));
    CHECK(world.agent(a) == nullptr);
    CHECK_FALSE(world.despawn(a));
    CHECK_FALSE(world.set_tick_interval(a, 2));
    CHECK_THROWS_WITH_AS(world.at(a), "agent handle {0, generation 1} is stale: its agent was despawned or never existed",
                         UsageError);
    // The slot is reused with a new generation: the old handle stays stale.
    const AgentHandle b = world.spawn(running_tree());
    CHECK(b.index == a.index);
    CHECK(b.generation == a.generation + 1);
    CHECK_FALSE(world.alive(a));
    CHECK(world.alive(b));
    CHECK(world.agent(AgentHandle{}) == nullptr);
    CHECK(world.agent(AgentHandle{7, 1}) == nullptr);
}

TEST_CASE("world: agents that only wait cost nothing per frame; their deadline wakes them on time") {
    World world;
    std::vector<AgentHandle> handles;
    for (int i = 0; i < 1000; ++i) handles.push_back(world.spawn(wait_tree(1s)));
    FrameMetrics m = world.step(100ms);  // frame 0: every agent starts and enters its Wait
    CHECK(m.agents_stepped == 1000);
    for (int frame = 1; frame < 9; ++frame) {
        m = world.step(100ms);
        CAPTURE(frame);
        CHECK(m.agents_stepped == 0);
        CHECK(m.events_handled == 0);
    }
    // Waits started at 100 ms are due at 1100 ms: frame 10 (clock 1100 ms).
    m = world.step(100ms);  // frame 9, 1000 ms
    CHECK(m.agents_stepped == 0);
    m = world.step(100ms);  // frame 10, 1100 ms
    CHECK(m.agents_stepped == 1000);
    CHECK(m.timers_fired == 1000);
    CHECK(m.behaviors_updated == 1000);  // Act's single update
    CHECK(world.at(handles[0]).now() == 1'100'000);
    CHECK(world.at(handles[0]).status(2) == Status::Success);
}

TEST_CASE("world: polling agents are stepped every frame; event agents only when they have work") {
    World world;
    const AgentHandle poll = world.spawn(running_tree(), {.mode = Mode::Polling});
    const AgentHandle event = world.spawn(wait_tree(1h), {.mode = Mode::Event});
    world.step(50ms);
    for (int i = 0; i < 5; ++i) CHECK(world.step(50ms).agents_stepped == 1);
    CHECK(world.at(poll).stats().updates == 6);
    CHECK(world.at(event).stats().nodes_visited == 1);  // its first tick only
}

TEST_CASE("world: a blackboard write between frames wakes an idle event agent in the next frame") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    registry.add_action("Sleep", [](ActionContext& ctx) {
        ctx.suspend();
        return Status::Running;
    });
    // A guard whose Patrol suspends itself: idle until the blackboard changes.
    const Tree tree = TreeBuilder("sleepy", registry)
                          .key<bool>("enemy_seen")
                          .active_selector()
                              .sequence().check("enemy_seen").action("Attack").back()
                              .action("Sleep")
                          .back()
                          .end();
    World world;
    test::TraceRecorder rec;
    const AgentHandle h = world.spawn(tree, {.listener = &rec});
    world.step(50ms);
    // The LowerPriority guard became live in the first frame, where it was just evaluated: not
    // re-checked (docs/semantics.md, "Live").
    CHECK(world.step(50ms).agents_stepped == 0);
    CHECK(world.step(50ms).agents_stepped == 0);
    CHECK(world.step(50ms).agents_stepped == 0);
    world.at(h).blackboard().set("enemy_seen", true);
    const FrameMetrics m = world.step(50ms);
    CHECK(m.agents_stepped == 1);
    CHECK(rec.tick(4) == "4:T(Aborted) 1:I 3:I 3:U");  // tick numbers are world frames
    CHECK(world.step(50ms).agents_stepped == 1);        // Attack updates every frame
}

TEST_CASE("world: spawning during a frame joins at its end and ticks from the next frame") {
    World world;
    AgentHandle child{};
    int spawned = 0;
    ActionSpec spawner;
    spawner.update = [&](ActionContext&) {
        if (spawned++ == 0) {
            child = world.spawn(running_tree());
            CHECK(world.alive(child));
            CHECK(world.agent(child) == nullptr);  // not there yet
            CHECK_THROWS_WITH_AS(world.at(child),
                                 "agent handle {1, generation 1} was spawned during this frame and joins at its end",
                                 UsageError);
        }
        return Status::Running;
    };
    world.spawn(TreeBuilder("spawner").action("Spawn", spawner).end());
    CHECK(world.step(50ms).agents_stepped == 1);
    REQUIRE(world.agent(child) != nullptr);
    CHECK(world.at(child).ticks() == 0);
    CHECK(world.step(50ms).agents_stepped == 2);
    CHECK(world.at(child).stats().updates == 1);
    CHECK(world.size() == 2);
}

TEST_CASE("world: despawning during a frame, the ticking agent itself or another one") {
    World world;
    test::TraceRecorder rec_self, rec_other;
    std::vector<std::string> log;
    AgentHandle self{}, other{};
    ActionSpec killer;
    killer.update = [&](ActionContext& ctx) {
        if (ctx.tick() == 1) {
            CHECK(world.despawn(other));  // a later agent: not stepped this frame
            CHECK(world.despawn(self));   // itself: its tick ends when update returns
            CHECK_FALSE(world.alive(self));
            CHECK(world.agent(self) == nullptr);
        }
        return Status::Running;
    };
    killer.on_terminate = [&](ActionContext&, Status s) { log.push_back(std::string("killer:") + to_string(s)); };
    ActionSpec victim = test::running_action();
    victim.on_terminate = [&](ActionContext&, Status s) { log.push_back(std::string("victim:") + to_string(s)); };
    self = world.spawn(TreeBuilder("k").parallel(Policy::RequireAll, Policy::RequireAll)
                           .action("Killer", killer)
                           .action("After", test::running_action())
                       .back()
                       .end(),
                       {.listener = &rec_self});
    other = world.spawn(TreeBuilder("v").action("Victim", victim).end(), {.listener = &rec_other});
    world.step(50ms);
    const FrameMetrics m = world.step(50ms);
    CHECK(m.agents_stepped == 1);
    // The killer's tick ended right after its update: node 2 was not updated, everything aborted.
    CHECK(rec_self.tick(1) == "1:U 2:T(Aborted) 1:T(Aborted) 0:T(Aborted)");
    CHECK(rec_other.tick(1).empty());
    CHECK(log == std::vector<std::string>{"killer:Aborted", "victim:Aborted"});
    CHECK(world.size() == 0);
    CHECK(world.step(50ms).agents_stepped == 0);
}

TEST_CASE("world: LOD tick interval steps an agent every Nth frame with dt accumulated") {
    World world;
    const AgentHandle lod = world.spawn(running_tree(), {.mode = Mode::Polling, .tick_interval = 3});
    const AgentHandle waiter = world.spawn(wait_tree(250ms), {.tick_interval = 2});
    std::vector<std::uint64_t> stepped;
    for (int frame = 0; frame < 10; ++frame) {
        const auto before = world.at(lod).stats().updates;
        world.step(100ms);
        if (world.at(lod).stats().updates != before) stepped.push_back(world.frame() - 1);
    }
    CHECK(stepped == std::vector<std::uint64_t>{0, 3, 6, 9});
    CHECK(world.at(lod).now() == 1'000'000);  // 10 frames of 100 ms, applied in 4 ticks
    // The waiter is in slot 1 with interval 2: its LOD frames are 1, 3, 5, ... Its first tick (frame 1,
    // 200 ms, dt accumulated from 0) starts a 250 ms wait, due at 450 ms; its first LOD frame at or
    // after that is frame 5 (600 ms): the Wait ends and Act succeeds. The tree restarts at frame 7
    // (800 ms) with a wait due at 1050 ms, so frame 9 (1000 ms) leaves it asleep.
    const Agent& w = world.at(waiter);
    CHECK(w.stats().timers_fired == 1);
    CHECK(w.stats().updates == 1);
    CHECK(w.status(2) == Status::Success);
    CHECK(w.status(1) == Status::Running);
    CHECK(w.now() == 800'000);
    CHECK(world.set_tick_interval(lod, 1));
    const auto before = world.at(lod).stats().updates;
    world.step(100ms);
    world.step(100ms);
    CHECK(world.at(lod).stats().updates == before + 2);
    CHECK_THROWS_AS(world.set_tick_interval(lod, 0), UsageError);
}

TEST_CASE("world: a frame budget steps agents round robin; none starves") {
    World world;
    std::vector<AgentHandle> handles;
    for (int i = 0; i < 10; ++i) handles.push_back(world.spawn(running_tree(), {.mode = Mode::Polling}));
    world.set_agent_budget(4);
    std::vector<std::uint32_t> stepped_per_frame;
    for (int frame = 0; frame < 5; ++frame) {
        const FrameMetrics m = world.step(50ms);
        stepped_per_frame.push_back(m.agents_stepped);
        CHECK(m.agents_waiting == 6);
    }
    CHECK(stepped_per_frame == std::vector<std::uint32_t>{4, 4, 4, 4, 4});
    // 20 ticks over 10 agents, round robin: exactly 2 each.
    for (const AgentHandle h : handles) CHECK(world.at(h).stats().updates == 2);
    // An agent that waited got the whole elapsed time as its dt.
    CHECK(world.at(handles[9]).now() == 250'000);  // stepped in frames 2 and 4
    world.set_agent_budget(0);
    CHECK(world.step(50ms).agents_stepped == 10);
}

TEST_CASE("world: same inputs and seed give the same state hash in both modes and across runs") {
    Registry registry;
    scenarios::register_guard_actions(registry);
    const Tree guard = scenarios::guard_tree(registry);
    const auto run = [&](Mode mode, std::uint64_t seed) {
        World world;
        std::mt19937_64 rng(seed);
        std::vector<AgentHandle> agents;
        for (int i = 0; i < 200; ++i) agents.push_back(world.spawn(guard, {.mode = mode, .seed = seed}));
        const char* keys[] = {scenarios::kEnemySeen, scenarios::kHealthLow, scenarios::kEnemyDead};
        for (int frame = 0; frame < 120; ++frame) {
            for (int w = 0; w < 10; ++w) {
                const AgentHandle h = agents[rng() % agents.size()];
                world.at(h).blackboard().set(keys[rng() % 3], (rng() % 2) == 0);
            }
            world.step(50ms);
        }
        return world.state_hash();
    };
    const std::uint64_t event = run(Mode::Event, 7);
    CHECK(event == run(Mode::Polling, 7));
    CHECK(event == run(Mode::Event, 7));
    CHECK(event != run(Mode::Event, 8));
}

TEST_CASE("world: step() from inside a step is refused") {
    World world;
    ActionSpec nested;
    bool threw = false;
    nested.update = [&](ActionContext&) {
        try {
            world.step(50ms);
        } catch (const UsageError&) {
            threw = true;
        }
        return Status::Running;
    };
    world.spawn(TreeBuilder("n").action("Nested", nested).end());
    world.step(50ms);
    CHECK(threw);
}

TEST_CASE("world: an agent owned by a world cannot be ticked directly") {
    World world;
    const AgentHandle h = world.spawn(running_tree());
    CHECK_THROWS_WITH_AS(world.at(h).tick(50ms),
                         "Agent::tick() on an agent that belongs to a World: the World steps it (World::step)", UsageError);
    world.step(50ms);
    CHECK(world.at(h).ticks() == 1);  // frame 0 done
    CHECK(world.at(h).stats().updates == 1);
}

TEST_CASE("world: in a big idle world exactly the woken agents are stepped, in slot order") {
    // 10,000 agents span three summary words of the awake set (4,096 slots each): wakes in the first,
    // second and last word, and one on each side of a word boundary, must all be found, in slot
    // order, and a frame with nobody awake steps nobody.
    std::vector<std::uint32_t> ticked;  // slots, in the order their actions ran
    ActionSpec touch;
    touch.update = [&ticked](ActionContext& ctx) {
        ticked.push_back(static_cast<std::uint32_t>(ctx.agent().seed()));
        return Status::Success;
    };
    const Tree tree = TreeBuilder("idle")
                          .key<bool>("go")
                          .sequence()
                              .wait(std::chrono::hours(1000))
                          .back()
                          .end();
    const Tree woken = TreeBuilder("woken")
                           .key<bool>("go")
                           .selector()
                               .sequence().precondition(Predicate::is("go")).abort(AbortMode::LowerPriority).action("Touch", touch).back()
                               .wait(std::chrono::hours(1000))
                           .back()
                           .end();
    const std::vector<std::uint32_t> wake = {0, 63, 64, 4095, 4096, 8191, 8192, 9999};
    World world;
    std::vector<AgentHandle> handles;
    for (std::uint32_t i = 0; i < 10'000; ++i) {
        const bool watched = std::find(wake.begin(), wake.end(), i) != wake.end();
        // A watcher's run ends after its Touch: no restart, so that it goes quiet again.
        handles.push_back(world.spawn(watched ? woken : tree, {.seed = i, .restart_on_end = !watched}));
    }
    CHECK(world.step(50ms).agents_stepped == 10'000);  // everyone enters its tree
    // The watchers' guards became live in the first frame, where they were just evaluated: nothing
    // to re-check in the second (docs/semantics.md, "Live").
    CHECK(world.step(50ms).agents_stepped == 0);
    CHECK(world.step(50ms).agents_stepped == 0);
    // Wake them in reverse order: the World still steps them in slot order.
    for (auto it = wake.rbegin(); it != wake.rend(); ++it) world.at(handles[*it]).blackboard().set("go", true);
    const FrameMetrics m = world.step(50ms);
    CHECK(m.agents_stepped == wake.size());
    CHECK(ticked == wake);
    CHECK(world.step(50ms).agents_stepped == 0);
}

TEST_CASE("world: misuse of a World's agent by game code is reported, and the world stays usable") {
    SUBCASE("ticked by hand with a tick number ahead of the world's frame") {
        World world;
        const AgentHandle h = world.spawn(running_tree());
        world.step(10ms);  // frame 0
        world.agent(h)->tick_numbered(100, 0ms);
        CHECK_THROWS_WITH_AS(world.step(10ms), "Agent::tick_numbered(): tick numbers must not go backwards",
                             UsageError);
        CHECK_FALSE(world.in_step());
        CHECK(world.alive(h));
        const AgentHandle other = world.spawn(running_tree());
        CHECK(world.despawn(h));
        CHECK(world.step(10ms).agents_stepped == 1);  // the other agent
        CHECK(world.agent(other)->status() == Status::Running);
    }
    SUBCASE("an action steps the world while its own agent is ticked by hand") {
        World world;
        bool nested_threw = false;
        ActionSpec spec;
        spec.update = [&](ActionContext& ctx) {
            if (!world.in_step() && !nested_threw) {
                try {
                    world.step(10ms);  // would tick this very agent, which is inside its tick
                } catch (const UsageError& e) {
                    nested_threw = std::string(e.what()) == "Agent::tick() called from inside a tick of the same agent";
                }
                CHECK(ctx.agent().in_tick());  // the outer tick is still running
            }
            return Status::Running;
        };
        const AgentHandle h = world.spawn(TreeBuilder("t").action("A", spec).end());
        world.step(10ms);
        world.agent(h)->tick_numbered(5, 0ms);
        CHECK(nested_threw);
        CHECK_FALSE(world.in_step());
    }
    SUBCASE("its agent moved out of the world") {
        World world;
        const AgentHandle h = world.spawn(running_tree());
        world.step(10ms);
        Agent stolen = std::move(*world.agent(h));
        CHECK_THROWS_WITH_AS(world.step(10ms), "Agent::tick() on a moved-from agent", UsageError);
        CHECK_FALSE(world.in_step());
        CHECK(stolen.status() == Status::Running);  // the moved-to agent is intact
        CHECK(world.despawn(h));
        CHECK_NOTHROW(world.step(10ms));
    }
}
