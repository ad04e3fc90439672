// World: handles, stepping only agents with work, spawning and despawning during frames, LOD
// intervals, frame budgets, metrics and determinism across modes.
#include "guard_scenario.hpp"
#include "support/trace_recorder.hpp"
#include "support/waiting_world.hpp"
#include "support/input_observer.hpp"

#include <ebt/detail/engine_access.hpp>  // tick_numbered
#include <ebt/limits.hpp>
#include <ebt/signals.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <utility>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

Tree wait_tree(Duration d) {
    return TreeBuilder("waiter").sequence().wait(d).action("Act", test::finishing_action(1, Status::Success)).back().end();
}

Tree running_tree() { return TreeBuilder("runner").action("Run", test::running_action()).end(); }

// A guard whose fallback ("Sleep") suspends itself, so that the agent is idle until `enemy_seen`
// changes; registers the guard scenario's actions and "Sleep" in `registry`.
Tree sleepy_guard_tree(Registry& registry) {
    scenarios::register_guard_actions(registry);
    registry.add_action("Sleep", [](ActionContext& ctx) {
        ctx.suspend();
        return Status::Running;
    });
    return TreeBuilder("sleepy", registry)
        .key<bool>("enemy_seen")
        .active_selector()
            .sequence().check("enemy_seen").action("Attack").back()
            .action("Sleep")
        .back()
        .end();
}

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
    const Tree tree = sleepy_guard_tree(registry);
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

