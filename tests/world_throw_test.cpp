// A World step that throws (docs/world.md, "A step that throws"), the cases the other world tests do
// not reach: the publish's throw at several threads while the tasks were to route its changes, and the
// time of an agent whose tick was refused.
#include "support/input_observer.hpp"
#include "support/trace_recorder.hpp"

#include <ebt/detail/engine_access.hpp>  // tick_numbered: an agent ticked ahead of its World

#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

using namespace ebt;
using namespace std::chrono_literals;

namespace {

/// A shared value whose copy (into the published value, as a publish makes it) throws while
/// `brittle_copies_refused` is set: the publish of its key throws, the step with it.
bool brittle_copies_refused = false;
struct Brittle {
    int value = 0;
    Brittle() = default;
    explicit Brittle(int v) : value(v) {}
    Brittle(const Brittle& other) : value(other.value) { refuse_if_asked(); }
    Brittle& operator=(const Brittle& other) {
        refuse_if_asked();
        value = other.value;
        return *this;
    }
    friend bool operator==(const Brittle&, const Brittle&) = default;
    static void refuse_if_asked() {
        if (brittle_copies_refused) throw std::runtime_error("brittle copy refused");
    }
};

}  // namespace

template <> struct ebt::BlackboardValue<Brittle> {
    static std::uint64_t hash(const Brittle& v) noexcept { return static_cast<std::uint64_t>(v.value); }
};

TEST_CASE("world throw: a publish that throws at 2 threads routes the changes it had collected for the tasks before the step throws; the rest comes next frame") {
    // Three shared blackboards, published in this order: alpha (alarm), bravo (m, thing, after), charlie (k).
    // A world without listeners, input observer or bus slots, at 2 threads: the publish collects its
    // changes for the parallel phase's tasks to route (World::publish_shared, "deferring"). bravo's
    // Brittle key throws as it is copied: alpha.alarm and bravo.m were published (and collected), thing,
    // after and charlie.k were not. The catch branch routes what was collected on the calling thread
    // before the step throws, so every agent's mirrors hold alpha.alarm and bravo.m at once, and the event
    // agents whose guard reads alpha.alarm were woken; the next frame publishes the rest.
    for (const Mode mode : {Mode::Event, Mode::Polling}) {
        CAPTURE(to_string(mode));
        World world(WorldOptions{.threads = 2});
        SharedBlackboard& alpha = world.create_shared("alpha");
        SharedBlackboard& bravo = world.create_shared("bravo");
        SharedBlackboard& charlie = world.create_shared("charlie");
        Registry registry;
        registry.add_action("Respond", test::running_action());
        registry.add_latent_action("Sleep", [](ActionContext&, const ResumeHandle&) {});
        const Tree tree = TreeBuilder("watcher", registry)
                              .shared_key<bool>("a", "alarm", false)
                              .shared_key<int>("b", "m", 0)
                              .shared_key<Brittle>("b", "thing", Brittle{})
                              .shared_key<int>("b", "after", 0)
                              .shared_key<int>("c", "k", 0)
                              .active_selector()
                                  .sequence().check("a.alarm").action("Respond").back()
                                  .action("Sleep")
                              .back()
                              .end();
        std::vector<AgentHandle> h;
        for (int i = 0; i < 600; ++i)
            h.push_back(world.spawn(tree, {.mode = mode, .shared = {{"a", &alpha}, {"b", &bravo}, {"c", &charlie}}}));
        world.step(10ms);  // frame 0: every agent sleeps in Sleep
        const NodeIndex respond = 3, sleep = 4;
        REQUIRE(world.at(h[0]).status(sleep) == Status::Running);
        alpha.set("alarm", true);
        bravo.set("m", 2);
        bravo.set("thing", Brittle{7});
        bravo.set("after", 3);
        charlie.set("k", 4);
        brittle_copies_refused = true;
        CHECK_THROWS_WITH_AS(world.step(10ms), "brittle copy refused", std::runtime_error);
        brittle_copies_refused = false;
        CHECK(world.frame() == 2);
        // Published: alpha.alarm and bravo.m; not: bravo.thing and bravo.after (after the key that threw),
        // charlie.k (after the blackboard that threw). Their pending values are kept.
        CHECK(alpha.get<bool>("alarm"));
        CHECK(bravo.get<int>("m") == 2);
        CHECK(bravo.get<Brittle>("thing").value == 0);
        CHECK(bravo.get<int>("after") == 0);
        CHECK(charlie.get<int>("k") == 0);
        CHECK(bravo.pending<Brittle>("thing").value == 7);
        CHECK(bravo.pending<int>("after") == 3);
        CHECK(charlie.pending<int>("k") == 4);
        // Every agent's mirrors hold what was published, and no more.
        std::size_t mirrors_right = 0;
        for (const AgentHandle a : h) {
            const Blackboard& bb = world.at(a).blackboard();
            if (bb.get<bool>("a.alarm") && bb.get<int>("b.m") == 2 && bb.get<Brittle>("b.thing").value == 0 &&
                bb.get<int>("b.after") == 0 && bb.get<int>("c.k") == 0)
                ++mirrors_right;
        }
        CHECK(mirrors_right == h.size());
        // No agent was ticked in the thrown frame (the publish comes first): all still sleep.
        CHECK(world.at(h[599]).status(sleep) == Status::Running);
        CHECK(world.at(h[599]).status(respond) == Status::Invalid);
        // The next frame publishes the rest, and every agent (woken by alpha.alarm's change) responds.
        world.step(10ms);
        CHECK(bravo.get<Brittle>("thing").value == 7);
        CHECK(bravo.get<int>("after") == 3);
        CHECK(charlie.get<int>("k") == 4);
        std::size_t responding = 0;
        for (const AgentHandle a : h) {
            const Agent& agent = world.at(a);
            const Blackboard& bb = agent.blackboard();
            if (bb.get<Brittle>("b.thing").value == 7 && bb.get<int>("b.after") == 3 && bb.get<int>("c.k") == 4 &&
                agent.status(respond) == Status::Running && agent.status(sleep) == Status::Aborted)
                ++responding;
        }
        CHECK(responding == h.size());
    }
}