// World::on_agent_wake returns at once for a slot whose awake bit is set (a write to an agent stepped
// every frame, the 1 % frame's common case: docs/benchmarks.md, "The switch on a cold agent"). Two
// agents in neighbouring slots of one word of awake bits: slot 0 patrols (the guard tree: awake every
// frame), slot 1 sleeps in a suspended action. A write to each wakes a live guard; each must wake
// exactly its own agent: the patroller switches this frame as before, the sleeper is stepped in the
// next frame, and both traces are polling's.
TEST_CASE("world: writes to an awake agent and to its sleeping neighbour wake each its own slot, as polling sees them") {
    Registry registry;
    const Tree sleeper_tree = sleepy_guard_tree(registry);  // registers the guard actions too
    const Tree patroller_tree = scenarios::guard_tree(registry);
    struct Run {
        World world;
        test::TraceRecorder patroller_trace, sleeper_trace;
        AgentHandle patroller, sleeper;
        std::vector<std::uint32_t> stepped;
    };
    auto run = [&](Mode mode, Run& r) {
        r.patroller = r.world.spawn(patroller_tree, {.mode = mode, .listener = &r.patroller_trace});
        r.sleeper = r.world.spawn(sleeper_tree, {.mode = mode, .listener = &r.sleeper_trace});
        REQUIRE(r.patroller.index / 64 == r.sleeper.index / 64);  // one word of awake bits
        for (int f = 0; f < 3; ++f) r.stepped.push_back(r.world.step(50ms).agents_stepped);
        // Frame 3's writes: both see an enemy; the patroller is awake, the sleeper asleep.
        CHECK(r.world.at(r.patroller).blackboard().set(patroller_tree.key<bool>(scenarios::kEnemySeen), true));
        CHECK(r.world.at(r.sleeper).blackboard().set(sleeper_tree.key<bool>("enemy_seen"), true));
        for (int f = 3; f < 6; ++f) r.stepped.push_back(r.world.step(50ms).agents_stepped);
    };
    Run event, polling;
    run(Mode::Event, event);
    run(Mode::Polling, polling);
    // Event mode steps the patroller every frame and the sleeper only in its first frame until
    // written; from frame 3 on both attack.
    CHECK(event.stepped == std::vector<std::uint32_t>{2, 1, 1, 2, 2, 2});
    CHECK(event.sleeper_trace.tick(3) == "4:T(Aborted) 1:I 3:I 3:U");
    CHECK(event.patroller_trace.tick(3) == "10:T(Aborted) 1:I 3:I 7:I 9:I 9:U");
    for (std::uint64_t tick = 0; tick < 6; ++tick) {
        CAPTURE(tick);
        CHECK(event.sleeper_trace.tick(tick) == polling.sleeper_trace.tick(tick));
        CHECK(event.patroller_trace.tick(tick) == polling.patroller_trace.tick(tick));
    }
    CHECK(event.world.state_hash() == polling.world.state_hash());
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

TEST_CASE("world: an agent woken by an earlier agent's tick is stepped in the same frame; one woken behind the loop, in the next") {
    // The single-threaded loop walks the awake bits a word (64 slots) at a time: a tick that wakes
    // agents later in slot order (in the same word, at its last bit, in the next word, in a later
    // summary word) must see them stepped in this frame, in slot order; an agent before the waker is
    // stepped in the next frame.
    std::vector<std::pair<std::uint64_t, std::uint32_t>> ticked;  // (frame, slot) in the order their actions ran
    World world;
    std::vector<AgentHandle> handles;
    const std::vector<std::uint32_t> targets = {3, 11, 63, 64, 130, 5000, 9999};  // woken by slot 10
    ActionSpec touch;
    touch.update = [&](ActionContext& ctx) {
        const auto self = static_cast<std::uint32_t>(ctx.agent().seed());
        ticked.emplace_back(ctx.tick(), self);
        if (self == 10)
            for (const std::uint32_t t : targets) world.agent(handles[t])->blackboard().set("go", true);
        return Status::Success;
    };
    const Tree woken = TreeBuilder("woken")
                           .key<bool>("go")
                           .selector()
                               .sequence().precondition(Predicate::is("go")).abort(AbortMode::LowerPriority).action("Touch", touch).back()
                               .wait(std::chrono::hours(1000))
                           .back()
                           .end();
    const Tree waker = TreeBuilder("waker").key<bool>("go").sequence().wait(100ms).action("Touch", touch).back().end();
    for (std::uint32_t i = 0; i < 10'000; ++i)
        handles.push_back(world.spawn(i == 10 ? waker : woken, {.seed = i, .restart_on_end = false}));
    CHECK(world.step(50ms).agents_stepped == 10'000);  // frame 0: everyone enters its tree
    CHECK(world.step(50ms).agents_stepped == 0);       // frame 1
    ticked.clear();
    const FrameMetrics m = world.step(50ms);  // frame 2: the waker's Wait ends, it wakes the others
    CHECK(m.agents_stepped == 7);             // the waker and the six after it
    CHECK(world.step(50ms).agents_stepped == 1);  // frame 3: slot 3, behind the loop in frame 2
    CHECK(world.step(50ms).agents_stepped == 0);
    const std::vector<std::pair<std::uint64_t, std::uint32_t>> expected = {
        {2, 10}, {2, 11}, {2, 63}, {2, 64}, {2, 130}, {2, 5000}, {2, 9999}, {3, 3}};
    CHECK(ticked == expected);
}

TEST_CASE("world: misuse of a World's agent by game code is reported, and the world stays usable") {
    SUBCASE("ticked by hand with a tick number ahead of the world's frame") {
        // (tick_numbered is the World's hook, out of game code's reach since it moved behind
        // detail::EngineAccess; the World still refuses a tick number that went backwards.)
        World world;
        const AgentHandle h = world.spawn(running_tree());
        world.step(10ms);  // frame 0
        detail::EngineAccess::tick_numbered(*world.agent(h), 100, 0ms);
        CHECK_THROWS_WITH_AS(world.step(10ms), "Agent::tick_numbered(): tick numbers must not go backwards",
                             UsageError);
        CHECK_FALSE(world.in_step());
        CHECK(world.alive(h));
        const AgentHandle other = world.spawn(running_tree());
        CHECK(world.despawn(h));
        CHECK(world.step(10ms).agents_stepped == 1);  // the other agent
        CHECK(world.agent(other)->status() == Status::Running);
    }
    SUBCASE("the agents ticked before the one that threw go on in the next frame") {
        // The step that threw is a frame: its clock moved and agent a was ticked in it, so the next
        // step is the next frame (a would refuse a second tick numbered as the first).
        World world;
        const AgentHandle a = world.spawn(running_tree());
        const AgentHandle h = world.spawn(running_tree());
        world.step(10ms);  // frame 0
        detail::EngineAccess::tick_numbered(*world.agent(h), 100, 0ms);
        CHECK_THROWS_WITH_AS(world.step(10ms), "Agent::tick_numbered(): tick numbers must not go backwards", UsageError);
        CHECK(world.frame() == 2);
        CHECK(world.despawn(h));
        const FrameMetrics m = world.step(10ms);
        CHECK(m.frame == 2);
        CHECK(m.agents_stepped == 1);
        CHECK(world.agent(a)->status() == Status::Running);
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
        detail::EngineAccess::tick_numbered(*world.agent(h), 5, 0ms);
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

namespace {

/// What one run of the "step that throws" scenario saw (see the test below).
struct ThrowingFrameRun {
    std::vector<std::string> victim_log;      // the victim's onTerminate, with the frame it ran in
    std::vector<std::string> first, tail, spawned;  // lifecycle traces of slots 0 and 3 and of the spawned agent
    std::string tail_frame_1;                 // slot 3's events in frame 1
    std::uint64_t hash_after = 0;             // state_hash() after frame 2
};

/// Four running agents in slots 0-3 (1: the victim, with an onTerminate; 2: `bad`). In frame 1 a
/// change slot of a shared blackboard (it runs when the step publishes, before the ticks, at any
/// thread count) spawns an agent, despawns the victim and asks for a reload of "runner" (the same
/// structure: its agents keep running). With `throwing`, `bad` was ticked by hand ahead of the world,
/// so frame 1 throws at its tick: slot 0 was ticked in it, slot 3 was not. Either way `bad` is
/// despawned after frame 1 and frame 2 is stepped. Checks what must hold after frame 1 in both runs.
ThrowingFrameRun run_throwing_frame(Mode mode, std::uint32_t threads, bool throwing) {
    ThrowingFrameRun out;
    test::TraceRecorder first, tail, spawned_trace;  // (they outlive the world, whose end the agents hear)
    World world(WorldOptions{.threads = threads});
    ActionSpec victim_spec = test::running_action();
    victim_spec.on_terminate = [&](ActionContext&, Status s) {
        out.victim_log.push_back(std::string("victim ") + to_string(s) + " in frame " + std::to_string(world.frame()));
    };
    SharedBlackboard& orders = world.create_shared("orders");
    orders.declare<bool>("go");
    const AgentHandle a0 = world.spawn(running_tree(), {.mode = mode, .listener = &first});
    const AgentHandle victim = world.spawn(TreeBuilder("victim").action("V", victim_spec).end(), {.mode = mode});
    const AgentHandle bad = world.spawn(running_tree(), {.mode = mode});
    const AgentHandle a3 = world.spawn(running_tree(), {.mode = mode, .listener = &tail});
    AgentHandle spawned;
    ReloadReport asked;
    const auto connection = orders.changes().connect([&](const SharedBlackboard&, KeyId) {
        spawned = world.spawn(running_tree(), {.mode = mode, .listener = &spawned_trace});
        CHECK(world.despawn(victim));
        asked = world.reload(running_tree());
    });
    CHECK(world.step(10ms).agents_stepped == 4);  // frame 0
    orders.set("go", true);
    if (throwing) {
        detail::EngineAccess::tick_numbered(*world.agent(bad), 100, 0ms);
        CHECK_THROWS_WITH_AS(world.step(10ms), "Agent::tick_numbered(): tick numbers must not go backwards", UsageError);
    } else {
        CHECK(world.step(10ms).agents_stepped == 3);  // slots 0, 2, 3 (the victim is despawned)
    }
    // The frame is over, thrown or not: counted, its despawn freed, its spawn joined, its reload applied.
    CHECK_FALSE(world.in_step());
    CHECK(world.frame() == 2);
    CHECK(out.victim_log == std::vector<std::string>{"victim Aborted in frame 1"});
    CHECK_FALSE(world.alive(victim));
    CHECK(world.size() == 4);
    CHECK(asked.applied == false);
    CHECK(spawned.index == 4);
    CHECK(world.agent(spawned) != nullptr);
    CHECK(world.handles() == std::vector<AgentHandle>{a0, bad, a3, spawned});
    const std::vector<ReloadReport> reports = world.take_reload_reports();
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].applied);
    CHECK(reports[0].frame == 2);
    CHECK(reports[0].agents_updated == 4);  // a0, bad, a3 and the agent spawned in frame 1
    CHECK(reports[0].agents_restarted == 0);
    out.tail_frame_1 = tail.tick(1);
    CHECK(world.despawn(bad));
    const FrameMetrics m = world.step(10ms);  // frame 2: slots 0 and 3 and the spawned agent
    CHECK(m.frame == 2);
    CHECK(m.agents_stepped == 3);
    out.hash_after = world.state_hash();
    out.first = first.lifecycle();
    out.tail = tail.lifecycle();
    out.spawned = spawned_trace.lifecycle();
    return out;
}

}  // namespace

TEST_CASE("world: a step that throws finishes its frame first (frees, joins, reloads, the count), in both modes and at 2 threads") {
    for (const Mode mode : {Mode::Event, Mode::Polling}) {
        for (const std::uint32_t threads : {1u, 2u}) {
            CAPTURE(to_string(mode));
            CAPTURE(threads);
            const ThrowingFrameRun thrown = run_throwing_frame(mode, threads, true);
            const ThrowingFrameRun plain = run_throwing_frame(mode, threads, false);
            // Slot 3, after the agent that threw, was not ticked in frame 1: it kept its work and
            // ticked in frame 2 (its dt accumulated). Everything else is the run without the throw.
            CHECK(thrown.tail_frame_1 == "");
            CHECK(plain.tail_frame_1 == "0:U");
            CHECK(thrown.tail.back() == "2 0:U");
            CHECK(thrown.tail.size() + 1 == plain.tail.size());
            CHECK(thrown.first == plain.first);
            CHECK(thrown.spawned == plain.spawned);
            CHECK(thrown.spawned == std::vector<std::string>{"2 0:I", "2 0:U"});
            CHECK(thrown.victim_log == plain.victim_log);
            CHECK(thrown.hash_after == plain.hash_after);
        }
    }
}

TEST_CASE("world: with a budget, the frame after a step that threw starts where the thrown one started, at 1 and 2 threads") {
    // Four running agents, a budget of 2. Frame 0 steps slots 0, 1; frame 1 would step 2, 3 but slot 3
    // was ticked by hand ahead of the world and throws (slot 2 was ticked). The next frame starts at
    // slot 2 again (at 2 threads the choice had already moved the cursor to slot 0: it is put back).
    for (const std::uint32_t threads : {1u, 2u}) {
        CAPTURE(threads);
        World world(WorldOptions{.threads = threads});
        std::vector<std::pair<std::uint64_t, std::uint32_t>> ticked;  // (frame, slot)
        ActionSpec spec;
        spec.update = [&](ActionContext& ctx) {
            ticked.emplace_back(ctx.agent().ticks(), ctx.agent_handle().index);
            return Status::Running;
        };
        std::vector<AgentHandle> h;
        for (int i = 0; i < 4; ++i) h.push_back(world.spawn(TreeBuilder("t").action("A", spec).end()));
        world.set_agent_budget(2);
        world.step(10ms);  // frame 0: slots 0, 1
        detail::EngineAccess::tick_numbered(*world.agent(h[3]), 100, 0ms);
        CHECK_THROWS_WITH_AS(world.step(10ms), "Agent::tick_numbered(): tick numbers must not go backwards", UsageError);
        CHECK(world.despawn(h[3]));
        ticked.erase(std::remove_if(ticked.begin(), ticked.end(), [](const auto& t) { return t.first >= 100; }), ticked.end());
        world.step(10ms);  // frame 2: slots 2, 0
        world.step(10ms);  // frame 3: slots 1, 2
        const std::vector<std::pair<std::uint64_t, std::uint32_t>> expected = {{0, 0}, {0, 1}, {1, 2}, {2, 0}, {2, 2}, {3, 1}, {3, 2}};
        std::sort(ticked.begin(), ticked.end());
        CHECK(ticked == expected);
    }
}

TEST_CASE("world: an input observer that throws during a step (after the publish) leaves it with the frame finished") {
    // A recorder that cannot write its file throws out of the world's call: here after_publish in
    // frame 1, after a change slot of the publish spawned an agent and despawned another. No agent
    // was ticked in frame 1; the spawn has joined and the despawned agent is freed when step() throws.
    struct Observer final : test::SilentInputObserver {
        bool fail = false;
        int step_ends = 0;
        void after_publish() override {
            if (std::exchange(fail, false)) throw std::runtime_error("the recording's file is full");
        }
        void on_step_end(const FrameMetrics&) override { ++step_ends; }
    } observer;
    std::vector<std::string> log;
    World world;
    SharedBlackboard& orders = world.create_shared("orders");
    orders.declare<bool>("go");
    ActionSpec victim_spec = test::running_action();
    victim_spec.on_terminate = [&](ActionContext&, Status s) { log.push_back(std::string("victim ") + to_string(s)); };
    const AgentHandle a0 = world.spawn(running_tree());
    const AgentHandle victim = world.spawn(TreeBuilder("victim").action("V", victim_spec).end());
    AgentHandle spawned;
    const auto connection = orders.changes().connect([&](const SharedBlackboard&, KeyId) {
        spawned = world.spawn(running_tree());
        world.despawn(victim);
    });
    world.set_input_observer(&observer);
    world.step(10ms);  // frame 0
    orders.set("go", true);
    observer.fail = true;
    CHECK_THROWS_WITH_AS(world.step(10ms), "the recording's file is full", std::runtime_error);
    CHECK(observer.step_ends == 1);  // frame 0's: a step that threw does not end with on_step_end
    CHECK_FALSE(world.in_step());
    CHECK(world.frame() == 2);
    CHECK(world.now() == 20'000);
    CHECK(log == std::vector<std::string>{"victim Aborted"});
    CHECK(world.agent(spawned) != nullptr);
    CHECK(world.handles() == std::vector<AgentHandle>{a0, spawned});
    const FrameMetrics m = world.step(10ms);  // frame 2: a0 (awake since frame 0) and the spawned agent
    CHECK(m.frame == 2);
    CHECK(m.agents_stepped == 2);
    CHECK(observer.step_ends == 2);
}

// ---- storage and callbacks: spawning and despawning from user code never touches freed state ------------------

namespace {

/// Two running actions whose onTerminate calls `on_terminate` and then checks that its own agent's
/// state is intact (its memory and blackboard are still readable after the callback).
Tree terminating_tree(std::function<void(ActionContext&)> on_terminate, std::vector<std::string>& log) {
    ActionSpec spec = test::running_action();
    spec.memory_bytes = sizeof(int);
    spec.on_initialize = [](ActionContext& ctx) { ctx.memory<int>() = 7; };
    spec.on_terminate = [on_terminate, &log](ActionContext& ctx, Status s) {
        on_terminate(ctx);
        log.push_back(std::string("terminate:") + to_string(s) + " memory " + std::to_string(ctx.memory<int>()) +
                      " hp " + std::to_string(ctx.blackboard().get<int>("hp")));
    };
    return TreeBuilder("dying")
        .key<int>("hp", 100)
        .parallel(Policy::RequireAll, Policy::RequireAll)
            .action("A", spec)
            .action("B", spec)
        .back()
        .end();
}

}  // namespace

TEST_CASE("world: an onTerminate that spawns while its agent ends between frames (despawn, abort)") {
    // Each onTerminate spawns 40 agents: storage that moved agents when it grew moved the dying one
    // under its own feet. Between frames the new agents exist at once.
    for (const bool by_abort : {false, true}) {
        CAPTURE(by_abort);
        std::vector<std::string> log;  // outlives the world, whose destruction ends the agents
        World world;
        std::vector<AgentHandle> spawned;
        const AgentHandle h = world.spawn(terminating_tree(
            [&](ActionContext&) {
                for (int i = 0; i < 40; ++i) spawned.push_back(world.spawn(running_tree()));
            },
            log));
        world.step(10ms);
        if (by_abort) world.at(h).abort();
        else CHECK(world.despawn(h));
        CHECK(log == std::vector<std::string>{"terminate:Aborted memory 7 hp 100", "terminate:Aborted memory 7 hp 100"});
        REQUIRE(spawned.size() == 80);
        for (const AgentHandle s : spawned) CHECK(world.agent(s) != nullptr);
        CHECK(world.alive(h) == by_abort);
        CHECK(world.size() == (by_abort ? 81u : 80u));
        CHECK(world.step(10ms).agents_stepped == (by_abort ? 81u : 80u));  // the aborted agent restarts
    }
}

TEST_CASE("world: an agent despawned from its own onTerminate during abort() between frames is freed afterwards") {
    std::vector<std::string> log;
    World world;
    AgentHandle h{};
    bool despawned = false;
    h = world.spawn(terminating_tree(
        [&](ActionContext&) {
            if (!despawned) {
                despawned = true;
                CHECK(world.despawn(h));  // the agent is inside abort(): freed once that returns
                CHECK_FALSE(world.alive(h));
            }
        },
        log));
    world.step(10ms);
    world.at(h).abort();
    CHECK(log == std::vector<std::string>{"terminate:Aborted memory 7 hp 100", "terminate:Aborted memory 7 hp 100"});
    CHECK_FALSE(world.alive(h));
    CHECK(world.size() == 0);
    CHECK(world.step(10ms).agents_stepped == 0);
    const AgentHandle next = world.spawn(running_tree());
    CHECK(next.index == h.index);  // the slot was freed and is reused
    CHECK(next.generation == h.generation + 1);
}

TEST_CASE("world: destroying the world: onTerminate sees stale handles, and spawning is refused") {
    std::vector<std::string> log;
    {
        World world;
        AgentHandle self{}, other{};
        self = world.spawn(terminating_tree(
            [&](ActionContext&) {
                log.push_back(world.alive(self) ? "self alive" : "self stale");
                log.push_back(world.alive(other) ? "other alive" : "other stale");
                log.push_back(world.despawn(other) ? "despawned other" : "other not despawned");
                try {
                    world.spawn(running_tree());
                    log.push_back("spawned");
                } catch (const UsageError& e) {
                    log.push_back(e.what());
                }
            },
            log));
        other = world.spawn(running_tree());
        world.step(10ms);
    }
    const std::vector<std::string> one = {"self stale", "other stale", "other not despawned",
                                          "World::spawn(): the world is being destroyed",
                                          "terminate:Aborted memory 7 hp 100"};
    std::vector<std::string> both = one;
    both.insert(both.end(), one.begin(), one.end());
    CHECK(log == both);
}

TEST_CASE("world: change slots that despawn or spawn between frames never free a blackboard still in use") {
    for (const bool spawn : {false, true}) {
        CAPTURE(spawn);
        std::vector<std::string> log;  // outlives the world, whose destruction ends the agents
        World world;
        const Tree tree = terminating_tree([](ActionContext&) {}, log);
        const AgentHandle h = world.spawn(tree);
        std::vector<AgentHandle> spawned;
        std::vector<int> seen;
        boost::signals2::scoped_connection first = world.bus().subscribe([&](const BlackboardChange&) {
            if (spawn) {
                for (int i = 0; i < 40; ++i) spawned.push_back(world.spawn(tree));
            } else {
                CHECK(world.despawn(h));
                CHECK_FALSE(world.alive(h));
            }
        });
        boost::signals2::scoped_connection second = world.bus().subscribe(
            [&](const BlackboardChange& ch) { seen.push_back(ch.blackboard.get<int>(Key<int>{ch.key})); });
        world.step(10ms);
        world.at(h).blackboard().set("hp", 90);
        CHECK(seen == std::vector<int>{90});
        first.disconnect();
        if (spawn) {
            CHECK(world.size() == 41);
            for (const AgentHandle s : spawned) CHECK(world.agent(s) != nullptr);
            CHECK(world.at(h).blackboard().get<int>("hp") == 90);
        } else {
            CHECK(world.size() == 0);
            CHECK(world.agent(h) == nullptr);
            CHECK(log.empty());  // freed once no callback runs: at the latest when the next step starts
            CHECK(world.step(10ms).agents_stepped == 0);
            CHECK(log == std::vector<std::string>{"terminate:Aborted memory 7 hp 90", "terminate:Aborted memory 7 hp 90"});
        }
    }
}

TEST_CASE("world: at the end of a frame, callbacks of the agents freed may spawn and despawn; all is done in that frame end") {
    std::vector<std::string> log;
    World world;
    AgentHandle victim{}, second{}, spawned{};
    bool done = false;
    ActionSpec killer;
    killer.update = [&](ActionContext& ctx) {
        if (ctx.tick() == 1) CHECK(world.despawn(victim));
        return Status::Running;
    };
    world.spawn(TreeBuilder("killer").action("Kill", killer).end());
    victim = world.spawn(terminating_tree(
        [&](ActionContext&) {
            if (done) return;
            done = true;
            spawned = world.spawn(running_tree());  // joins in this frame end
            CHECK(world.despawn(second));           // freed in this frame end too
        },
        log));
    second = world.spawn(terminating_tree([](ActionContext&) {}, log));
    world.at(second).blackboard().set("hp", 2);
    world.step(10ms);
    world.step(10ms);
    CHECK(log == std::vector<std::string>{"terminate:Aborted memory 7 hp 100", "terminate:Aborted memory 7 hp 100",
                                          "terminate:Aborted memory 7 hp 2", "terminate:Aborted memory 7 hp 2"});
    CHECK_FALSE(world.alive(victim));
    CHECK_FALSE(world.alive(second));
    REQUIRE(world.agent(spawned) != nullptr);
    CHECK(world.size() == 2);
    CHECK(world.step(10ms).agents_stepped == 2);  // the killer and the spawned agent
}

TEST_CASE("world: step() from a change slot or from an onTerminate of an agent being freed is refused") {
    std::vector<std::string> log, errors;
    World world;
    const auto try_step = [&] {
        try {
            world.step(10ms);
        } catch (const UsageError& e) {
            errors.push_back(e.what());
        }
    };
    const AgentHandle h = world.spawn(terminating_tree([&](ActionContext&) { try_step(); }, log));
    boost::signals2::scoped_connection c = world.bus().subscribe([&](const BlackboardChange&) { try_step(); });
    world.step(10ms);
    world.at(h).blackboard().set("hp", 5);
    CHECK(world.despawn(h));
    const std::string refused =
        "World::step() called from a callback of the world (a change slot, or an onTerminate of an agent being freed)";
    CHECK(errors == std::vector<std::string>{refused, refused, refused});
    CHECK(log.size() == 2);
    CHECK(world.frame() == 1);
}

// ---- handles -------------------------------------------------------------------------------------------

struct ebt::WorldTestAccess {
    static void set_generation(World& world, std::uint32_t index, std::uint32_t generation) {
        world.set_generation_for_test(index, generation);
    }
};

TEST_CASE("world: a spawn cancelled in its frame leaves a stale handle; the slot's next agent gets a new one") {
    for (const bool next_in_frame : {true, false}) {
        CAPTURE(next_in_frame);
        World world;
        AgentHandle a{}, b{};
        int calls = 0;
        ActionSpec spec;
        spec.update = [&](ActionContext&) {
            if (calls++ == 0) {
                a = world.spawn(running_tree());
                CHECK(world.despawn(a));  // cancelled before it joined
                CHECK_FALSE(world.alive(a));
                if (next_in_frame) b = world.spawn(running_tree());
            }
            return Status::Running;
        };
        world.spawn(TreeBuilder("spawner").action("Spawn", spec).end());
        world.step(10ms);
        if (!next_in_frame) b = world.spawn(running_tree());
        CHECK(b.index == a.index);
        CHECK(b != a);
        CHECK_FALSE(world.alive(a));
        CHECK(world.alive(b));
        CHECK_FALSE(world.despawn(a));  // must not kill the new agent
        CHECK(world.alive(b));
        CHECK(world.agent(b) != nullptr);
        CHECK(world.size() == 2);
    }
}

TEST_CASE("world: a slot whose generations are used up is retired: an old handle never comes back") {
    World world;
    const AgentHandle first = world.spawn(running_tree());
    CHECK(first == AgentHandle{0, 1});
    CHECK(world.despawn(first));
    WorldTestAccess::set_generation(world, 0, 0xFFFFFFFE);
    const AgentHandle last = world.spawn(running_tree());
    CHECK(last == AgentHandle{0, 0xFFFFFFFE});
    CHECK(world.despawn(last));
    for (int i = 0; i < 4; ++i) {
        const AgentHandle h = world.spawn(running_tree());
        CAPTURE(h.index);
        CAPTURE(h.generation);
        CHECK(h.index != 0);
        CHECK_FALSE(world.alive(first));
        CHECK(world.despawn(h));
    }
    CHECK_FALSE(world.alive(first));
    CHECK_FALSE(world.alive(last));
    CHECK_FALSE(world.alive(AgentHandle{0, 0xFFFFFFFF}));
    CHECK_FALSE(world.alive(AgentHandle{0, 0}));
}

// ---- timers ---------------------------------------------------------------------------------------------

TEST_CASE("world: the timer heap keeps one entry per waiting agent, however often guards wake them") {
    World world;
    SharedBlackboard& squad = test::create_sentry_squad(world);
    const Tree tree = test::sentry_tree(std::chrono::hours(1000));
    constexpr std::uint32_t kAgents = 10'000;
    for (std::uint32_t i = 0; i < kAgents; ++i) world.spawn(tree, {.shared = {{"squad", &squad}}});
    world.step(50ms);
    world.step(50ms);
    std::size_t most = 0;
    std::uint32_t stepped = 0;
    for (int frame = 0; frame < 20; ++frame) {
        squad.set("noise", frame % 2 == 0);  // a live guard reads it: every agent wakes every frame
        stepped += world.step(50ms).agents_stepped;
        most = std::max(most, world.timer_entries());
    }
    CHECK(stepped == 20 * kAgents);
    CHECK(most == kAgents);  // the same deadline: the entry already in the heap serves
}

TEST_CASE("world: stale timer entries are compacted: deadlines that move on every wake do not grow the heap") {
    std::vector<ResumeHandle> handles(1000);
    ActionSpec sleeper;
    sleeper.on_initialize = [&handles](ActionContext& ctx) { handles[ctx.agent().seed()] = ctx.suspend(); };
    sleeper.update = [](ActionContext&) { return Status::Running; };
    // Each resume ends the run of Timeout, which Repeat starts again (next tick) with a deadline an hour later.
    const Tree tree = TreeBuilder("resumed").repeat().timeout(1h).action("Sleep", sleeper).back().back().end();
    World world;
    std::vector<AgentHandle> agents;
    for (std::uint64_t i = 0; i < handles.size(); ++i) agents.push_back(world.spawn(tree, {.seed = i}));
    world.step(50ms);
    std::size_t most = 0;
    for (int frame = 0; frame < 50; ++frame) {
        std::size_t resumed = 0;
        for (std::size_t i = 0; i < agents.size(); ++i) resumed += world.at(agents[i]).resume(handles[i], Status::Success);
        CAPTURE(frame);
        CHECK(resumed == 1000);
        world.step(50ms);  // the action ends; Repeat starts its child again in the next tick
        world.step(50ms);  // a new Timeout, due an hour from now: the agent's deadline moved
        most = std::max(most, world.timer_entries());
    }
    CHECK(most >= 1000);
    CHECK(most <= 2 * 1000 + 64);  // live entries (one per agent) and at most as many stale ones, plus slack
}

TEST_CASE("world: a deadline near the end of the clock never falls due (world time saturates)") {
    World world;
    world.step(std::chrono::hours(1));
    // The agent's clock starts at 0: its deadline is far from "never" in agent time, but an hour of
    // world time later it is past the end of the world's clock.
    const Duration far(std::numeric_limits<std::int64_t>::max() - 1'000'000);
    const AgentHandle h = world.spawn(TreeBuilder("far").sequence().wait(far).action("Act", test::running_action()).back().end());
    for (int i = 0; i < 3; ++i) world.step(10ms);
    CHECK(world.at(h).status(1) == Status::Running);  // the Wait
    CHECK(world.at(h).status(2) == Status::Invalid);
    CHECK(world.timer_entries() == 0);
}

// ---- refused steps ----------------------------------------------------------------------------------------

TEST_CASE("world: a refused step changes nothing (frame, clock, agents, shared writes, timers)") {
    World world;
    SharedBlackboard& squad = world.create_shared("squad");
    squad.declare<int>("count");
    const AgentHandle waiter = world.spawn(wait_tree(100ms));
    const AgentHandle runner = world.spawn(running_tree(), {.mode = Mode::Polling});
    world.step(50ms);
    world.step(50ms);
    squad.set("count", 3);
    const std::uint64_t hash = world.state_hash();
    const auto unchanged = [&] {
        CHECK(world.frame() == 2);
        CHECK(world.now() == 100'000);
        CHECK(world.state_hash() == hash);
        CHECK(world.at(waiter).now() == 50'000);  // not stepped since frame 0: its logical clock is in the hash
        CHECK(world.at(waiter).status(1) == Status::Running);  // its Wait is due at 150 ms
        CHECK(world.at(runner).stats().updates == 2);
        CHECK(squad.get<int>("count") == 0);  // not published
        CHECK(squad.pending<int>("count") == 3);
        CHECK_FALSE(world.in_step());
    };
    CHECK_THROWS_WITH_AS(world.step(std::nan("")), "World::step(): dt is NaN", UsageError);
    unchanged();
    CHECK_THROWS_WITH_AS(world.step(std::numeric_limits<double>::infinity()),
                         "World::step(): dt of inf s is past the clock's range (2^61 us, about 73,000 years)", UsageError);
    unchanged();
    CHECK_THROWS_WITH_AS(world.step(-0.05), "World::step(): negative dt (-0.05 s)", UsageError);
    unchanged();
    CHECK_THROWS_WITH_AS(world.step(Duration(-1)), "World::step() with a negative dt", UsageError);
    unchanged();
    const Duration past(limits::kMaxClockMicroseconds - 100'000 + 1);
    const std::string past_message = "World::step(): a dt of " + std::to_string(past.count()) +
                                     " us would move the world clock past its limit (2^61 us, about 73,000 years)";
    CHECK_THROWS_WITH_AS(world.step(past), past_message.c_str(), UsageError);
    unchanged();
    // The world steps on normally: the Wait falls due, the write is published.
    world.step(50ms);
    CHECK(world.at(waiter).status(2) == Status::Success);
    CHECK(squad.get<int>("count") == 3);
}

TEST_CASE("world: despawning agents compacts their timer entries") {
    World world;
    std::vector<AgentHandle> agents;
    for (int i = 0; i < 1000; ++i) agents.push_back(world.spawn(wait_tree(1h)));
    world.step(50ms);
    CHECK(world.timer_entries() == 1000);
    for (int i = 0; i < 990; ++i) CHECK(world.despawn(agents[static_cast<std::size_t>(i)]));
    CHECK(world.timer_entries() <= 2 * 10 + 64);
    world.step(50ms);
    CHECK(world.timer_entries() <= 2 * 10 + 64);
}

namespace {

/// The events an agent's listener heard, formatted with their messages ("2 0:E(flaky update)").
std::vector<std::string> heard(const test::TraceRecorder& recorder) {
    std::vector<std::string> lines;
    for (const auto& en : recorder.entries) {
        TraceEvent event = en.event;
        event.message = en.message;
        lines.push_back(format(event));
    }
    return lines;
}

/// A running action whose third update sets a listener on its agent (the `recorders` entry of its
/// seed) and throws: without a listener the Error event has no one to hear it, and a World ticks an
/// agent without a listener on its quiet tick's lean path (Runtime::world_tick), which keeps the
/// exception for the general path that reports it (Runtime::keep_world_update_error).
Tree flaky_tree(std::vector<test::TraceRecorder>& recorders) {
    ActionSpec spec;
    spec.memory_bytes = sizeof(int);
    spec.update = [&recorders](ActionContext& ctx) {
        if (++ctx.memory<int>() == 3) {
            ctx.agent().set_listener(&recorders[ctx.agent().seed()]);
            throw std::runtime_error("flaky update");
        }
        return Status::Running;
    };
    return TreeBuilder("flaky").action("Flaky", spec).end();
}

}  // namespace

TEST_CASE("world: a quiet tick whose update throws is reported as a direct tick reports it (Error event, Failure), at 1 and 2 threads") {
    constexpr std::uint64_t kAgents = 300;  // (enough for two tasks at 2 threads)
    std::vector<test::TraceRecorder> direct_heard(1);
    Agent direct(flaky_tree(direct_heard), {.seed = 0});
    for (int frame = 0; frame < 6; ++frame) direct.tick(50ms);
    const std::vector<std::string> expected = heard(direct_heard[0]);
    REQUIRE(std::find(expected.begin(), expected.end(), "2 0:E(flaky update)") != expected.end());
    for (const std::uint32_t threads : {1u, 2u}) {
        CAPTURE(threads);
        std::vector<test::TraceRecorder> recorders(kAgents);
        World world;
        world.set_threads(threads);
        const Tree tree = flaky_tree(recorders);
        for (std::uint64_t i = 0; i < kAgents; ++i) world.spawn(tree, {.seed = i});
        for (int frame = 0; frame < 6; ++frame) world.step(50ms);
        for (std::uint64_t i = 0; i < kAgents; ++i) {
            CAPTURE(i);
            REQUIRE(heard(recorders[i]) == expected);
        }
    }
}