TEST_CASE("world throw: an agent whose tick is refused keeps that frame's time for its next tick, in both modes at 1 and 2 threads") {
    // 600 running agents (enough awake for the phase to run on the threads at 2). Slot 300 was ticked
    // ahead of the world, so its tick in frame 1 is refused and the step throws; in frame 2 it ticks
    // again. No tick happened in frame 1, so the frame's 20 ms are in its next tick's dt: its clock
    // reads the world's time after frame 2, as every other agent's does (an agent a thrown frame did
    // not reach carries the time alike), and the world's state hash after frames 1 and 2 is the one of
    // the run in which nothing threw.
    for (const Mode mode : {Mode::Event, Mode::Polling}) {
        for (const std::uint32_t threads : {1u, 2u}) {
            CAPTURE(to_string(mode));
            CAPTURE(threads);
            const auto run = [&](bool refuse) {
                World world(WorldOptions{.threads = threads});
                const Tree tree = TreeBuilder("runner").action("Run", test::running_action()).end();
                std::vector<AgentHandle> h;
                for (int i = 0; i < 600; ++i) h.push_back(world.spawn(tree, {.mode = mode}));
                world.step(10ms);  // frame 0
                std::vector<std::uint64_t> hashes;
                if (refuse) {
                    // A tick numbered 1 (dt 0) now: the world's tick numbered 1 (frame 1) is refused.
                    detail::EngineAccess::tick_numbered(*world.agent(h[300]), 1, 0ms);
                    CHECK_THROWS_WITH_AS(world.step(20ms), "Agent::tick_numbered(): tick numbers must not go backwards", UsageError);
                } else {
                    world.step(20ms);
                }
                hashes.push_back(world.state_hash());
                world.step(30ms);  // frame 2
                hashes.push_back(world.state_hash());
                std::size_t clocks_right = 0;
                for (const AgentHandle a : h)
                    if (world.at(a).now() == TimePoint{60'000}) ++clocks_right;
                CHECK(world.at(h[300]).now() == TimePoint{60'000});
                CHECK(clocks_right == h.size());
                return hashes;
            };
            const std::vector<std::uint64_t> refused = run(true);
            const std::vector<std::uint64_t> plain = run(false);
            CHECK(refused == plain);
        }
    }
}

namespace {

/// An input observer that keeps what each step that threw told it.
struct ThrowWatcher final : test::SilentInputObserver {
    std::vector<StepThrow> heard;
    int step_ends = 0;
    bool fail_after_publish = false;
    void on_step_end(const FrameMetrics&) override { ++step_ends; }
    void after_publish() override {
        if (std::exchange(fail_after_publish, false)) throw std::runtime_error("observer failed");
    }
    void on_step_threw(const StepThrow& what) override { heard.push_back(what); }
};

}  // namespace

TEST_CASE("world throw: the input observer hears where each step that threw was cut short (StepThrow), in place of on_step_end") {
    ThrowWatcher watcher;
    World world;
    world.set_input_observer(&watcher);
    world.create_shared("first").declare<int>("n");
    SharedBlackboard& second = world.create_shared("second");
    second.declare<int>("m");
    second.declare<Brittle>("thing");
    const Tree running = TreeBuilder("runner").action("Run", test::running_action()).end();
    const Tree fragile = TreeBuilder("fragile").key<Brittle>("load", Brittle{}).action("Run", test::running_action()).end();
    const AgentHandle runner = world.spawn(running);
    world.step(10ms);  // frame 0
    CHECK(watcher.step_ends == 1);
    // Frame 1: the publish of `second` throws at its key `thing`.
    second.set("thing", Brittle{3});
    brittle_copies_refused = true;
    CHECK_THROWS_WITH_AS(world.step(10ms), "brittle copy refused", std::runtime_error);
    brittle_copies_refused = false;
    // Frame 2: a spawn of the frame (from a change slot of the publish) cannot join: a Brittle to copy.
    AgentHandle refused, joined;
    const auto connection = second.changes().connect([&](const SharedBlackboard&, KeyId) {
        if (refused != AgentHandle{}) return;
        refused = world.spawn(fragile);
        joined = world.spawn(running);
        brittle_copies_refused = true;
    });
    CHECK_THROWS_WITH_AS(world.step(10ms), "brittle copy refused", std::runtime_error);
    brittle_copies_refused = false;
    // Frame 3: the runner's tick is refused (ticked ahead of the world).
    detail::EngineAccess::tick_numbered(*world.agent(runner), 3, 0ms);
    CHECK_THROWS_WITH_AS(world.step(10ms), "Agent::tick_numbered(): tick numbers must not go backwards", UsageError);
    // Frame 4: the observer itself throws after the publish.
    watcher.fail_after_publish = true;
    CHECK_THROWS_WITH_AS(world.step(10ms), "observer failed", std::runtime_error);
    world.step(10ms);  // frame 5
    CHECK(watcher.step_ends == 2);
    REQUIRE(watcher.heard.size() == 4);
    CHECK(watcher.heard[0].stage == StepThrow::Stage::Publish);
    CHECK(watcher.heard[0].shared == 1);
    CHECK(watcher.heard[0].message == "brittle copy refused");
    CHECK(watcher.heard[0].joins_refused.empty());
    CHECK(watcher.heard[1].stage == StepThrow::Stage::Join);
    CHECK(watcher.heard[1].message == "brittle copy refused");
    CHECK(watcher.heard[1].joins_refused == std::vector<AgentHandle>{refused});
    CHECK_FALSE(world.alive(refused));
    CHECK(world.alive(joined));
    CHECK(watcher.heard[2].stage == StepThrow::Stage::Tick);
    CHECK(watcher.heard[2].message == "Agent::tick_numbered(): tick numbers must not go backwards");
    CHECK(watcher.heard[3].stage == StepThrow::Stage::Other);
    CHECK(watcher.heard[3].message == "observer failed");
    world.set_input_observer(nullptr);
}
